"""CUDA twin: Numba CUDA kernels launched on CuPy streams (imported lazily)."""
from __future__ import annotations

import os

__all__ = ["is_available"]


def is_available() -> bool:
    """True when numba-cuda and cupy import and a CUDA GPU is visible."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    try:
        import cupy
        if not cupy.cuda.is_available():
            return False
        import numba.cuda  # noqa: F401
    except Exception:
        return False
    return True
