"""Device arrays from other frameworks as zero-copy CuPy views.

Streams (``as_stream``): a CuPy stream, a torch CUDA stream, anything with
``__cuda_stream__``, or a raw ``cudaStream_t`` int; pymoe only needs the handle.

Accepted arrays: CuPy arrays, anything with ``__cuda_array_interface__`` (Numba, torch
for most dtypes) or ``__dlpack__`` (torch bf16).  bf16 tensors become uint16
views of the same memory (CuPy has no bf16 dtype); pymoe treats uint16 as bf16
bits.
"""
from __future__ import annotations

__all__ = ["as_cupy", "as_stream"]


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


class _RawStream:
    """A borrowed stream handle: pymoe launches on ``ptr`` and never owns it."""
    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = int(ptr)

    def __repr__(self):
        return f"<stream {self.ptr:#x}>"


def as_stream(stream):
    """An object with ``.ptr`` (the cudaStream_t) for ``stream``; None means
    CuPy's current stream."""
    import cupy as cp
    if stream is None:
        return cp.cuda.get_current_stream()
    if hasattr(stream, "ptr"):                       # CuPy streams (and anything alike)
        return stream
    if isinstance(stream, int) and not isinstance(stream, bool):
        return _RawStream(stream)
    if hasattr(stream, "__cuda_stream__"):           # CUDA stream protocol: (version, ptr)
        return _RawStream(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):               # torch.cuda.Stream
        return _RawStream(stream.cuda_stream)
    raise TypeError(f"stream: expected a CuPy stream, a torch CUDA stream, an object with "
                    f"__cuda_stream__ or a cudaStream_t int, got {type(stream).__name__}")
