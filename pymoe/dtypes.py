"""16-bit activation dtypes without a bf16-aware NumPy.

pymoe names activation dtypes by string ("bfloat16", "float16").  bf16 arrays
arrive as ``ml_dtypes.bfloat16`` NumPy arrays, torch/CuPy bf16 tensors, or raw
``uint16`` bit patterns; internally a bf16 buffer is always its uint16 bits.
Rounding float32 -> bf16 is round-to-nearest-even on the bit pattern (exactly
what ml_dtypes and the GPU's cvt.rn.bf16.f32 do), NaN kept quiet.
"""
from __future__ import annotations

import numpy as np

__all__ = ["dtype_name", "activation_dtype", "storage_dtype", "to_float32", "round_to",
           "from_float32"]


def dtype_name(dt) -> str | None:
    """'bfloat16' / 'float16' for a 16-bit float dtype, else None."""
    try:
        dt = np.dtype(dt)
    except TypeError:
        s = str(dt)
        return "bfloat16" if s.endswith("bfloat16") else (
            "float16" if s.endswith("float16") else None)
    if dt == np.float16:
        return "float16"
    if dt.name == "bfloat16" and dt.itemsize == 2:
        return "bfloat16"
    return None


def activation_dtype(name: str, dt) -> str:
    """'bfloat16' / 'float16' for the dtype ``dt`` of argument ``name``: a 16-bit
    float dtype, or uint16 (bf16 bits).  Anything else: TypeError naming it."""
    n = dtype_name(dt)
    if n is None:
        try:
            if np.dtype(dt) == np.uint16:
                n = "bfloat16"
        except TypeError:             # a foreign dtype object (torch): not 16-bit float
            pass
    if n is None:
        raise TypeError(f"{name}: dtype {dt}, expected bfloat16 or float16 (bf16 may "
                        "be given as its uint16 bits)")
    return n


def storage_dtype(name: str) -> np.dtype:
    """NumPy dtype pymoe stores an activation of dtype ``name`` as."""
    return np.dtype(np.uint16) if name == "bfloat16" else np.dtype(np.float16)


def to_float32(a: np.ndarray, name: str) -> np.ndarray:
    """Exact widening of a bf16 (any 2-byte view) or fp16 array to float32."""
    if name == "bfloat16":
        bits = a.view(np.uint16).astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32)
    return np.asarray(a, dtype=np.float16).astype(np.float32)


def from_float32(f: np.ndarray, name: str) -> np.ndarray:
    """float32 -> storage (uint16 bits for bf16, float16), round to nearest even."""
    f = np.ascontiguousarray(f, dtype=np.float32)
    if name == "float16":
        return f.astype(np.float16)
    u = f.view(np.uint32)
    nan = np.isnan(f)
    rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    out = rounded.astype(np.uint16)
    if nan.any():
        out[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return out


def round_to(f: np.ndarray, name: str) -> np.ndarray:
    """float32 -> float32 rounded through ``name`` (the twins' rounding points)."""
    return to_float32(from_float32(f, name), name)
