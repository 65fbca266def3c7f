"""Probe: one persistent launch doing two dependent phases through per-expert
completion counters (release / acquire at GPU scope), reset inside the captured
work, replayed from a CUDA graph - the piece Speed I's fused decode kernel
(fc1 -> fc2 -> top-k sum in one launch) needs and nothing in pymoe has shown.

    python tools/probe_persistent.py            # GPU: check, replay, time
    python tools/probe_persistent.py --compile  # no GPU: PTX, local ptxas, SASS

The work: E experts; phase A item (e, i), i < NA, writes a[e, i*W : i*W + W]
(a little arithmetic on x[e]); phase B item (e, j), j < NB, needs ALL of a[e] and
writes b[e, j] = sum over a[e] of a[e, q] * (j + 1).  The persistent grid G
(<= the CTAs that fit at once) walks one item list, every phase A item before
every phase B item: CTA c takes items c, c + G, ...  A finished A item adds 1 to
cnt_a[e] (fence, then a release add); a B item waits until cnt_a[e] == NA (an
acquire load in a loop); the B item that finishes e last (cnt_b[e] reaches NB)
sets both counters of e back to 0, so the next replay starts clean.  No CTA
waits on an item that a CTA not yet running would have to do, so it cannot
deadlock while all G CTAs are resident.

Checks: b equals NumPy on fresh x every replay (200 graph replays, x rewritten
between them), the counters are 0 after every replay, and the same with E < G,
E > G and one expert.  Times the graph replay against the same work as two
launches (phase A kernel, then phase B kernel) in a graph.
"""
from __future__ import annotations

import os
import sys

import numpy as np
from llvmlite import ir
from numba import cuda, float32, int32, types
from numba.cuda.extending import intrinsic

import probe_common

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pymoe.cuda.kernels.ptx import _asm, _elem_addr  # noqa: E402
from pymoe.cuda.launch import KernelSpec  # noqa: E402

THREADS = 128
W = THREADS                                  # a values per phase A item
NA, NB = 24, 16                              # items per expert in each phase


@intrinsic
def ld_acquire(typingctx, arr, idx):
    """ld.acquire.gpu.u32 of arr[idx] (int32 array)."""
    sig = types.int32(arr, idx)

    def codegen(context, builder, signature, args):
        p = _elem_addr(context, builder, signature.args[0], args[0], signature.args[1], args[1])
        return _asm(builder, ir.IntType(32), "ld.acquire.gpu.global.u32 $0, [$1];",
                    "=r,l,~{memory}", [p])
    return sig, codegen


@intrinsic
def add_release(typingctx, arr, idx, v):
    """atom.add.release.gpu of arr[idx] += v (int32); returns the old value."""
    sig = types.int32(arr, idx, v)

    def codegen(context, builder, signature, args):
        p = _elem_addr(context, builder, signature.args[0], args[0], signature.args[1], args[1])
        x = context.cast(builder, args[2], signature.args[2], types.int32)
        return _asm(builder, ir.IntType(32), "atom.add.release.gpu.global.u32 $0, [$1], $2;",
                    "=r,l,r,~{memory}", [p, x])
    return sig, codegen


@intrinsic
def st_relaxed(typingctx, arr, idx, v):
    """st.relaxed.gpu of arr[idx] = v (int32)."""
    sig = types.void(arr, idx, v)

    def codegen(context, builder, signature, args):
        p = _elem_addr(context, builder, signature.args[0], args[0], signature.args[1], args[1])
        x = context.cast(builder, args[2], signature.args[2], types.int32)
        _asm(builder, ir.VoidType(), "st.relaxed.gpu.global.u32 [$0], $1;", "l,r,~{memory}",
             [p, x])
        return context.get_dummy_value()
    return sig, codegen


@cuda.jit(device=True)
def item_a(x, a, e, i):
    t = cuda.threadIdx.x
    v = x[e] + float32(i * W + t)
    for _ in range(8):
        v = v * float32(0.5) + float32(1.0)
    a[e * (NA * W) + i * W + t] = v


@cuda.jit(device=True)
def item_b(a, b, red, e, j):
    t = cuda.threadIdx.x
    s = float32(0.0)
    for q in range(t, NA * W, THREADS):
        s += a[e * (NA * W) + q]
    red[t] = s
    cuda.syncthreads()
    if t == 0:
        tot = float32(0.0)
        for q in range(THREADS):                 # fixed order: deterministic
            tot += red[q]
        b[e * NB + j] = tot * float32(j + 1)
    cuda.syncthreads()


def fused(x, a, b, cnt, n_exp, fail):
    """Persistent: items c, c + G, ... of [A items (e-major)..., B items...]."""
    t = cuda.threadIdx.x
    red = cuda.shared.array(THREADS, float32)
    flag = cuda.shared.array(1, int32)
    n_a = n_exp * NA
    total = n_a + n_exp * NB
    for it in range(cuda.blockIdx.x, total, cuda.gridDim.x):
        if it < n_a:
            e = it // NA
            item_a(x, a, e, it % NA)
            cuda.syncthreads()                   # the whole item is written
            if t == 0:
                cuda.threadfence()
                add_release(cnt, 2 * e, 1)
        else:
            e = (it - n_a) // NB
            if t == 0:
                spins = 0
                while ld_acquire(cnt, 2 * e) < NA:
                    spins += 1
                    if spins > (1 << 26):        # fail, do not hang
                        fail[0] = 1
                        break
            cuda.syncthreads()                   # the acquire is CTA-wide now
            item_b(a, b, red, e, (it - n_a) % NB)
            if t == 0:
                cuda.threadfence()
                flag[0] = add_release(cnt, 2 * e + 1, 1)
            cuda.syncthreads()
            if t == 0 and flag[0] == NB - 1:     # the last B item of e: reset e
                st_relaxed(cnt, 2 * e, 0)
                st_relaxed(cnt, 2 * e + 1, 0)
            cuda.syncthreads()


def phase_a(x, a, n_exp):
    it = cuda.blockIdx.x
    item_a(x, a, it // NA, it % NA)


def phase_b(a, b, n_exp):
    red = cuda.shared.array(THREADS, float32)
    it = cuda.blockIdx.x
    item_b(a, b, red, it // NB, it % NB)


SPECS = {"fused": KernelSpec(fused, ("f4[]", "f4[]", "f4[]", "i4[]", "i8", "i4[]"), THREADS),
         "phase_a": KernelSpec(phase_a, ("f4[]", "f4[]", "i8"), THREADS),
         "phase_b": KernelSpec(phase_b, ("f4[]", "f4[]", "i8"), THREADS)}


def reference(x: np.ndarray) -> np.ndarray:
    e = x.size
    v = x[:, None].astype(np.float32) + np.arange(NA * W, dtype=np.float32)[None, :]
    for _ in range(8):
        v = v * np.float32(0.5) + np.float32(1.0)
    tot = v.astype(np.float64).sum(axis=1)
    return (tot[:, None] * np.arange(1, NB + 1)[None, :]).reshape(e * NB)


def compile_only() -> int:
    for name, ptx, _ in probe_common.compiled(SPECS):
        for pat in ("ld.acquire.gpu", "atom.add.release.gpu", "st.relaxed.gpu"):
            if name == "fused":
                print(f"  PTX has {pat}: {pat in ptx}")
    return 0


def run_gpu() -> int:
    import cupy as cp
    from pymoe.cuda.launch import load_spec
    k = {n: load_spec(s) for n, s in SPECS.items()}
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    ok = True
    rng = np.random.default_rng(0)
    for n_exp, grid in ((64, 2 * sms), (4, 2 * sms), (1, sms), (600, sms)):
        x = cp.asarray(rng.standard_normal(n_exp).astype(np.float32))
        a = cp.full(n_exp * NA * W, np.nan, cp.float32)
        b = cp.full(n_exp * NB, np.nan, cp.float32)
        cnt = cp.zeros(2 * n_exp, cp.int32)
        fail = cp.zeros(1, cp.int32)
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            k["fused"].launch((grid, 1, 1), (x, a, b, cnt, n_exp, fail), stream=s)
            s.synchronize()
            s.begin_capture()
            k["fused"].launch((grid, 1, 1), (x, a, b, cnt, n_exp, fail), stream=s)
            g = s.end_capture()
            bad = 0
            for rep in range(200):
                x[...] = cp.asarray(rng.standard_normal(n_exp).astype(np.float32))
                b.fill(np.nan)
                g.launch(s)
                s.synchronize()
                want = reference(cp.asnumpy(x))
                got = cp.asnumpy(b)
                if (not np.allclose(got, want, rtol=1e-4) or int(cnt.sum().get()) != 0
                        or int(fail.get()[0]) != 0):
                    bad += 1
        ok &= bad == 0
        print(f"[{'PASS' if bad == 0 else 'FAIL'}] E={n_exp} grid={grid}: 200 graph replays,"
              f" {bad} wrong (b vs NumPy, counters back to 0, no lost wait)")
    # time: one persistent launch vs two launches, both captured
    n_exp, grid = 64, 2 * sms
    x = cp.asarray(rng.standard_normal(n_exp).astype(np.float32))
    a = cp.empty(n_exp * NA * W, cp.float32)
    b = cp.empty(n_exp * NB, cp.float32)
    cnt = cp.zeros(2 * n_exp, cp.int32)
    fail = cp.zeros(1, cp.int32)
    s = cp.cuda.Stream(non_blocking=True)
    res = {}
    with s:
        graphs = {}
        s.begin_capture()
        k["fused"].launch((grid, 1, 1), (x, a, b, cnt, n_exp, fail), stream=s)
        graphs["one persistent launch"] = s.end_capture()
        s.begin_capture()
        k["phase_a"].launch((n_exp * NA, 1, 1), (x, a, n_exp), stream=s)
        k["phase_b"].launch((n_exp * NB, 1, 1), (a, b, n_exp), stream=s)
        graphs["two launches"] = s.end_capture()
        for name, g in graphs.items():
            res[name] = probe_common.median_ms(lambda: g.launch(s), 50, s, warm=20) * 1e3
    print("graph replay, us (median of 50): " + ", ".join(f"{n} {v:.1f}" for n, v in res.items()))
    return 0 if ok else 1


def main() -> int:
    return probe_common.main(__doc__, compile_only, run_gpu)


if __name__ == "__main__":
    sys.exit(main())
