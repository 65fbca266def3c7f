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

from ..geometry import WGMMA_FOLD_BYTES, LaunchKey, wgmma_scale_fold_ok
from ..ref.layout import pack as layout_pack
from ..weights import ExpertWeights
from .kernels.intrinsics import SIM

__all__ = ["DeviceWeights", "to_device", "check_gemm_scales"]


@dataclass(frozen=True, kw_only=True, eq=False)
class DeviceWeights(ExpertWeights):
    """ExpertWeights on device ``device_id``, with the kernels' views of them:

    w13_words / w2_words  uint32 views of w13 / w2 (8 FP4 values per word)
    w13_v2 / w2_v2        uint32: the weights in layout v2 (pymoe/ref/layout.py),
                          flat, read by the decode kernels
    w13_v2_scales / w2_v2_scales  uint32 views of their v2 scale bytes
    scale_bytes           (lo, hi): the least and greatest scale byte of both
                          projections other than 255 (MXFP4 NaN); (0, 0) if none.
                          The wgmma GEMM checks them (geometry.wgmma_scale_fold_ok)

    Uploaded with ``packed_rows=False``, w13 / w2 / w13_scales / w2_scales and
    their word views are None: only layout v2 is on the GPU (half the memory).
    The decode kernels and the wgmma GEMM read v2 (geometry.gemm_reads_v2); a
    call whose kernels read the packed rows (the mma or fma GEMM, ``dequant``)
    is refused before any launch (pymoe.plan.check_packed_rows, at bind).
    """
    w13_words: Any
    w2_words: Any
    w13_v2: Any
    w13_v2_scales: Any
    w2_v2: Any
    w2_v2_scales: Any
    scale_bytes: tuple
    device_id: int

    @property
    def has_packed_rows(self) -> bool:
        return self.w13_words is not None

    @property
    def device_nbytes(self) -> int:
        """Bytes these weights hold on the GPU: the packed rows (when uploaded),
        layout v2, scales, globals and biases."""
        v2 = (self.w13_v2, self.w13_v2_scales, self.w2_v2, self.w2_v2_scales)
        return self.nbytes + sum(int(a.nbytes) for a in v2)

    def __repr__(self) -> str:
        return (super().__repr__()[:-1] + f", device_id={self.device_id}"
                + ("" if self.has_packed_rows else ", packed_rows=False") + ")")


# host ExpertWeights -> {device id: DeviceWeights}; entries go with the host object
_UPLOADS: "weakref.WeakKeyDictionary[ExpertWeights, dict]" = weakref.WeakKeyDictionary()


def _current_device() -> int:
    if SIM:
        return 0
    import cupy
    return cupy.cuda.runtime.getDevice()


# experts packed per step into layout v2 (bounds the temporaries: ~8 bytes per value)
_PACK_EXPERTS = 8


def _pack_v2(xp, experts: ExpertWeights, w, scales, which: str):
    """Layout v2 of one projection, packed where the arrays are (the device, for
    CuPy), a few experts at a time."""
    kw = dict(fmt=experts.format, which=which, activation=experts.activation,
              k_dim=experts.hidden_size if which == "w13" else experts.intermediate_size,
              intermediate_size=experts.intermediate_size)
    parts = [layout_pack(w[e:e + _PACK_EXPERTS], scales[e:e + _PACK_EXPERTS], **kw)
             for e in range(0, w.shape[0], _PACK_EXPERTS)]
    if len(parts) == 1:
        return parts[0]
    return xp.concatenate([p[0] for p in parts]), xp.concatenate([p[1] for p in parts])


def _scale_bytes(experts: ExpertWeights) -> tuple[int, int]:
    """(lo, hi) of the host scale bytes other than 255, both projections."""
    counts = sum(np.bincount(np.asarray(s, np.uint8).reshape(-1), minlength=256)
                 for s in (experts.w13_scales, experts.w2_scales))
    used = np.flatnonzero(counts[:255])
    return (int(used[0]), int(used[-1])) if used.size else (0, 0)


def to_device(experts: ExpertWeights, *, packed_rows: bool = True) -> DeviceWeights:
    """Upload prepared weights to the current device (once; later calls hit a
    cache) and wait for the upload, so a call on any stream may read them (the
    copies and the layout-v2 packing are enqueued on the current stream, which
    a non-blocking stream does not wait for).  DeviceWeights pass through
    unchanged.  packed_rows=False uploads layout v2 only (see DeviceWeights);
    an upload with the packed rows also serves later calls that ask for none."""
    if isinstance(experts, DeviceWeights):
        if packed_rows and not experts.has_packed_rows:
            raise ValueError("experts: DeviceWeights uploaded with packed_rows=False; "
                             "call to_device on the host weights for the packed rows")
        return experts
    if not isinstance(experts, ExpertWeights):
        raise TypeError(f"experts: expected pymoe.ExpertWeights, got {type(experts).__name__}")
    if experts.device != "cpu":
        raise TypeError(f"experts: on {experts.device!r}; to_device takes host weights "
                        "(pymoe.prepare_weights output)")
    dev = _current_device()
    per = _UPLOADS.setdefault(experts, {})
    hit = per.get(dev)
    if hit is not None and (hit.has_packed_rows or not packed_rows):
        return hit
    if SIM:
        xp, device, arrays = np, "cpu", experts.arrays()
    else:
        import cupy as xp
        device = "cuda"
        arrays = {n: xp.asarray(a) for n, a in experts.arrays().items()}
    base = {f.name: getattr(experts, f.name) for f in fields(ExpertWeights)}
    base.update(arrays, device=device)
    v2 = {}
    for which in ("w13", "w2"):
        words, scales = _pack_v2(xp, experts, arrays[which], arrays[which + "_scales"], which)
        v2[which + "_v2"] = words.reshape(-1)
        v2[which + "_v2_scales"] = scales.reshape(-1).view(xp.uint32)
    words = {n: arrays[n].reshape(-1).view(xp.uint32) for n in ("w13", "w2")}
    if not packed_rows:                 # v2 only: drop the packed rows (and scales)
        for n in ("w13", "w13_scales", "w2", "w2_scales"):
            base[n] = None
        words = {"w13": None, "w2": None}
    d = DeviceWeights(**base,
                      w13_words=words["w13"], w2_words=words["w2"],
                      **v2, scale_bytes=_scale_bytes(experts), device_id=dev)
    if not SIM:     # the uploads and the layout-v2 packing ran on the current stream:
        xp.cuda.get_current_stream().synchronize()   # done before any stream reads them
    per[dev] = d
    return d


def check_gemm_scales(experts: DeviceWeights, key: LaunchKey) -> None:
    """Raise (before any launch) when ``key``'s block GEMM cannot be exact on
    these weights: the wgmma GEMM (and a decode key that folds,
    geometry.decode_folds) folds MXFP4 scales into 16-bit weights."""
    if key.gemm != "wgmma":
        return
    lo, hi = experts.scale_bytes
    if not wgmma_scale_fold_ok(key.format, key.dtype, lo, hi):
        a, b = WGMMA_FOLD_BYTES[key.dtype]
        raise ValueError(
            f"{key.kernel}: PYMOE_GEMM=wgmma folds MXFP4 scales into {key.dtype} weights, "
            f"exact for E8M0 bytes {a}..{b} (2^{a - 127}..2^{b - 127}); these weights' "
            f"scale bytes span {lo}..{hi}. Use PYMOE_GEMM=mma for them")
