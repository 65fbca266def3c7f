"""Device code: the CUDA kernels (one module per kernel family, each with
``build(key) -> KernelSpec``) and the device helpers they share.

Host code (pymoe/cuda/*.py: launch, caches, runner, the twins' launch faces)
imports from here; nothing here imports host code.

    intrinsics, ptx      device helpers: bit casts, 16-bit I/O, inline-PTX instructions
    spec                 KernelSpec (a kernel's Python source + ABI)
    routes               local_expert (device) and route_args (its host-side ABI)
    common               FP4 tiles: Shape, scale tables, row map, epilogues
    gemm_fma, gemm_mma   the block GEMM on CUDA cores / tensor cores; gemm picks one
    route_pack, fc1, fc2, decode, dequant   the kernels
"""
from __future__ import annotations

__all__ = ["builder", "KERNELS"]

# LaunchKey.kernel -> (module, builder function)
KERNELS = {
    "route_pack": ("route_pack", "build"),
    "fc1": ("fc1", "build"),
    "fc2": ("fc2", "build"),
    "combine": ("fc2", "build_combine"),
    "decode_fc1": ("decode", "build_fc1"),
    "decode_fc2": ("decode", "build_fc2"),
    "dequant_w13": ("dequant", "build_w13"),
    "dequant_w2": ("dequant", "build_w2"),
}


def builder(kernel: str):
    """``build(key) -> KernelSpec`` of the kernel named ``kernel`` (imported on
    first use: numba compiles nothing here, but its import is not free)."""
    if kernel not in KERNELS:
        raise KeyError(f"kernel {kernel!r}: expected one of {tuple(KERNELS)}")
    mod, fn = KERNELS[kernel]
    if mod == "route_pack":
        from . import route_pack as m
    elif mod == "fc1":
        from . import fc1 as m
    elif mod == "fc2":
        from . import fc2 as m
    elif mod == "decode":
        from . import decode as m
    else:
        from . import dequant as m
    return getattr(m, fn)
