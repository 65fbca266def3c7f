"""Dequant (CUDA twin of pymoe/ref/dequant.py): prepared FP4 weights -> float32
on the device, for debugging and tests.

Shape legend: E experts, N rows of the projection (F for w13, H for w2), K its
logical reduction dim, Kp = K padded to 32.

    dequant  grid (E*N, ceil(K/128)): out[e, n, kk] = fp4 * scale (* global)
The same word/scale addressing and scale table as the GEMM kernels (gemm.py),
so a wrong address there shows here first.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int64

from ..geometry import dequant_launch_key
from .gemm import shape_of
from .intrinsics import SIM, fp4_quarters
from .launch import KernelSpec, register, resolve

__all__ = ["dequant"]

THREADS = 128


@register("dequant_w13")
def build_w13(key):
    return _build(key, "w13")


@register("dequant_w2")
def build_w2(key):
    return _build(key, "w2")


def _build(key, which: str) -> KernelSpec:
    sh = shape_of(key, which)
    nv, kdim, words, sg, group = sh.nv, sh.k, sh.words, sh.sgroups, sh.group

    def kernel(w, s, lut, g, rows, gate_rows, gcols, apply_g, row0, out):
        kk = cuda.blockIdx.y * THREADS + cuda.threadIdx.x
        lrow = int64(cuda.blockIdx.x)                # row of the output (x: up to 2^31-1)
        if kk >= kdim:
            return
        row = row0 + lrow                            # global row e*N + n
        word = int64(w[row * words + kk // 8])
        v = fp4_quarters((word >> (4 * (kk % 8))) & 15) * lut[s[row * sg + kk // group]]
        if nv and apply_g != 0:
            e = row // rows
            col = 0 if (row % rows) < gate_rows else 1
            v *= g[e * gcols + col]
        out[lrow * kdim + kk] = v

    return KernelSpec(kernel, ("u4[]", "u1[]", "f4[]", "f4[]", "i8", "i8", "i8", "i8", "i8",
                               "f4[]"), THREADS)


def dequant(experts, which: str, expert: int | None = None, *,
            apply_global: bool = True, stream=None):
    """pymoe.ref.dequant on the device: float32 [E, N, K] (or [N, K] for one
    expert) as a CuPy array (a NumPy array under the simulator)."""
    if which not in ("w13", "w2"):
        raise ValueError(f"which={which!r}: expected 'w13' or 'w2'")
    from .runner import _stream, to_device
    if expert is not None and not 0 <= int(expert) < experts.num_experts:
        raise ValueError(f"expert={expert}: expected 0 <= expert < {experts.num_experts}")
    ew = to_device(experts)
    key = dequant_launch_key(which, format=ew.format, activation=ew.activation,
                             hidden_size=ew.hidden_size,
                             intermediate_size=ew.intermediate_size)
    sh = shape_of(key, which)
    n_exp = ew.num_experts if expert is None else 1
    row0 = 0 if expert is None else int(expert) * sh.rows
    xp = np if SIM else __import__("cupy")
    out = xp.empty((n_exp * sh.rows, sh.k), xp.float32)
    words, lut = ew._device_copy[which + "_words"], ew._device_copy["scale_lut"]
    g = getattr(ew, which + "_global")
    gate_rows = sh.rows // 2 if (which == "w13" and ew.activation != "relu2") else sh.rows
    gcols = 2 if which == "w13" else 1
    st = _stream(stream)
    if out.size:
        resolve(key, st).launch(
            (n_exp * sh.rows, -(-sh.k // THREADS)),
            (words, getattr(ew, which + "_scales"), lut, g, sh.rows, gate_rows, gcols,
             int(bool(apply_global)), row0, out), st)
    shape = (sh.rows, sh.k) if expert is not None else (n_exp, sh.rows, sh.k)
    return out.reshape(shape)
