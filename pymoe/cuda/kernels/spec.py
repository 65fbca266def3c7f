"""KernelSpec: a kernel as Python source in Numba's CUDA dialect plus its ABI.

Every kernel module's ``build(key) -> KernelSpec`` returns one; the launch layer
(pymoe/cuda/launch.py) compiles it with Numba and launches it through CuPy.

ABI codes, one per argument: 'u1[]' 'u2[]' 'f2[]' 'u4[]' 'i4[]' 'f4[]' (1-D C
arrays, passed flat) or 'i8' / 'f4' scalars.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from numba import types

__all__ = ["KernelSpec", "ARRAY_TYPES", "NUMPY_TYPES"]

ARRAY_TYPES = {
    "u1[]": types.Array(types.uint8, 1, "C"),
    "u2[]": types.Array(types.uint16, 1, "C"),
    "f2[]": types.Array(types.float16, 1, "C"),
    "u4[]": types.Array(types.uint32, 1, "C"),
    "i4[]": types.Array(types.int32, 1, "C"),
    "f4[]": types.Array(types.float32, 1, "C"),
    "i8": types.int64,
    "f4": types.float32,
}
NUMPY_TYPES = {"u1[]": np.uint8, "u2[]": np.uint16, "f2[]": np.float16, "u4[]": np.uint32,
               "i4[]": np.int32, "f4[]": np.float32}


@dataclass(frozen=True)
class KernelSpec:
    """pyfunc: the kernel; argtypes: one ABI code per argument; threads per CTA;
    arch_specific: compiled for the device's arch-specific target (sm_90a: wgmma),
    which runs on that compute capability only; max_regs: a register cap for
    ptxas (PTX .maxnreg), e.g. to fit one more CTA an SM; dyn_smem: bytes of
    dynamic shared memory every launch passes (the kernel's
    ``cuda.shared.array(0, ...)``; past 48 KB the launch layer opts the
    function in when it loads it)."""
    pyfunc: Callable
    argtypes: tuple[str, ...]
    threads: int
    arch_specific: bool = False
    max_regs: int | None = None
    dyn_smem: int = 0

    @property
    def signature(self):
        return tuple(ARRAY_TYPES[a] for a in self.argtypes)
