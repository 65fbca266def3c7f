"""An independent float64 evaluation of the MoE layer, for checking the reference.

Dequantizes with ml_dtypes (not pymoe.formats), runs float64 matmuls and the
activation as docs/design.md section 1 writes it, and follows the rounding points only
where they are part of the contract's inputs (x is bf16/fp16 already).  Layouts
are handled from the *caller's* raw tensors, not pymoe's prepared copy.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

E2M1 = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def fp4_unpack(packed: np.ndarray) -> np.ndarray:
    """uint8 [..., K/2] -> float64 [..., K]: low nibble first."""
    lo = E2M1[packed & 0xF]
    hi = E2M1[packed >> 4]
    return np.stack([lo, hi], axis=-1).reshape(*packed.shape[:-1], -1)


def dequant_mx(packed, scales) -> np.ndarray:
    v = fp4_unpack(packed)
    k = v.shape[-1]
    s = scales.view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    return v * np.repeat(s, 32, axis=-1)[..., :k]


def dequant_nv(packed, scales, glob) -> np.ndarray:
    v = fp4_unpack(packed)
    s = scales.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    return v * np.repeat(s, 16, axis=-1) * np.asarray(glob, np.float64)[..., None, None]


def act(h, activation, inter, limit=None, alpha=None):
    if activation == "relu2":
        return np.maximum(h, 0) ** 2
    gate, up = h[..., :inter], h[..., inter:]
    if limit is not None:
        gate = np.minimum(gate, limit)
        up = np.clip(up, -limit, limit)
    if activation == "silu":
        return gate / (1 + np.exp(-gate)) * up
    return gate / (1 + np.exp(-alpha * gate)) * (up + 1)


def to_gate_up(w, layout, inter, axis):
    if layout == "gate_up" or w is None:
        return w
    if layout == "up_gate":
        idx = np.r_[inter:2 * inter, 0:inter]
    else:
        idx = np.r_[0:2 * inter:2, 1:2 * inter:2]
    return np.take(w, idx, axis=axis)


def moe_forward(x, w13, w2, topk_weights, topk_ids, *, activation="silu", b13=None,
                b2=None, limit=None, alpha=None, on_input=False, expert_map=None,
                round_dtype=None):
    """float64 y [T, H]; w13 [E, F, H] (gate_up order), w2 [E, H, I] float64.

    round_dtype: ml_dtypes/numpy dtype the intermediate is rounded to (the
    contract's rounding point), or None for a pure float64 evaluation."""
    x = np.asarray(x, np.float64)
    t, k = topk_ids.shape
    e_num, _, h = w13.shape[0], w13.shape[1], w13.shape[2]
    inter = w2.shape[2]
    y = np.zeros((t, h))
    for ti in range(t):
        for j in range(k):
            e = int(topk_ids[ti, j])
            if expert_map is not None:
                e = int(expert_map[e]) if 0 <= e < len(expert_map) else -1
            if not 0 <= e < e_num:
                continue
            xv = x[ti] * topk_weights[ti, j] if on_input else x[ti]
            if on_input and round_dtype is not None:
                xv = xv.astype(np.float32).astype(round_dtype).astype(np.float64)
            h1 = w13[e] @ xv + (0 if b13 is None else b13[e])
            a = act(h1, activation, inter, limit, alpha)
            if round_dtype is not None:
                a = a.astype(np.float32).astype(round_dtype).astype(np.float64)
            h2 = w2[e] @ a + (0 if b2 is None else b2[e])
            y[ti] += h2 if on_input else topk_weights[ti, j] * h2
    return y
