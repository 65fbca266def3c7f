"""Is there a CUDA GPU pymoe can use, and if not, why not.

    pymoe.cuda.is_available()      -> bool, never raises, imports nothing heavy twice
    pymoe.cuda.unavailable_reason()  -> what the check saw ('' when available)
    require_gpu("pymoe.cuda.to_device")  raises NoCudaGPUError naming the entry point

Every CUDA entry point (to_device, allocate_scratch, prewarm, run, fused_moe with
backend='cuda', the demo) calls ``require_gpu`` first, so a machine without a GPU
gets one pymoe error instead of a CuPy traceback.  Under Numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1) the entry points run on NumPy arrays: nothing is
required there, although ``is_available()`` is False (no real GPU).
"""
from __future__ import annotations

import os

__all__ = ["NoCudaGPUError", "is_available", "unavailable_reason", "require_gpu", "simulated"]


class NoCudaGPUError(RuntimeError):
    """A CUDA entry point was called where pymoe sees no usable CUDA GPU."""


_SEEN: list = []          # [reason] once checked ('' = available)


def simulated() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def _check() -> str:
    if simulated():
        return "NUMBA_ENABLE_CUDASIM=1 (Numba's CUDA simulator: no real GPU)"
    try:
        import cupy
    except Exception as e:                                   # not installed / broken
        return f"cupy does not import ({type(e).__name__}: {e}); pip install 'pymoe[cuda]'"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:                                   # no driver / too old a driver
        return f"cupy sees no CUDA device ({type(e).__name__}: {e})"
    if n < 1:
        return "cupy sees 0 CUDA devices"
    try:
        import numba.cuda  # noqa: F401
    except Exception as e:
        return (f"numba.cuda does not import ({type(e).__name__}: {e}); "
                "pip install 'pymoe[cuda]' (numba-cuda needs numpy < 2.5)")
    return ""


def unavailable_reason() -> str:
    """'' when a CUDA GPU is usable, else what the check saw (cached)."""
    if not _SEEN:
        _SEEN.append(_check())
    return _SEEN[0]


def is_available() -> bool:
    """True when numba-cuda and cupy import and a CUDA GPU is visible."""
    return unavailable_reason() == ""


def require_gpu(what: str) -> None:
    """Raise NoCudaGPUError for entry point ``what`` unless a GPU (or the
    simulator) is there; checked before anything is allocated or drawn."""
    if simulated() or is_available():
        return
    raise NoCudaGPUError(f"{what}: no CUDA GPU: {unavailable_reason()} "
                         "(pymoe.cuda.is_available() is False; the ref backend runs "
                         "on any CPU)")
