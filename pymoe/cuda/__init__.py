"""CUDA twin: Numba CUDA kernels launched on CuPy streams.

``import pymoe.cuda`` is cheap; numba and cupy load on first use of anything
but ``is_available()``.

    ew_d = pymoe.cuda.to_device(ew)                 # once per model
    scratch = pymoe.cuda.allocate_scratch(plan)      # once per layer shape
    pymoe.cuda.prewarm(plan)                         # resolve every launch
    y = pymoe.run(plan.bind(scratch=scratch, x=x, experts=ew_d, ...), stream=s)

Layout: host code here (launch.py: caches, capture, resolution; runner.py: run,
prewarm, scratch; device_weights.py: uploads; route_pack / fc1 / fc2 / decode /
dequant .py: the twins' launch faces, same names and signatures as pymoe.ref),
device code in kernels/ (the kernels and their device helpers).
"""
from __future__ import annotations

import os

__all__ = ["is_available", "to_device", "DeviceWeights", "allocate_scratch", "run",
           "prewarm", "PrewarmReport", "freeze", "unfreeze", "is_frozen",
           "LaunchNotResolvedError", "KernelResolutionFrozenError"]

_LAZY = {
    "to_device": "device_weights", "DeviceWeights": "device_weights",
    "allocate_scratch": "runner", "run": "runner",
    "prewarm": "runner", "PrewarmReport": "runner",
    "freeze": "launch", "unfreeze": "launch", "is_frozen": "launch",
    "LaunchNotResolvedError": "launch", "KernelResolutionFrozenError": "launch",
}


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


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'pymoe.cuda' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)
