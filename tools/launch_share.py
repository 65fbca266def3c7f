"""What one kernel of the forward costs inside the timed call: `pymoe bench`
with some launches left out after the checked first call (a measurement, not a
result: the output of a forward with a launch left out is wrong, and the bench's
check ran before).

    python tools/launch_share.py --drop combine -- --preset qwen3-30b-a3b --tokens 1,8

--drop takes kernel names of the forward: route_pack (packed regime only), fc1,
fc2, combine (comma-separated; "" leaves every launch in, the plain bench).  The
launches left in read buffers the first (whole) call wrote, so the timing is of
the same work with the dropped kernels' time and boundaries gone; their share is
the difference to a plain run in the same process order.  The bench's inputs
are not rotated (--rotate 1 unless given): the bindings share one arena, so with
route_pack left out every replay would multiply the last packed call's routing.
On the GPU only (elsewhere the bench runs the reference, which this leaves alone).

--memset N (a probe, not a kernel's share): every call first enqueues a
cudaMemsetAsync of N bytes (a buffer of its own) on the call's stream, so a
graph replay holds a memset node before the forward's first kernel: what a
reset at the start of the forward would cost (counters that a kernel of the
forward relies on cannot be zeroed by the forward's own later kernels when the
arena is shared, docs/performance.md step 25).
"""
from __future__ import annotations

import argparse
import runpy
import sys

NAMES = {"decode": ("fc1", "fc2", "combine"),
         "packed": ("route_pack", "fc1", "fc2", "combine"),
         "self_pack": ("fc1", "fc2", "combine")}      # geometry.self_packs: no route_pack


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--drop", default="", help="kernels to leave out, e.g. combine")
    ap.add_argument("--memset", type=int, default=0,
                    help="bytes to memset on the stream before each call (a probe)")
    ap.add_argument("bench", nargs=argparse.REMAINDER, help="-- then pymoe bench's arguments")
    a = ap.parse_args(argv)
    drop = {d for d in a.drop.split(",") if d}
    bad = drop - {n for v in NAMES.values() for n in v}
    if bad:
        raise SystemExit(f"--drop: unknown kernel(s) {sorted(bad)}; expected names from "
                         f"{NAMES}")
    if a.memset < 0:
        raise SystemExit(f"--memset: expected bytes >= 0, got {a.memset}")
    from pymoe.cuda import runner
    orig = runner.run
    buf = None

    def run(b, *, stream=None):
        nonlocal buf
        if a.memset:
            import cupy
            if buf is None:
                buf = cupy.empty(a.memset, cupy.uint8)
            s = runner.launch_stream(stream)
            cupy.cuda.runtime.memsetAsync(buf.data.ptr, 0, a.memset, s.ptr)
        out = orig(b, stream=stream)
        ls = b.cache.get("launches")
        if drop and ls and not b.cache.get("launch_share"):
            names = NAMES["self_pack" if b.keys[0] is None else b.regime]
            b.cache["launches"] = [f for n, f in zip(names, ls) if n not in drop]
            b.cache["launch_share"] = True
        return out

    runner.run = run
    rest = a.bench[1:] if a.bench[:1] == ["--"] else a.bench
    if "--rotate" not in rest:
        rest = [*rest, "--rotate", "1"]
    sys.argv = ["pymoe", "bench", *rest]
    runpy.run_module("pymoe", run_name="__main__")


if __name__ == "__main__":
    main()
