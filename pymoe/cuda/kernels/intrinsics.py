"""Device helpers shared by the kernels: bit casts, 16-bit loads/stores, FP4 decode.

On the GPU the bit casts are libdevice's ``__nv_int_as_float`` /
``__nv_float_as_int``; under Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1,
which has no libdevice) the same names are plain Python on NumPy scalars, so
the kernels run unchanged there.
"""
from __future__ import annotations

import numpy as np
from numba import config, cuda, float32, int32, int64

__all__ = ["SIM", "as_float", "as_bits", "bf16_to_f32", "f32_to_bf16", "f16_to_f32",
           "fp4_quarters", "sigmoid", "make_act_io", "act_code"]

SIM = bool(config.ENABLE_CUDASIM)

if SIM:
    def as_float(i):
        return np.array([int(i) & 0xFFFFFFFF], np.uint32).view(np.float32)[0]

    def as_bits(f):
        return int(np.array([f], np.float32).view(np.uint32)[0])
else:
    @cuda.jit(device=True, inline=True)
    def as_float(i):
        return cuda.libdevice.int_as_float(int32(i))

    @cuda.jit(device=True, inline=True)
    def as_bits(f):
        return int64(cuda.libdevice.float_as_int(float32(f))) & 0xFFFFFFFF


@cuda.jit(device=True, inline=True)
def bf16_to_f32(u):
    """uint16 bf16 bits -> float32 (exact)."""
    return as_float(int64(u) << 16)


@cuda.jit(device=True, inline=True)
def f32_to_bf16(f):
    """float32 -> uint16 bf16 bits, round to nearest even, NaN kept quiet."""
    u = as_bits(f)
    if f != f:
        return ((u >> 16) | 0x40) & 0xFFFF
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


@cuda.jit(device=True, inline=True)
def f16_to_f32(h):
    return float32(h)


@cuda.jit(device=True, inline=True)
def fp4_quarters(c):
    """E2M1 code (4 bits) -> value * 4 as float32 (exact): 0,2,4,6,8,12,16,24.

    The 1/4 is folded into the scale tables so the decode is integer work."""
    e = (c >> 1) & 3
    f = c & 1
    q = 2 * f if e == 0 else (2 + f) << e
    v = float32(q)
    return -v if c & 8 else v


if SIM:
    def sigmoid(v):
        """Python's math.exp raises OverflowError where the GPU's expf gives inf
        (sigmoid -> 0); NumPy's float32 exp follows IEEE like the GPU."""
        with np.errstate(over="ignore"):
            return np.float32(1.0) / (np.float32(1.0) + np.exp(np.float32(-v)))
else:
    @cuda.jit(device=True, inline=True)
    def sigmoid(v):
        """1 / (1 + e^-v) on the SFU: ex2.approx and rcp.approx (libdevice's
        fast_expf, fast_fdividef), 4 instructions instead of ~20 for expf and an
        IEEE division with its slow path; a few float32 ulps, below the bf16 /
        fp16 rounding that follows (v -> -inf: 1 / inf = 0; +inf: 1)."""
        return cuda.libdevice.fast_fdividef(float32(1.0),
                                            float32(1.0) + cuda.libdevice.fast_expf(-v))


if SIM:
    def to_half(v):
        return np.float16(v)
else:
    from numba.core.types import float16 as _f16

    @cuda.jit(device=True, inline=True)
    def to_half(v):
        return _f16(v)


def act_code(dtype: str) -> str:
    """Kernel ABI code (launch.KernelSpec) of a 16-bit activation array: bf16 is
    passed as its uint16 bits, fp16 as float16."""
    return "u2[]" if dtype == "bfloat16" else "f2[]"


def make_act_io(dtype: str):
    """(load(arr, i) -> float32, store(arr, i, float32)) for a 16-bit activation
    array: bf16 arrays are uint16 bits, fp16 arrays are float16."""
    if dtype == "bfloat16":
        @cuda.jit(device=True, inline=True)
        def load(a, i):
            return bf16_to_f32(a[i])

        @cuda.jit(device=True, inline=True)
        def store(a, i, v):
            a[i] = f32_to_bf16(v)

        @cuda.jit(device=True, inline=True)
        def round_(v):
            return bf16_to_f32(f32_to_bf16(v))
    else:
        @cuda.jit(device=True, inline=True)
        def load(a, i):
            return float32(a[i])

        @cuda.jit(device=True, inline=True)
        def store(a, i, v):
            a[i] = to_half(v)

        @cuda.jit(device=True, inline=True)
        def round_(v):
            return float32(to_half(v))
    return load, store, round_


