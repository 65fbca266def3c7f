"""Host cost of an eager pymoe.run() for a decode call (T=1, k=4, gpt-oss-20b shape).

Median host time per call over many calls, GPU kept busy-free (the kernels of a
T=1 call take a few us, so the host dominates).  Prints a table, writes CSV.

    python benchmarks/host_overhead.py [--calls 2000] [--csv host_overhead.csv]
"""
from __future__ import annotations

import argparse
import csv
import statistics
import time

import cupy as cp
import numpy as np

import pymoe
from pymoe.presets import PRESETS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--csv", default="host_overhead.csv")
    a = ap.parse_args()
    from pymoe.__main__ import random_layer
    pr = PRESETS["gpt-oss-20b"]
    ew = pymoe.cuda.to_device(random_layer(pr, "mxfp4"))
    caps = pymoe.Caps.for_weights(ew, max_tokens=64, top_k=4)
    plan = pymoe.plan(caps)
    pymoe.cuda.prewarm(plan, progress=False)
    scratch = pymoe.cuda.allocate_scratch(plan)
    rng = np.random.default_rng(0)
    x = cp.asarray((rng.standard_normal((1, pr.hidden_size)).astype(np.float32)
                    .view(np.uint32) >> 16).astype(np.uint16))
    w, ids = pymoe.route_topk(rng.standard_normal((1, pr.num_experts)), 4)
    w, ids = cp.asarray(w), cp.asarray(ids)
    out = cp.empty_like(x)
    s = cp.cuda.Stream(non_blocking=True)
    rows = []

    def measure(name, fn):
        for _ in range(50):
            fn()
        s.synchronize()
        ts = []
        for _ in range(a.calls):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
            if len(ts) % 64 == 0:
                s.synchronize()          # keep the launch queue from filling up
        s.synchronize()
        rows.append((name, statistics.median(ts) * 1e6, np.percentile(ts, 90) * 1e6))

    b = plan.bind(scratch=scratch, x=x, experts=ew, topk_weights=w, topk_ids=ids, out=out)
    measure("run(binding) (bound once)", lambda: pymoe.run(b, stream=s))
    measure("bind + run", lambda: pymoe.run(plan.bind(
        scratch=scratch, x=x, experts=ew, topk_weights=w, topk_ids=ids, out=out), stream=s))
    measure("fused_moe (plan cached, alloc)", lambda: pymoe.fused_moe(
        x, ew, w, ids, backend="cuda", stream=s))
    with open(a.csv, "w", newline="") as fh:
        csv.writer(fh).writerows([("what", "median_us", "p90_us"), *rows])
    print(f"{'host time per decode call (T=1, k=4, H=I=2880)':44} {'median us':>10} {'p90 us':>8}")
    for name, med, p90 in rows:
        print(f"{name:44} {med:>10.1f} {p90:>8.1f}")


if __name__ == "__main__":
    main()
