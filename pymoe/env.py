"""Environment variables: one helper, one prefix (PYMOE_).  All are listed in the
README's table.

    PYMOE_CACHE_DIR     disk cache of compiled kernels (default $XDG_CACHE_HOME/pymoe
                        or ~/.cache/pymoe)
    PYMOE_DISK_CACHE    0 disables the disk cache (default 1)
    PYMOE_GEMM          packed-regime block GEMM on the GPU: auto (default: wgmma on
                        sm_90 when the weights' scales fold exactly, else mma), mma
                        (tensor cores, mma.sync), wgmma (Hopper's warpgroup MMA, sm_90
                        only) or fma (the plain CUDA-core GEMM the simulator runs); read
                        here only (``gemm_variant``), carried by LaunchKey.gemm
    PYMOE_PDL           0 launches every kernel as an ordinary launch (default 1:
                        decode_fc2 and the combine of a decode call, fc1, fc2 and
                        the combine of a packed call as programmatic dependent
                        launches on sm_90+, launch.pdl_enabled)
"""
from __future__ import annotations

import os

__all__ = ["get_str", "get_bool", "gemm_variant"]

KNOWN = ("PYMOE_CACHE_DIR", "PYMOE_DISK_CACHE", "PYMOE_GEMM", "PYMOE_PDL", "PYMOE_HYPOTHESIS_PROFILE",
         "PYMOE_FUZZ_EXAMPLES", "PYMOE_FUZZ_SEED", "PYMOE_FUZZ_SHARD")


def _check(name: str) -> None:
    if name not in KNOWN:
        raise KeyError(f"{name} is not a pymoe environment variable ({KNOWN})")


def get_str(name: str, default: str | None = None) -> str | None:
    _check(name)
    v = os.environ.get(name)
    return default if v in (None, "") else v


def get_bool(name: str, default: bool) -> bool:
    _check(name)
    v = os.environ.get(name)
    if v in (None, ""):
        return default
    if v.lower() in ("0", "false", "no", "off"):
        return False
    if v.lower() in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{name}={v!r}: expected 0 or 1")


def gemm_variant() -> str:
    """The packed regime's block GEMM as asked (which also says whether MXFP4's
    decode keys fold their scales: geometry.decode_folds): 'auto' (default),
    'mma' (tensor cores), 'wgmma' (Hopper's warpgroup MMA, sm_90a only) or 'fma'.  Numba's
    simulator (NUMBA_ENABLE_CUDASIM=1) cannot run inline PTX, so it always gets
    'fma'.  'auto' is settled per device and weights by geometry.pick_gemm.  The one
    place that reads PYMOE_GEMM: launch keys carry the choice (LaunchKey.gemm)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "fma"
    v = get_str("PYMOE_GEMM", "auto")
    if v not in ("auto", "mma", "fma", "wgmma"):
        raise ValueError(f"PYMOE_GEMM={v!r}: expected 'auto', 'mma', 'wgmma' or 'fma'")
    return v
