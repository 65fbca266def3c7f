"""Where the tests run: under Numba's CUDA simulator, and how many GPUs they see.
conftest.py gates the markers on these; tests that branch on them import them here."""
import os

CUDASIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def _gpu_count() -> int:
    if CUDASIM:
        return 0
    try:
        import cupy
        if not cupy.cuda.is_available():
            return 0
        import numba.cuda  # noqa: F401  (the kernels need it too)
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


GPUS = _gpu_count()
