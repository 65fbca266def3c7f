"""What the probes (tools/probe_*.py) share: their command line (--compile or
the GPU run), the --compile step (PTX here, the local ptxas, SASS), and event
timing on a stream."""
from __future__ import annotations

import argparse
import statistics


def main(doc: str, compile_only, run_gpu, compile_help: str = "no GPU: PTX, ptxas") -> int:
    """A probe's entry point: --compile runs compile_only(), else run_gpu()."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--compile", action="store_true", help=compile_help)
    a = ap.parse_args()
    return compile_only() if a.compile else run_gpu()


def compiled(specs: dict, cc=(9, 0)):
    """(name, ptx, sass) for each KernelSpec of ``specs``, compiled here for ``cc``
    and assembled by the local ptxas (sass_report), its register line printed."""
    import sass_report as sr
    from pymoe.cuda import launch
    for name, spec in specs.items():
        ptx = launch._compile(spec, cc)
        log, sass = sr.assemble(ptx, "sm_90a" if ".target sm_90a" in ptx else "sm_90")
        regs = [ln for ln in log.splitlines() if "registers" in ln]
        print(f"{name}: {regs[0].split(':', 1)[-1].strip() if regs else log[-300:]}")
        yield name, ptx, sass


def median_ms(run, n: int, stream=None, warm: int = 0) -> float:
    """Median milliseconds of ``run()`` between two CUDA events recorded on
    ``stream`` (None: the current one), over n timed calls after warm untimed."""
    import cupy as cp
    for _ in range(warm):
        run()
    ts = []
    for _ in range(n):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(stream)
        run()
        e1.record(stream)
        e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1))
    return statistics.median(ts)


def graph_median_us(stream, launches, before, reps: int) -> float:
    """Median microseconds of CUDA-graph replays of ``launches`` (callables taking
    the stream), run once eagerly and then captured on ``stream``; ``before(r)``
    runs ahead of replay r (an L2 flush), outside the two events around it.

    The device is synchronized first: a probe's buffers are made by CuPy on the
    legacy default stream, which a non-blocking ``stream`` does not wait for (step
    33: probe_flush XORed a 150 MB buffer before its fill finished; probe_decode_floor's
    fault on the H200, step 31, fits the same race: expert ids read before their
    copy landed)."""
    import cupy as cp
    cp.cuda.Device().synchronize()
    with stream:
        for f in launches:
            f(stream)
        stream.synchronize()
        stream.begin_capture()
        for f in launches:
            f(stream)
        g = stream.end_capture()
    ts = []
    for r in range(reps):
        before(r)
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(stream)
        g.launch(stream)
        e1.record(stream)
        e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1) * 1e3)
    return statistics.median(ts)
