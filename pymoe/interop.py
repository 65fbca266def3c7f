"""Arrays and streams from other frameworks: what kind an array is, and CuPy
views of device arrays (zero copy).  Standard library and NumPy only at import;
cupy is imported only when a device array or stream is handed over.

Kinds (``array_kind``): NumPy arrays are 'host'; CuPy arrays, anything with
``__cuda_array_interface__`` (Numba, most torch dtypes) and DLPack arrays on a
CUDA device (torch bf16) are 'device'; anything else (a torch CPU tensor, a list)
is a TypeError naming the argument.  bf16 device tensors become uint16 views of
the same memory (CuPy has no bf16 dtype); pymoe treats uint16 as bf16 bits.

Streams (``as_stream``): a CuPy stream, a torch CUDA stream, anything with
``__cuda_stream__``, or a raw ``cudaStream_t`` int; pymoe only needs the handle.
"""
from __future__ import annotations

import numpy as np

__all__ = ["array_kind", "as_numpy", "as_cupy", "as_stream"]

# DLPack device types (dlpack.h): kDLCUDA, kDLCUDAHost, kDLCUDAManaged
_DLPACK_CUDA = (2, 3, 13)


def _is_cupy(a) -> bool:
    return type(a).__module__.startswith("cupy")


def data_address(a) -> int:
    """The first byte's address of a NumPy or CuPy array."""
    return int(a.ctypes.data) if isinstance(a, np.ndarray) else int(a.data.ptr)


def _has_cai(a) -> bool:
    try:                     # torch raises TypeError (not AttributeError) for bf16
        return hasattr(a, "__cuda_array_interface__")
    except Exception:
        return False


def array_kind(name: str, a) -> str:
    """'host' or 'device' for argument ``name``; TypeError for anything else."""
    if isinstance(a, np.ndarray):
        return "host"
    if _is_cupy(a) or _has_cai(a):
        return "device"
    dev = getattr(a, "__dlpack_device__", None)
    if dev is not None:
        try:
            if int(dev()[0]) in _DLPACK_CUDA:
                return "device"
        except Exception:      # a broken protocol implementation: not an array we know
            pass
    mod = type(a).__module__.split(".")[0]
    what = type(a).__name__ if mod == "builtins" else f"{mod}.{type(a).__name__}"
    hint = (" on the host: pass a NumPy array (e.g. t.numpy()) for the ref backend"
            if dev is not None else "")
    raise TypeError(f"{name}: {what}{hint}; expected a NumPy array (host) or a CUDA "
                    "array (CuPy, __cuda_array_interface__, DLPack on a CUDA device)")


def as_numpy(name: str, a) -> np.ndarray:
    """A host array as NumPy (zero copy where the source allows): NumPy as is,
    torch CPU tensors through .numpy() (bf16 as uint16 bits), anything with
    __array__ or a sequence through np.asarray.  CUDA arrays: TypeError naming
    the argument (the ref backend runs on the host)."""
    if isinstance(a, np.ndarray):
        return a
    if _is_cupy(a) or _has_cai(a):
        raise TypeError(f"{name}: a CUDA array ({type(a).__module__.split('.')[0]}."
                        f"{type(a).__name__}); the ref backend takes host arrays: use "
                        "backend='cuda' or copy it to the host")
    if type(a).__module__.startswith("torch"):
        import torch
        if a.device.type != "cpu":
            raise TypeError(f"{name}: torch tensor on {a.device}; the ref backend takes "
                            "host arrays: use backend='cuda' or .cpu()")
        t = a.detach()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16)
        return t.numpy()
    try:
        return np.asarray(a)
    except Exception as e:
        raise TypeError(f"{name}: {type(a).__name__} is not an array NumPy can read "
                        f"({type(e).__name__}: {e})") from e


def as_cupy(name: str, a):
    """A CuPy view of device array ``a`` (zero copy); NumPy arrays are uploaded
    (the one-shot path only)."""
    kind = array_kind(name, a)
    import cupy as cp
    if isinstance(a, cp.ndarray):
        return a
    if kind == "host":                     # host data: one upload (fused_moe only)
        return cp.asarray(a)
    mod = type(a).__module__
    if mod.startswith("torch"):
        import torch
        if a.dtype == torch.bfloat16:
            return cp.from_dlpack(a.view(torch.int16)).view(cp.uint16)
        return cp.from_dlpack(a)
    if _has_cai(a):
        return cp.asarray(a)
    return cp.from_dlpack(a)


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
    if stream is None:
        import cupy as cp
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
