"""Where each packed block size stops paying: every T timed at each pinned block of
routes (Caps.block_size_m), side by side in one process, through `pymoe bench`'s
timing (CUDA-graph replays, L2 flushed, medians; every T packed, the decode cut
pinned at 0).  One random layer a preset, uploaded once a block.

    python benchmarks/block_cut.py [--preset qwen3-30b-a3b,gpt-oss-120b]
        [--sweep "8:32,64,128 16:64,128,256 32:128,256,512 64:512,1024 128:1024"]
        [--repeats 30]

--sweep gives each block's token counts (the same for every preset; a T is
timed only at the blocks that list it).  The table prints the mean routes an
expert, ceil(T * k / E), the time at each block, the block geometry.BLOCK_MAX_MEAN
picks today and the fastest.  The geometry module's BLOCK_MAX_MEAN comment holds
the table that chose the cuts.  Without a GPU it runs the NumPy reference (slow;
use tiny presets).
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from pymoe import bench, geometry
from pymoe.presets import PRESETS


def parse_sweep(text: str) -> dict[int, list[int]]:
    """"B:T,T B:T ..." -> {B: [T, ...]}, B in geometry.BLOCK_SIZES."""
    out: dict[int, list[int]] = {}
    for part in text.split():
        b, _, ts = part.partition(":")
        if int(b) not in geometry.BLOCK_SIZES or not ts:
            raise SystemExit(f"--sweep: {part!r} is not B:T,T.. with B in "
                             f"{geometry.BLOCK_SIZES}")
        out[int(b)] = sorted({int(t) for t in ts.split(",")})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="qwen3-30b-a3b,gpt-oss-120b")
    ap.add_argument("--sweep", default="8:32,64,128 16:64,128,256 32:128,256,512 "
                                       "64:512,1024 128:1024")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rotate", type=int, default=2)
    ap.add_argument("--format", default="mxfp4")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--backend", default="auto")
    a = ap.parse_args(argv)
    sweep = parse_sweep(a.sweep)
    backend = a.backend
    if backend == "auto":
        from pymoe import cuda
        backend = "cuda" if cuda.is_available() else "ref"
    bw = bench.device_copy_bandwidth() if backend == "cuda" else bench.host_copy_bandwidth()
    rng = np.random.default_rng(1)
    res: dict[tuple[str, int, int], float] = {}
    for p in a.preset.split(","):
        pr = PRESETS[p]
        ew = bench.random_layer(pr, a.format, 0, None)
        for b, toks in sweep.items():
            if backend == "cuda":
                rows = bench._bench_cuda(pr, toks, ew, a.dtype, a.repeats, rng, bw,
                                         ("graph",), a.rotate, False, block_size=b,
                                         decode_max_tokens=0)
            else:
                rows = bench._bench_ref(pr, toks, ew, a.dtype, a.repeats, rng, bw,
                                        block_size=b, decode_max_tokens=0)
            for r in rows:
                if not r.ok:
                    raise SystemExit(f"{p} T={r.T} block {b}: reference check failed "
                                     f"(rel. L2 {r.check_rel_l2:.2e})")
                res[(p, r.T, b)] = r.us
                print(f"{p} T={r.T} block {b}: {r.us:.1f} us", flush=True)
        del ew
    blocks = sorted(sweep)
    print(f"{'preset':16} {'T':>5} {'mean':>5} " + " ".join(f"{'b' + str(b):>8}" for b in blocks)
          + f" {'auto':>5} {'best':>5}")
    for p in a.preset.split(","):
        pr = PRESETS[p]
        for t in sorted({t for (q, t, _) in res if q == p}):
            got = {b: res[(p, t, b)] for b in blocks if (p, t, b) in res}
            mean = math.ceil(t * pr.top_k / pr.num_experts)
            auto = geometry.select_block_size(t, pr.top_k, pr.num_experts)
            print(f"{p:16} {t:>5} {mean:>5} "
                  + " ".join(f"{got[b]:>8.1f}" if b in got else f"{'-':>8}" for b in blocks)
                  + f" {auto:>5} {min(got, key=got.get):>5}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
