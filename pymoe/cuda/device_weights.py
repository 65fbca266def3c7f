"""Prepared weights on one GPU: ``to_device(experts) -> DeviceWeights``.

A DeviceWeights is an ExpertWeights whose arrays live on one device (CuPy), plus
the typed views the kernels read (the packed weights as uint32 words, the scale
byte -> value table).  Uploads are cached per host object and device, so calling
``to_device`` on every forward costs a dictionary lookup.  Under Numba's CUDA
simulator the "device" arrays are the host arrays themselves.

    ew_d = pymoe.cuda.to_device(ew)            # once per model and GPU
    ew_d.w13_words                              # uint32 [E * F * Kp/8]
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ..weights import ExpertWeights
from .kernels.common import scale_lut
from .kernels.intrinsics import SIM

__all__ = ["DeviceWeights", "to_device"]


@dataclass(frozen=True, kw_only=True, eq=False)
class DeviceWeights(ExpertWeights):
    """ExpertWeights on device ``device_id``, with the kernels' views of them:

    w13_words / w2_words  uint32 views of w13 / w2 (8 FP4 values per word)
    scale_lut             float32 [256]: scale byte -> its value / 4 (E8M0 or E4M3)
    """
    w13_words: Any
    w2_words: Any
    scale_lut: Any
    device_id: int

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", device_id={self.device_id})"


# host ExpertWeights -> {device id: DeviceWeights}; entries go with the host object
_UPLOADS: "weakref.WeakKeyDictionary[ExpertWeights, dict]" = weakref.WeakKeyDictionary()


def _current_device() -> int:
    if SIM:
        return 0
    import cupy
    return cupy.cuda.runtime.getDevice()


def to_device(experts: ExpertWeights) -> DeviceWeights:
    """Upload prepared weights to the current device (once; later calls hit a
    cache).  DeviceWeights pass through unchanged."""
    if isinstance(experts, DeviceWeights):
        return experts
    if not isinstance(experts, ExpertWeights):
        raise TypeError(f"experts: expected pymoe.ExpertWeights, got {type(experts).__name__}")
    if experts.device != "cpu":
        raise TypeError(f"experts: on {experts.device!r}; to_device takes host weights "
                        "(pymoe.prepare_weights output)")
    dev = _current_device()
    per = _UPLOADS.setdefault(experts, {})
    hit = per.get(dev)
    if hit is not None:
        return hit
    if SIM:
        xp, device, arrays = np, "cpu", experts.arrays()
    else:
        import cupy as xp
        device = "cuda"
        arrays = {n: xp.asarray(a) for n, a in experts.arrays().items()}
    base = {f.name: getattr(experts, f.name) for f in fields(ExpertWeights)}
    base.update(arrays, device=device)
    d = DeviceWeights(**base,
                      w13_words=arrays["w13"].reshape(-1).view(xp.uint32),
                      w2_words=arrays["w2"].reshape(-1).view(xp.uint32),
                      scale_lut=xp.asarray(scale_lut(experts.format)),
                      device_id=dev)
    per[dev] = d
    return d
