"""Probe: programmatic dependent launch (PDL) between two dependent kernels,
launched through cuLaunchKernelEx (cuda-python's driver bindings) on a CuPy
stream, directly and captured in a CUDA graph - the other mechanism issue 11
names for a forward with no launch gap (beside probe_persistent.py's counters).

    python tools/probe_pdl.py            # GPU: check every variant, replay, time
    python tools/probe_pdl.py --compile  # no GPU: PTX, local ptxas, SASS

The work is shaped like the decode regime's fc1 -> fc2 boundary: the producer
(fc1) streams its own read-only "weights" w1 and writes a; the consumer (fc2)
streams ITS weights w2, which do not depend on the producer, then needs all of
a.  With PDL the consumer's CTAs may start while the producer's still run:
they stream w2 first, then `griddepcontrol.wait` (the producer grid complete,
its writes visible), then read a.  The producer may `griddepcontrol.launch_
dependents` early (here: at its start) so the dependents are scheduled before
it ends.

Variants (the same two kernels; a flag picks the PTX's path at run time):
  plain     two ordinary launches (cuLaunchKernelEx without attributes)
  pdl       consumer launched with PROGRAMMATIC_STREAM_SERIALIZATION, its wait
            after streaming w2, the producer triggering at its start
  pdl-late  the same, the producer never triggering (implicit at its end)
  pdl-wait0 the consumer waiting first thing (only the launch latency hidden)

Checks, every variant, direct and as 100 graph replays: a and b NaN-poisoned
and x fresh before each run, b equal to NumPy (a consumer reading a before the
producer wrote it reads NaN or a stale x).  Timing: graph replay medians of
decode-sized work (w1 12 MB, w2 6 MB: qwen3-30b-a3b's T = 1 fc1 / fc2 bytes)
and of 4x that, each against plain.
"""
from __future__ import annotations

import os
import sys

import numpy as np
from numba import cuda, float32

import probe_common

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pymoe.cuda.kernels.ptx import pdl_trigger, pdl_wait  # noqa: E402
from pymoe.cuda.launch import KernelSpec  # noqa: E402

THREADS = 128


@cuda.jit(device=True)
def stream_sum(w, base, n):
    """Sum (as float32 of the low 16 bits) of w[base : base + n] over the CTA's
    threads, each summing its own words (the 'weights' of one CTA)."""
    t = cuda.threadIdx.x
    s = float32(0.0)
    for q in range(t, n, THREADS):
        s += float32(w[base + q] & 0xFFFF)
    return s


def producer(w1, per1, x, a, trigger):
    """CTA c: a[c * THREADS + t] = x[c] + its share of w1[c * per1 ...]."""
    if trigger:
        pdl_trigger()
    c = cuda.blockIdx.x
    t = cuda.threadIdx.x
    s = stream_sum(w1, c * per1, per1)
    a[c * THREADS + t] = x[c] + s * float32(1e-9)


def consumer(w2, per2, a, n_a, b, wait_at):
    """CTA c: b[c * THREADS + t] = its share of w2 + a[c', t] summed over every
    producer CTA c' (in order).  wait_at: 0 no griddepcontrol.wait (plain
    launches), 1 wait after streaming w2, 2 wait first."""
    c = cuda.blockIdx.x
    t = cuda.threadIdx.x
    if wait_at == 2:
        pdl_wait()
    s = stream_sum(w2, c * per2, per2)
    if wait_at == 1:
        pdl_wait()
    tot = float32(0.0)
    for q in range(t, n_a, THREADS):
        tot += a[q]
    b[c * THREADS + t] = tot + s * float32(1e-9)


SPECS = {"producer": KernelSpec(producer, ("u4[]", "i8", "f4[]", "f4[]", "i8"), THREADS),
         "consumer": KernelSpec(consumer, ("u4[]", "i8", "f4[]", "i8", "f4[]", "i8"),
                                THREADS)}
VARIANTS = {"plain": (0, 0, False), "pdl": (1, 1, True), "pdl-late": (0, 1, True),
            "pdl-wait0": (1, 2, True)}          # (trigger, wait_at, PDL attribute)


def thread_sums(w, per, ctas):
    """[ctas, THREADS]: what thread t of CTA c sums of w (words t, t + THREADS...)."""
    return (w & 0xFFFF).astype(np.float64).reshape(ctas, per // THREADS, THREADS).sum(1)


def reference(s1, s2, x):
    """b [ctas, THREADS] in float64 from the two weight arrays' thread sums."""
    a = x[:, None].astype(np.float64) + s1 * 1e-9
    return a.sum(0)[None, :] + s2 * 1e-9


def compile_only() -> int:
    for name, ptx, sass in probe_common.compiled(SPECS):
        for pat in ("griddepcontrol.wait", "griddepcontrol.launch_dependents"):
            print(f"  PTX has {pat}: {pat in ptx}")
        ops = [tok for ln in sass.splitlines() for tok in ln.replace(";", " ").split()
               if tok in ("ACQBULK", "PREEXIT")]      # wait / launch_dependents
        print(f"  SASS: {ops}")
    return 0


class ExLauncher:
    """cuLaunchKernelEx of a prepared pymoe launch, with or without PDL."""

    def __init__(self, prepared, pdl: bool):
        from cuda.bindings import driver as drv
        self.drv, self.p = drv, prepared
        cfg = drv.CUlaunchConfig()
        gx, gy, gz, bx = prepared._dims
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = gx, gy, gz
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = bx, 1, 1
        cfg.sharedMemBytes = 0
        if pdl:
            at = drv.CUlaunchAttribute()
            at.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            at.value.programmaticStreamSerializationAllowed = 1
            cfg.attrs = [at]
            cfg.numAttrs = 1
        else:
            cfg.numAttrs = 0
        self.cfg = cfg
        self.fn = drv.CUfunction(prepared._fn)

    def __call__(self, stream) -> None:
        self.cfg.hStream = self.drv.CUstream(stream.ptr)
        err, = self.drv.cuLaunchKernelEx(self.cfg, self.fn, self.p._params_ptr, 0)
        if err != self.drv.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuLaunchKernelEx: {err}")


def run_gpu() -> int:
    import cupy as cp
    from pymoe.cuda.launch import load_spec
    k = {n: load_spec(s) for n, s in SPECS.items()}
    rng = np.random.default_rng(0)
    ok = True
    times = {}
    for scale in (1, 4):
        ctas = 384
        per1 = (12 << 20) * scale // 4 // ctas // THREADS * THREADS   # words a CTA
        per2 = (6 << 20) * scale // 4 // ctas // THREADS * THREADS
        w1 = cp.asarray(rng.integers(0, 2 ** 32, ctas * per1, dtype=np.uint32))
        w2 = cp.asarray(rng.integers(0, 2 ** 32, ctas * per2, dtype=np.uint32))
        x = cp.empty(ctas, cp.float32)
        a = cp.empty(ctas * THREADS, cp.float32)
        b = cp.empty(ctas * THREADS, cp.float32)
        s = cp.cuda.Stream(non_blocking=True)
        s1 = thread_sums(cp.asnumpy(w1), per1, ctas)
        s2 = thread_sums(cp.asnumpy(w2), per2, ctas)
        for name, (trig, wait_at, pdl) in VARIANTS.items():
            p1 = ExLauncher(k["producer"].prepare((ctas,), (w1, per1, x, a, trig)), False)
            p2 = ExLauncher(k["consumer"].prepare((ctas,), (w2, per2, a, ctas * THREADS, b,
                                                            wait_at)), pdl)

            def fwd():
                p1(s)
                p2(s)
            bad = 0
            with s:
                s.begin_capture()
                fwd()
                g = s.end_capture()
                for rep in range(101):
                    xh = rng.standard_normal(ctas).astype(np.float32)
                    x.set(xh, stream=s)
                    a.fill(np.nan)
                    b.fill(np.nan)
                    (fwd if rep == 0 else (lambda: g.launch(s)))()
                    s.synchronize()
                    want = reference(s1, s2, xh)
                    got = cp.asnumpy(b).reshape(ctas, THREADS).astype(np.float64)
                    if not np.allclose(got, want, rtol=1e-5, atol=1e-3):
                        bad += 1
                ms = probe_common.median_ms(lambda: g.launch(s), 100, s, warm=20)
            times[(scale, name)] = ms * 1e3
            ok &= bad == 0
            print(f"[{'PASS' if bad == 0 else 'FAIL'}] x{scale} {name}: direct + 100 graph "
                  f"replays, {bad} wrong")
    print("graph replay, us (median of 100; w1 / w2 = 12 / 6 MB x scale):")
    for scale in (1, 4):
        base = times[(scale, "plain")]
        print(f"  x{scale}: " + ", ".join(f"{n} {times[(scale, n)]:.1f} "
                                         f"({times[(scale, n)] / base:.2f})"
                                         for n in VARIANTS))
    return 0 if ok else 1


def main() -> int:
    return probe_common.main(__doc__, compile_only, run_gpu)


if __name__ == "__main__":
    sys.exit(main())
