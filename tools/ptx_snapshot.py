"""PTX snapshots: prove a refactor of kernel code changes no generated code,
on a machine without a GPU (Numba compiles to PTX with no device).

    python tools/ptx_snapshot.py dump DIR       # every kernel variant, both GEMMs
    python tools/ptx_snapshot.py compare A B    # differences after normalising
                                                # symbol names (see _norm)
Exit status 1 when a kernel's PTX differs.
"""
from __future__ import annotations

import os
import re
import sys


def dump(out: str) -> int:
    from pymoe.cuda import launch
    from pymoe.geometry import dequant_launch_key, launch_keys
    os.makedirs(out, exist_ok=True)
    n = 0
    for gemm in ("mma", "fma"):
        for fmt in ("mxfp4", "nvfp4"):
            for dt in ("bfloat16", "float16"):
                for act, bias, on_input, lim, hi in (("swigluoai", True, False, 7.0, (2880, 2880)),
                                                     ("relu2", False, True, None, (40, 72)),
                                                     ("silu", False, False, None, (256, 144))):
                    for reg, b in (("packed", 8), ("packed", 64), ("decode", None)):
                        if reg == "decode" and gemm == "fma":
                            continue                     # decode does not use the GEMM
                        keys = launch_keys(reg, b, format=fmt, activation=act, dtype=dt,
                                           hidden_size=hi[0], intermediate_size=hi[1],
                                           has_bias=bias, router_on_input=on_input,
                                           swiglu_limit=lim,
                                           swiglu_alpha=1.702 if act == "swigluoai" else None,
                                           gemm=gemm)
                        if gemm == "mma" and reg == "decode" and act == "silu":
                            keys += tuple(dequant_launch_key(w, format=fmt, activation=act,
                                                             hidden_size=hi[0],
                                                             intermediate_size=hi[1])
                                          for w in ("w13", "w2"))
                        for k in keys:
                            ptx, _ = launch.compile_ptx(k, (9, 0))
                            name = f"{gemm}_{fmt}_{dt}_{act}_{reg}_{b}_{k.kernel}.ptx"
                            with open(os.path.join(out, name), "w") as fh:
                                fh.write(ptx)
                            n += 1
    print(f"{n} kernels -> {out}")
    return 0


def _norm(ptx: str) -> str:
    """PTX with its symbol names made positional: Numba's mangled names carry the
    defining module's path and a per-process counter (B<n>v<n>B), so moving a
    kernel between modules renames it without changing one instruction.  Every
    mangled name becomes SYM<i>, i = order of first appearance; comments go."""
    ptx = re.sub(r"//[^\n]*", "", ptx)
    names: dict = {}

    def sym(m):
        return names.setdefault(m.group(0), f"SYM{len(names)}")
    return re.sub(r"_Z[\w$]+", sym, ptx)


def compare(a: str, b: str) -> int:
    names = sorted(set(os.listdir(a)) | set(os.listdir(b)))
    bad = []
    for f in names:
        pa, pb = os.path.join(a, f), os.path.join(b, f)
        if not (os.path.exists(pa) and os.path.exists(pb)):
            bad.append(f + " (missing on one side)")
        elif _norm(open(pa).read()) != _norm(open(pb).read()):
            bad.append(f)
    print(f"{len(names) - len(bad)} of {len(names)} kernels identical")
    for f in bad:
        print("DIFFERS", f)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        sys.exit(dump(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
