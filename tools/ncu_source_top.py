"""Summarize ncu's source page (``ncu --import R --page source --print-source sass
--csv``): the instructions with the most warp-state samples (with their stall
columns that have any samples), the samples summed by opcode, and by region: each
loop (a backward branch and its target; an instruction counts in the innermost
loop holding it) and the code outside loops, with its tensor-core instructions
and its share of the executed instructions (a k-loop against an epilogue loop).

    python3 tools/ncu_source_top.py REPORT.csv [TOP=30]
"""
from __future__ import annotations

import csv
import re
import sys
from collections import Counter


def _num(v: str) -> float:
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return 0.0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path, top = argv[0], int(argv[1]) if len(argv) > 1 else 30
    with open(path, newline="") as f:
        lines = f.readlines()
    # ncu's banner, then one "Kernel Name" line per kernel, then the header row
    head = next((i for i, ln in enumerate(lines) if ln.startswith('"Address"')), None)
    if head is None:
        head = next((i for i, ln in enumerate(lines) if ln.count(",") >= 2), len(lines))
    names = [m.group(1) for ln in lines[:head]
             for m in [re.search(r"kernels::(\w+)::", ln)] if m]
    if names:
        print(f"kernel: {names[0]}")
    lines = lines[head:]
    rows = list(csv.DictReader(lines))
    if not rows:
        print(f"{path}: no rows (see the .err file next to it)")
        return 1
    cols = list(rows[0])
    src = next((c for c in cols if c.strip().lower() in ("source", "sass")), cols[1])
    addr = next((c for c in cols if "address" in c.lower()), cols[0])
    total = next((c for c in cols if "sampling" in c.lower() and "all" in c.lower()),
                 next((c for c in cols if "sampl" in c.lower()), None))
    if total is None:
        print(f"{path}: no sampling column among {cols}")
        return 1
    reasons = [c for c in cols if c.lower().startswith("stall") or "stall_" in c.lower()]
    s_all = sum(_num(r[total]) for r in rows)
    print(f"{len(rows)} instructions, {s_all:.0f} samples ({total})")
    ops = Counter()
    for r in rows:
        m = re.match(r"\s*(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", r[src])
        ops[m.group(2) if m else "?"] += _num(r[total])
    print("samples by opcode: " + " ".join(f"{o}={n / s_all:.1%}" for o, n in ops.most_common(16)))
    execd = next((c for c in cols if c.strip() == "Instructions Executed"), None)
    _regions(rows, src, addr, total, s_all, execd)
    print(f"top {top} instructions:")
    for r in sorted(rows, key=lambda r: -_num(r[total]))[:top]:
        why = " ".join(f"{c}={r[c]}" for c in reasons if _num(r[c]) > 0)
        print(f"  {r[addr]:>8} {_num(r[total]) / s_all:6.1%}  {r[src].strip()[:60]:60}  {why[:120]}")
    return 0


def _regions(rows, src, addr, total, s_all, execd) -> None:
    """Print the samples (and executed instructions) by loop and outside loops."""
    at = [int(r[addr], 16) for r in rows]
    loops = []
    for a, r in zip(at, rows):
        m = re.search(r"\bBRA\s+(0x[0-9a-fA-F]+)", r[src])
        if m and int(m.group(1), 16) < a:
            loops.append((int(m.group(1), 16), a))
    e_all = sum(_num(r[execd]) for r in rows) if execd else 0.0
    acc: dict = {}
    for a, r in zip(at, rows):
        inner = min((lp for lp in loops if lp[0] <= a <= lp[1]),
                    key=lambda lp: lp[1] - lp[0], default=None)
        st = acc.setdefault(inner, [0, 0, 0.0, 0.0])
        st[0] += 1
        st[1] += bool(re.search(r"\b[HI]GMMA|\bHMMA", r[src]))
        st[2] += _num(r[total])
        st[3] += _num(r[execd]) if execd else 0.0
    print("samples by region (loops by backward branch):")
    for lp, (n, mm, smp, ex) in sorted(acc.items(), key=lambda kv: -kv[1][2]):
        name = f"loop {lp[0]:#x}-{lp[1]:#x}" if lp else "outside loops"
        share = f", {ex / e_all:.1%} of executed" if e_all else ""
        print(f"  {name:28} {n:5d} instr {mm:3d} mma: {smp / s_all:6.1%} of samples{share}")


if __name__ == "__main__":
    sys.exit(main())
