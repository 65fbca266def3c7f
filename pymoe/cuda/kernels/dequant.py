"""Dequant kernel: prepared FP4 weights -> float32 on the device, for debugging
and tests (launched by pymoe/cuda/dequant.py).

Shape legend: E experts, N rows of the projection (F for w13, H for w2), K its
logical reduction dim, Kp = K padded to 32.

    dequant  grid (E*N, ceil(K/TN)): out[e, n, kk] = fp4 * scale (* global),
             TN = key.tile_n (geometry.DEQUANT_THREADS) values per CTA
The same word/scale addressing and scale values as the GEMM kernels (common.py),
so a wrong address there shows here first.
"""
from __future__ import annotations

from numba import cuda, float32, int64

from .common import make_scale_value, shape_of
from .intrinsics import fp4_quarters
from .spec import KernelSpec

__all__ = ["build_w13", "build_w2"]


def build_w13(key):
    return _build(key, "w13")


def build_w2(key):
    return _build(key, "w2")


def _build(key, which: str) -> KernelSpec:
    sh = shape_of(key, which)
    THREADS = key.tile_n
    nv, kdim, words, sg, group = sh.nv, sh.k, sh.words, sh.sgroups, sh.group
    scale_value = make_scale_value(key.format)

    def kernel(w, s, g, rows, gate_rows, gcols, apply_g, row0, out):
        kk = cuda.blockIdx.y * THREADS + cuda.threadIdx.x
        lrow = int64(cuda.blockIdx.x)                # row of the output (x: up to 2^31-1)
        if kk >= kdim:
            return
        row = row0 + lrow                            # global row e*N + n
        word = int64(w[row * words + kk // 8])
        sc = scale_value(s[row * sg + kk // group]) * float32(0.25)     # value / 4
        v = fp4_quarters((word >> (4 * (kk % 8))) & 15) * sc
        if nv and apply_g != 0:
            e = row // rows
            col = 0 if (row % rows) < gate_rows else 1
            v *= g[e * gcols + col]
        out[lrow * kdim + kk] = v

    return KernelSpec(kernel, ("u4[]", "u1[]", "f4[]", "i8", "i8", "i8", "i8", "i8", "f4[]"),
                      THREADS)
