"""Device arrays from other frameworks as zero-copy CuPy views.

Accepted: CuPy arrays, anything with ``__cuda_array_interface__`` (Numba, torch
for most dtypes) or ``__dlpack__`` (torch bf16).  bf16 tensors become uint16
views of the same memory (CuPy has no bf16 dtype); pymoe treats uint16 as bf16
bits.
"""
from __future__ import annotations

__all__ = ["as_cupy"]


def as_cupy(name: str, a):
    import cupy as cp
    if isinstance(a, cp.ndarray):
        return a
    mod = type(a).__module__
    if mod.startswith("torch"):
        import torch
        if a.device.type != "cuda":
            raise TypeError(f"{name}: torch tensor on {a.device}, expected a CUDA tensor")
        if a.dtype == torch.bfloat16:
            a = a.view(torch.int16)
            return cp.from_dlpack(a).view(cp.uint16)
        return cp.from_dlpack(a)
    import numpy as np
    if isinstance(a, np.ndarray):          # host data: one upload (fused_moe only)
        return cp.asarray(a)
    if hasattr(a, "__cuda_array_interface__"):
        return cp.asarray(a)
    if hasattr(a, "__dlpack__"):
        return cp.from_dlpack(a)
    raise TypeError(f"{name}: expected a CuPy, CUDA-array-interface or DLPack array, "
                    f"got {type(a).__name__}")
