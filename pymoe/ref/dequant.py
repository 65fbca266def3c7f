"""Dequant (NumPy twin of pymoe/cuda/dequant.py): prepared FP4 weights ->
float32, for debugging and tests.

Shape legend: E experts, F rows of w13, H hidden, I intermediate.
    dequant(ew, "w13") -> float32 [E, F, H];  dequant(ew, "w2", e) -> [H, I]
NVFP4: (fp4 * e4m3) is exact in float32; the global multiplies that product
(the kernels apply it after the dot product instead, within tolerance).
"""
from __future__ import annotations

import numpy as np

from .. import formats
from ..geometry import gate_rows

__all__ = ["dequant"]


def dequant(experts, which: str, expert: int | None = None, *,
            apply_global: bool = True, stream=None) -> np.ndarray:
    """float32 weights of ``which`` ('w13' or 'w2'), one expert or all.
    ``stream``: accepted for the twins' one signature, ignored."""
    if which not in ("w13", "w2"):
        raise ValueError(f"which={which!r}: expected 'w13' or 'w2'")
    if expert is not None and not 0 <= int(expert) < experts.num_experts:
        raise ValueError(f"expert={expert}: expected 0 <= expert < {experts.num_experts}")
    sel = slice(None) if expert is None else expert
    k = experts.hidden_size if which == "w13" else experts.intermediate_size
    packed = np.asarray(getattr(experts, which))[sel]      # rows padded to Kp (>= K)
    scales = np.asarray(getattr(experts, which + "_scales"))[sel]
    if experts.format == "mxfp4":
        return formats.dequantize_mxfp4(packed, scales)[..., :k]
    w = formats.dequantize_nvfp4(packed, scales, np.float32(1.0))[..., :k]
    if not apply_global:
        return w
    g = np.asarray(getattr(experts, which + "_global"), np.float32)[sel]
    if which == "w2":
        return w * np.asarray(g, np.float32)[..., None, None]
    rows = w.shape[-2]
    gr = gate_rows(experts.activation, experts.intermediate_size)
    col = (np.arange(rows) >= gr).astype(np.int64)                       # [F] 0 gate, 1 up
    return w * np.take(g, col, axis=-1)[..., :, None]
