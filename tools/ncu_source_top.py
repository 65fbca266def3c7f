"""Summarize ncu's source page (``ncu --import R --page source --print-source sass
--csv``): the instructions with the most warp-state samples (with their stall
columns that have any samples), the samples summed by opcode, and by region: each
loop (a backward branch and its target; an instruction counts in the innermost
loop holding it) and the code outside loops, with its tensor-core instructions
and its share of the executed instructions (a k-loop against an epilogue loop);
with SourceCounters' memory columns, the global L2 sectors by opcode and the
instructions that move the most (sectors per executed instruction: 16 is a
warp's 512 aligned bytes).

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
    addr = _col(cols, "address") or cols[0]
    total = _col(cols, "sampling", "all") or _col(cols, "sampl")
    if total is None:
        print(f"{path}: no sampling column among {cols}")
        return 1
    reasons = [c for c in cols if c.lower().startswith("stall") or "stall_" in c.lower()]
    s_all = sum(_num(r[total]) for r in rows)
    print(f"{len(rows)} instructions, {s_all:.0f} samples ({total})")
    ops = Counter()
    for r in rows:
        ops[_opcode(r[src])] += _num(r[total])
    print("samples by opcode: " + " ".join(f"{o}={n / s_all:.1%}" for o, n in ops.most_common(16)))
    execd = next((c for c in cols if c.strip() == "Instructions Executed"), None)
    _regions(rows, src, addr, total, s_all, execd)
    print(f"top {top} instructions:")
    for r in sorted(rows, key=lambda r: -_num(r[total]))[:top]:
        why = " ".join(f"{c}={r[c]}" for c in reasons if _num(r[c]) > 0)
        print(f"  {r[addr]:>8} {_num(r[total]) / s_all:6.1%}  {r[src].strip()[:60]:60}  {why[:120]}")
    _memory(rows, src, addr, execd, top)
    return 0


def _opcode(sass: str) -> str:
    """The opcode of one SASS line, past its predicate ("?" if none)."""
    m = re.match(r"\s*(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", sass)
    return m.group(2) if m else "?"


def _col(cols, *words, without=()):
    """The first column whose lower-cased name holds every word and none of
    ``without``, or None."""
    for c in cols:
        low = c.lower()
        if all(w in low for w in words) and not any(w in low for w in without):
            return c
    return None


def _memory(rows, src, addr, execd, top) -> None:
    """The global-memory L2 sectors of SourceCounters (ncu's theoretical
    sectors, from each instruction's addresses): the total and its excess over
    the ideal, by opcode, and the instructions that move the most, with the
    sectors per executed (warp-level) instruction: a warp's 512 aligned bytes
    are 16, so more than that on a copy means split or scattered sectors."""
    cols = list(rows[0])
    l2 = _col(cols, "l2", "sectors", "global", without=("excessive", "ideal"))
    if l2 is None:
        return
    exc = _col(cols, "l2", "sectors", "global", "excessive")
    ideal = _col(cols, "l2", "sectors", "global", "ideal")
    t = sum(_num(r[l2]) for r in rows)
    if t == 0:
        return
    e = sum(_num(r[exc]) for r in rows) if exc else 0.0
    i = sum(_num(r[ideal]) for r in rows) if ideal else 0.0
    extra = (f", excessive {e:.0f} ({e / t:.1%})" if exc else "") + \
            (f", ideal {i:.0f}" if ideal else "")
    print(f"L2 sectors, global ({l2}): {t:.0f}{extra}")
    ops = Counter()
    for r in rows:
        ops[_opcode(r[src])] += _num(r[l2])
    print("L2 sectors by opcode: " + " ".join(f"{o}={n / t:.1%}" for o, n in ops.most_common(8)
                                              if n > 0))
    print(f"top {top} instructions by L2 sectors (sectors, excessive, per executed):")
    for r in sorted(rows, key=lambda r: -_num(r[l2]))[:top]:
        n = _num(r[l2])
        if n == 0:
            break
        per = f"{n / _num(r[execd]):6.1f}" if execd and _num(r[execd]) else "     -"
        ex = f"{_num(r[exc]):12.0f}" if exc else ""
        print(f"  {r[addr]:>8} {n:12.0f}{ex} {per}  {r[src].strip()[:60]}")


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
