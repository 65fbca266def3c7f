"""One expert's FFN in NumPy: the math fc1, fc2 and decode share.

Shape legend: n rows, H hidden, I intermediate, F = 2I gated / I relu2.

    expert_fc1(xs [n, H] fp32, experts, e) -> act(W13q[e] @ xs * g13 + b13)  fp32 [n, I]
    expert_fc2(a [n, I] fp32, experts, e)  -> W2q[e] @ a * g2 + b2           fp32 [n, H]
    route_rows(x, w, routes, k, ...)       -> fp32 rows fed to FC1 for flat routes

Rounding points (docs/design.md section 1): x widened exactly; with
apply_router_weight_on_input, x*w is rounded to the activation dtype first; the
product accumulates in fp32; callers round the activation output once.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import round_to, to_float32
from ..geometry import gate_rows
from .dequant import dequant

__all__ = ["activate", "expert_fc1", "expert_fc2", "route_rows"]


def _sigmoid(v):
    with np.errstate(over="ignore"):
        return np.float32(1.0) / (np.float32(1.0) + np.exp(-v))


def activate(h: np.ndarray, activation: str, inter: int, limit: float | None,
             alpha: float | None) -> np.ndarray:
    """float32 [n, F] -> float32 [n, I]; gate rows first, then up (prepared order)."""
    if activation == "relu2":
        r = np.maximum(h, np.float32(0))
        return r * r
    gate, up = h[:, :inter], h[:, inter:]
    if limit is not None:
        lim = np.float32(limit)
        gate = np.minimum(gate, lim)
        up = np.clip(up, -lim, lim)
    if activation == "silu":
        return gate * _sigmoid(gate) * up
    a = np.float32(alpha)
    return gate * _sigmoid(a * gate) * (up + np.float32(1.0))


def expert_fc1(xs: np.ndarray, experts, e: int, w13=None) -> np.ndarray:
    """fp32 rows xs [n, H] through expert e: float32 [n, I], not yet rounded."""
    w = dequant(experts, "w13", e, apply_global=False) if w13 is None else w13
    h = xs @ w.T                                                          # [n, F]
    if experts.format == "nvfp4":
        g = np.asarray(experts.w13_global, np.float32)[e]
        gr = gate_rows(experts.activation, experts.intermediate_size)
        h = np.concatenate([h[:, :gr] * g[0], h[:, gr:] * g[1]], axis=1)
    if experts.w13_bias is not None:
        h = h + np.asarray(experts.w13_bias, np.float32)[e]
    return activate(h.astype(np.float32, copy=False), experts.activation,
                    experts.intermediate_size, experts.swiglu_limit, experts.swiglu_alpha)


def expert_fc2(a: np.ndarray, experts, e: int) -> np.ndarray:
    """fp32 rows a [n, I] through expert e's down projection: fp32 [n, H]."""
    h = a @ dequant(experts, "w2", e, apply_global=False).T
    if experts.format == "nvfp4":
        h = h * np.asarray(experts.w2_global, np.float32)[e]
    if experts.w2_bias is not None:
        h = h + np.asarray(experts.w2_bias, np.float32)[e]
    return h.astype(np.float32, copy=False)


def route_rows(x, topk_weights, routes, top_k: int, dtype: str,
               apply_router_weight_on_input: bool) -> np.ndarray:
    """fp32 activation rows fed to FC1 for flat routes ``routes``."""
    xs = to_float32(x[routes // top_k], dtype)
    if apply_router_weight_on_input:
        w = np.asarray(topk_weights, np.float32).ravel()[routes]
        xs = round_to(xs * w[:, None], dtype)
    return xs
