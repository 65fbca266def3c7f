"""Where the direct decode regime stops paying: decode vs packed (tensor-core
GEMM) for small T, side by side, on the gpt-oss-20b and qwen3-30b-a3b shapes.
The packed timings force the packed regime by planning with
geometry.DECODE_MAX_TOKENS = 0.  Medians of CUDA-event timed runs after warm-up.

    python benchmarks/regime_cut.py
"""
from __future__ import annotations

import cupy as cp
import numpy as np

import pymoe
from pymoe import geometry
from pymoe.__main__ import random_layer
from pymoe.presets import PRESETS

from bench_moe import time_ms


def main():
    rows = []
    cut = geometry.DECODE_MAX_TOKENS
    for preset in ("gpt-oss-20b", "qwen3-30b-a3b"):
        pr = PRESETS[preset]
        ew = pymoe.cuda.to_device(random_layer(pr, "mxfp4"))
        rng = np.random.default_rng(2)
        for t in (1, 2, 3, 4, 6, 8, 12, 16):
            x = cp.asarray((rng.standard_normal((t, pr.hidden_size)).astype(np.float32)
                            .view(np.uint32) >> 16).astype(np.uint16))
            w, ids = pymoe.route_topk(rng.standard_normal((t, pr.num_experts)), pr.top_k)
            w, ids = cp.asarray(w), cp.asarray(ids)
            res = {}
            for name, limit in (("decode", 16), ("packed", 0)):
                geometry.DECODE_MAX_TOKENS = limit
                try:
                    caps = pymoe.Caps.for_weights(ew, max_tokens=16, top_k=pr.top_k)
                    plan = pymoe.plan(caps)
                    out = cp.empty_like(x)
                    b = plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), x=x, experts=ew,
                                  topk_weights=w, topk_ids=ids, out=out)
                    assert b.regime == name
                    res[name] = time_ms(lambda: pymoe.run(b), 50)
                finally:
                    geometry.DECODE_MAX_TOKENS = cut
            rows.append((preset, t, res["decode"], res["packed"]))
    print(f"{'preset':14} {'T':>3} {'decode ms':>10} {'packed ms':>10} {'packed/decode':>13}")
    for p, t, d, k in rows:
        print(f"{p:14} {t:>3} {d:>10.3f} {k:>10.3f} {k / d:>13.2f}")


if __name__ == "__main__":
    main()
