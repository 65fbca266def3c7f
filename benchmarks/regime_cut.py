"""Where the direct decode regime stops paying: decode vs packed for small T, side
by side in one process, through `pymoe bench` (CUDA-graph replays, L2 flushed,
medians) with the cut pinned by Caps.decode_max_tokens: every T decode (the pin
at the route cap) against every T packed (the pin at 0).  The packed block GEMM
is what PYMOE_GEMM selects (auto: wgmma on sm_90).

    python benchmarks/regime_cut.py [--preset gpt-oss-120b,qwen3-30b-a3b]
                                    [--tokens 1,2,4,8,16,32,64] [--repeats 30]

The geometry module's DECODE_MAX_TOKENS comment holds the table that chose the cut.
Without a GPU it runs the NumPy reference (slow; use tiny presets).
"""
from __future__ import annotations

import argparse

from pymoe import bench, geometry
from pymoe.presets import PRESETS


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="gpt-oss-120b,qwen3-30b-a3b")
    ap.add_argument("--tokens", default="1,2,4,8,16,32,64")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--format", default="mxfp4")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--backend", default="auto")
    a = ap.parse_args(argv)
    presets = a.preset.split(",")
    tokens = [int(t) for t in a.tokens.split(",")]
    res = {}
    for p in presets:
        cap = geometry.decode_route_limit(PRESETS[p].top_k)
        toks = [t for t in tokens if t <= cap]
        for name, cut in (("decode", cap), ("packed", 0)):
            rows, _ = bench.bench([p], toks, backend=a.backend, fmt=a.format,
                                  dtype=a.dtype, modes=("graph",), repeats=a.repeats,
                                  rotate=2, progress=False, decode_max_tokens=cut)
            for r in rows:
                assert r.regime == name and r.ok, r
                res[(p, r.T, name)] = r.us
    print(f"{'preset':16} {'T':>4} {'decode us':>10} {'packed us':>10} {'packed/decode':>13}")
    for p in presets:
        for t in tokens:
            if (p, t, "decode") in res:
                d, k = res[(p, t, "decode")], res[(p, t, "packed")]
                print(f"{p:16} {t:>4} {d:>10.1f} {k:>10.1f} {k / d:>13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
