"""What the kernels a layer runs look like in SASS, with no GPU: registers,
spills, and instruction mix of each kernel and of its hottest loop.

    python tools/sass_report.py [--preset gpt-oss-120b] [--tokens 1,8,64,512]
                                [--gemm wgmma|mma|fma] [--ops]

Compiles every LaunchKey the calls reach (Numba -> PTX), assembles it with the
local ptxas for sm_90 (sm_90a for the wgmma kernels) and disassembles the cubin with cuobjdump (pip:
nvidia-cuda-nvcc, nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm).  Per kernel: registers, spill bytes,
the static instruction count and mix; and the hottest loop (the innermost
backward branch whose body holds the most HMMA / FFMA): its length and mix.
Static counts, not a profile: they show what one trip of the inner loop issues.
Classes: mma (HMMA, HGMMA), fma (FFMA/FMUL/FADD/HFMA2/HMUL2), ldg (global loads, by
width), lds/sts (shared), int (IMAD/IADD3/ISETP/SEL/LEA/SHF/LOP3/MOV/IABS...:
address and index arithmetic), prmt, other.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

INT_OPS = {"IMAD", "IADD3", "ISETP", "SEL", "LEA", "SHF", "LOP3", "MOV", "IABS", "IMNMX",
           "ISCADD", "SGXT", "IADD", "SHL", "SHR", "BMSK", "FLO", "POPC", "I2F", "F2I",
           "IMUL", "UIADD3", "UMOV", "ULDC", "UIMAD", "USHF", "ULEA", "ULOP3", "USEL",
           "UISETP", "S2R", "S2UR", "CS2R", "PLOP3", "P2R", "R2P", "VIADD", "VIMNMX"}
FMA_OPS = {"FFMA", "FMUL", "FADD", "HFMA2", "HMUL2", "HADD2", "FMNMX", "FSETP", "FSEL"}


def _tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    import site
    for base in site.getsitepackages() + [site.getusersitepackages()]:
        hits = sorted(glob.glob(os.path.join(base, "nvidia", "*", "bin", name)))
        if hits:
            return hits[-1]
    return None


def assemble(ptx: str, arch: str = "sm_90") -> tuple[str, str]:
    """(ptxas -v log, SASS text) of one PTX module."""
    ptxas, objdump = _tool("ptxas"), _tool("cuobjdump")
    if not ptxas or not objdump:
        raise SystemExit("needs ptxas and cuobjdump (pip install nvidia-cuda-nvcc "
                         "nvidia-cuda-cuobjdump)")
    ver = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+)\.(\d+)", ver)
    isa = f"{int(m.group(1)) - 4}.{m.group(2)}"
    ptx = re.sub(r"^\.version .*$", f".version {isa}", ptx, count=1, flags=re.M)
    with tempfile.TemporaryDirectory() as d:
        src, cub = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as fh:
            fh.write(ptx)
        r = subprocess.run([ptxas, f"-arch={arch}", "-v", src, "-o", cub],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr[-2000:])
        env = dict(os.environ, PATH=os.path.dirname(objdump) + os.pathsep
                   + os.environ.get("PATH", ""))           # cuobjdump runs nvdisasm
        d2 = subprocess.run([objdump, "-sass", cub], capture_output=True, text=True, env=env)
        if d2.returncode or "code for sm_" not in d2.stdout:
            raise RuntimeError(f"cuobjdump: {d2.stderr[-500:]} (pip install "
                               "nvidia-cuda-nvdisasm)")
    return r.stderr, d2.stdout


_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)([.\w]*)\s*(.*?);")


def instructions(sass: str) -> list[tuple[int, str, str, str]]:
    """[(address, opcode, modifiers, operands)]."""
    out = []
    for m in _LINE.finditer(sass):
        out.append((int(m.group(1), 16), m.group(3), m.group(4), m.group(5)))
    return out


def classify(op: str, mods: str) -> str:
    if op in ("HMMA", "HGMMA"):
        return "mma"
    if op in FMA_OPS:
        return "fma"
    if op == "LDG":
        w = re.search(r"\.(128|64|U8|S8|U16|S16)", mods)
        return f"ldg.{w.group(1) if w else '32'}"
    if op in ("LDS", "LDSM"):
        return "lds"
    if op == "STS":
        return "sts"
    if op == "STG":
        return "stg"
    if op == "PRMT":
        return "prmt"
    if op in INT_OPS:
        return "int"
    return "other"


def mma_work(op: str, mods: str) -> int:
    """A tensor-core instruction's work in units of an n8 step: HGMMA.64xNx16 N /
    8 (the wide loop's n144 copy does more than its n64 twin for the same
    count), HMMA 1; 0 for anything else."""
    if op == "HGMMA":
        m = re.match(r"\.\d+x(\d+)x", mods)
        return int(m.group(1)) // 8 if m else 1
    return 1 if op == "HMMA" else 0


def hottest_loop(ins) -> tuple[int, int] | None:
    """(start, end) addresses of the hottest backward-branch loop: the one with the
    most tensor-core work per instruction (mma_work) when any loop has HMMA /
    HGMMA, which is the innermost tensor-core loop (and of the wide loop's
    n64 / n144 copies the n144 one, which full blocks run); else the one with
    the most FFMA, then the tightest.  None for straight-line code."""
    cands = []
    for addr, op, _mods, operands in ins:
        if op != "BRA":
            continue
        t = re.search(r"0x([0-9a-f]+)", operands)
        if not t or int(t.group(1), 16) >= addr:
            continue
        target = int(t.group(1), 16)
        body = [i for i in ins if target <= i[0] <= addr]
        mma = sum(mma_work(i[1], i[2]) for i in body)
        fma = sum(1 for i in body if i[1] == "FFMA")
        cands.append(((target, addr), mma, fma, len(body)))
    if not cands:
        return None
    if any(c[1] for c in cands):
        return max((c for c in cands if c[1]), key=lambda c: (c[1] / c[3], -c[3]))[0]
    return max(cands, key=lambda c: (c[2], -c[3]))[0]


def report(ptx: str) -> dict:
    log, sass = assemble(ptx, "sm_90a" if re.search(r"^\.target\s+sm_90a", ptx, re.M)
                         else "sm_90")
    regs = re.search(r"Used (\d+) registers", log)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    stack = re.search(r"(\d+) bytes stack frame", log)
    ins = instructions(sass)
    mix = Counter(classify(op, mods) for _, op, mods, _ in ins)
    loop = hottest_loop(ins)
    body = [i for i in ins if loop and loop[0] <= i[0] <= loop[1]]
    return dict(regs=int(regs.group(1)) if regs else -1,
                spill=int(spill.group(1)) + int(spill.group(2)) if spill else 0,
                stack=int(stack.group(1)) if stack else 0, total=len(ins), mix=mix,
                loop_len=len(body), loop_mix=Counter(classify(o, m) for _, o, m, _ in body),
                loop_ops=Counter(o for _, o, _, _ in body), loop_body=body)


def _fmt(mix: Counter) -> str:
    keys = ("mma", "fma", "ldg.128", "ldg.64", "ldg.32", "ldg.U8", "lds", "sts", "prmt", "int",
            "other")
    return " ".join(f"{k}={mix[k]}" for k in keys if mix.get(k))


def layer_keys(preset: str, tokens, gemm: str = "wgmma", format: str = "mxfp4",
               dtype: str = "bfloat16") -> list:
    """[(T, LaunchKey)]: the distinct kernels a preset's layer (``format``,
    ``dtype``, the preset's activation and biases) launches at each T of
    ``tokens``."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import pymoe
    from pymoe import geometry as geo
    from pymoe.presets import PRESETS
    pr = PRESETS[preset]
    alpha, limit = geo.swiglu_params(pr.activation)
    caps = pymoe.Caps(max_tokens=1, top_k=pr.top_k, num_experts=pr.num_experts,
                      hidden_size=pr.hidden_size, intermediate_size=pr.intermediate_size,
                      activation=pr.activation, w13_layout=pr.w13_layout, has_bias=pr.bias,
                      swiglu_alpha=alpha, swiglu_limit=limit, format=format, dtype=dtype)
    keys = []
    for t in tokens:
        reg = geo.regime_for(t, caps.top_k, caps.decode_cut)
        b = caps.block_size_for(t) if reg == "packed" else None
        for k in geo.launch_keys(reg, b, gemm=gemm, format=caps.format,
                                 activation=caps.activation, dtype=caps.dtype,
                                 hidden_size=caps.hidden_size,
                                 intermediate_size=caps.intermediate_size,
                                 has_bias=caps.has_bias, router_on_input=False,
                                 swiglu_limit=limit, swiglu_alpha=alpha,
                                 num_experts=caps.num_experts, num_routes=t * caps.top_k):
            if k is not None and k not in [kk for _, kk in keys]:
                keys.append((t, k))
    return keys


def _save(where, t, k, ptx) -> None:
    if where:
        os.makedirs(where, exist_ok=True)
        with open(os.path.join(where, f"{t}_{k.kernel}_{k.block or 0}.ptx"), "w") as fh:
            fh.write(ptx)


def func_attrs(fn) -> tuple[int, int]:
    """(registers, local bytes a thread) of a loaded CuPy function, from the driver."""
    from cupy.cuda import driver as drv
    return (drv.funcGetAttribute(drv.CU_FUNC_ATTRIBUTE_NUM_REGS, fn.ptr),
            drv.funcGetAttribute(drv.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn.ptr))


def device_report(preset: str, keys, save) -> int:
    """Each kernel compiled on this machine (Numba -> PTX for its GPU) and loaded
    by the driver, which assembles it: registers, local (spill) bytes, and how many
    CTAs of its size fit an SM by registers alone."""
    import cupy as cp
    from pymoe.cuda import launch
    cc = launch._device_cc()
    regs_sm = cp.cuda.Device().attributes.get("MaxRegistersPerMultiprocessor", 65536)
    print(f"{preset}: driver-assembled for sm_{cc[0]}{cc[1]}")
    print(f"{'T':>4} {'kernel':11} {'B':>3} {'regs':>4} {'local':>5} {'threads':>7} "
          f"{'CTAs/SM(regs)':>13}")
    for t, k in keys:
        ptx, entry = launch.compile_ptx(k, cc)
        _save(save, t, k, ptx)
        mod = cp.cuda.function.Module()
        mod.load(ptx.encode())
        fn = mod.get_function(entry)
        thr = launch.builder(k.kernel)(k).threads
        regs, local = func_attrs(fn)
        per_warp = -(-regs * 32 // 256) * 256             # allocation unit 256
        fit = regs_sm // (per_warp * (thr // 32))
        print(f"{t:>4} {k.kernel:11} {k.block or '-':>3} {regs:>4} {local:>5} {thr:>7} "
              f"{fit:>13}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="gpt-oss-120b")
    ap.add_argument("--tokens", default="1,8,64,512")
    ap.add_argument("--gemm", choices=["mma", "wgmma", "fma"], default="wgmma",
                    help="the packed block GEMM (default wgmma: PYMOE_GEMM=auto on sm_90)")
    ap.add_argument("--format", choices=["mxfp4", "nvfp4"], default="mxfp4")
    ap.add_argument("--dtype", choices=["bfloat16", "float16"], default="bfloat16")
    ap.add_argument("--ops", action="store_true",
                    help="also print each hottest loop's opcode histogram")
    ap.add_argument("--dump", metavar="KERNEL", default=None,
                    help="also print the hottest loop's SASS of this kernel (e.g. fc1)")
    ap.add_argument("--device", action="store_true",
                    help="on a GPU: the registers, local memory and CTAs an SM of what "
                         "the driver makes of the PTX compiled here (no ptxas needed)")
    ap.add_argument("--save", metavar="DIR", default=None,
                    help="also write each kernel's PTX there (T_kernel_B.ptx)")
    a = ap.parse_args(argv)
    keys = layer_keys(a.preset, (int(v) for v in a.tokens.split(",")), a.gemm, a.format,
                      a.dtype)
    from pymoe.cuda import launch
    if a.device:
        return device_report(a.preset, keys, a.save)
    print(f"{a.preset}: {a.format} / {a.dtype}, {a.gemm} GEMM, "
          f"sm_90{'a' if a.gemm == 'wgmma' else ''}, static SASS counts")
    print(f"{'T':>4} {'kernel':11} {'B':>3} {'regs':>4} {'spill':>5} {'instr':>6}  "
          f"{'loop':>5}  hottest loop mix / whole-kernel mix")
    for t, k in keys:
        ptx, _ = launch.compile_ptx(k, (9, 0))
        _save(a.save, t, k, ptx)
        r = report(ptx)
        print(f"{t:>4} {k.kernel:11} {k.block or '-':>3} {r['regs']:>4} {r['spill']:>5} "
              f"{r['total']:>6}  {r['loop_len']:>5}  {_fmt(r['loop_mix'])}")
        print(f"{'':>44}kernel: {_fmt(r['mix'])}")
        if a.ops:
            print(f"{'':>44}loop ops: " + " ".join(f"{o}={n}" for o, n in
                                                      r["loop_ops"].most_common()))
        if a.dump == k.kernel:
            for addr, op, mods, operands in r["loop_body"]:
                print(f"  {addr:06x} {op}{mods} {operands}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
