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

from .availability import (NoCudaGPUError, is_available, require_gpu, simulated,
                           unavailable_reason)

__all__ = ["is_available", "unavailable_reason", "NoCudaGPUError", "to_device",
           "DeviceWeights", "allocate_scratch", "run", "prewarm", "PrewarmReport", "freeze",
           "unfreeze", "is_frozen", "LaunchNotResolvedError", "KernelResolutionFrozenError"]

_LAZY = {
    "DeviceWeights": "device_weights", "PrewarmReport": "runner",
    "freeze": "launch", "unfreeze": "launch", "is_frozen": "launch",
    "LaunchNotResolvedError": "launch", "KernelResolutionFrozenError": "launch",
}


def to_device(experts, *, packed_rows: bool = True):
    """Upload prepared weights to the current GPU once: a DeviceWeights
    (pymoe/cuda/device_weights.py).  packed_rows=False keeps layout v2 only
    (half the memory; the decode kernels and the wgmma GEMM at blocks up to 64
    read it, other GEMMs are refused at bind).  NoCudaGPUError without a GPU."""
    require_gpu("pymoe.cuda.to_device")
    from .device_weights import to_device as impl
    return impl(experts, packed_rows=packed_rows)


def allocate_scratch(plan, pool=None):
    """uint8 CuPy array of exactly plan.scratch_nbytes (pymoe/cuda/runner.py)."""
    require_gpu("pymoe.cuda.allocate_scratch")
    from .runner import allocate_scratch as impl
    return impl(plan, pool)


def prewarm(plan, stream=None, *, experts=None, progress: bool = True):
    """Resolve every launch reachable under ``plan`` (pymoe/cuda/runner.py); with
    ``experts`` (DeviceWeights) only the block GEMM they select."""
    require_gpu("pymoe.cuda.prewarm")
    from .runner import prewarm as impl
    return impl(plan, stream, experts=experts, progress=progress)


def run(b, *, stream=None):
    """Execute a device Binding on ``stream`` (pymoe/cuda/runner.py)."""
    require_gpu("pymoe.cuda.run")
    from ..plan import Binding
    if not isinstance(b, Binding):
        raise TypeError(f"run takes a pymoe Binding (from Plan.bind), got {type(b).__name__}")
    if b.kind != "device" and not simulated():
        raise TypeError("run: the binding holds host (NumPy) arrays; pymoe.run(binding) "
                        "runs it on the reference, pymoe.cuda.run needs device arrays")
    from .runner import run as impl
    return impl(b, stream=stream)


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'pymoe.cuda' has no attribute {name!r}")
    import importlib
    try:
        m = importlib.import_module(f"{__name__}.{mod}")
    except ImportError as e:
        raise NoCudaGPUError(f"pymoe.cuda.{name}: the CUDA dependencies do not import "
                             f"({type(e).__name__}: {e}); pip install 'pymoe[cuda]'") from e
    return getattr(m, name)
