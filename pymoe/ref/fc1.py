"""FC1 (NumPy twin): gate/up projection + activation over packed routes.

Shape legend: T tokens, k top-k, R = T*k, E experts, H hidden, I intermediate,
F = 2I gated / I relu2, S packed slots.

    for expert e, slot s in [off[e], off[e+1]) with route r = pri[s] < R:
        h1 = (W13q[e] @ x[r // k]) * global13[e] + b13[e]     fp32
        intermediate[s] = round_dtype(act(h1))                 [S, I]
    padding slots are written with 0.

Rounding points (DESIGN section 1): x widened exactly; with
apply_router_weight_on_input, x*w is rounded to the activation dtype first;
the product accumulates in fp32; the activation output is rounded once.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import from_float32, round_to, to_float32
from .dequant import dequant

__all__ = ["fc1", "activate", "expert_fc1"]


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
        if experts.activation == "relu2":
            h = h * g[0]
        else:
            i = experts.intermediate_size
            h = np.concatenate([h[:, :i] * g[0], h[:, i:] * g[1]], axis=1)
    if experts.w13_bias is not None:
        h = h + np.asarray(experts.w13_bias, np.float32)[e]
    return activate(h.astype(np.float32, copy=False), experts.activation,
                    experts.intermediate_size, experts.swiglu_limit, experts.swiglu_alpha)


def route_rows(x, topk_weights, routes, top_k: int, dtype: str,
               apply_router_weight_on_input: bool) -> np.ndarray:
    """fp32 activation rows fed to FC1 for flat routes ``routes``."""
    xs = to_float32(x[routes // top_k], dtype)
    if apply_router_weight_on_input:
        w = np.asarray(topk_weights, np.float32).ravel()[routes]
        xs = round_to(xs * w[:, None], dtype)
    return xs


def fc1(x, experts, topk_weights, packed_route_indices, expert_offsets, intermediate,
        *, top_k: int, dtype: str, apply_router_weight_on_input: bool = False) -> None:
    r = x.shape[0] * top_k
    intermediate[...] = 0
    for e in range(experts.num_experts):
        lo, hi = int(expert_offsets[e]), int(expert_offsets[e + 1])
        if lo == hi:
            continue
        slots = np.arange(lo, hi)
        routes = packed_route_indices[lo:hi].astype(np.int64)
        keep = routes < r
        xs = route_rows(x, topk_weights, routes[keep], top_k, dtype,
                        apply_router_weight_on_input)
        intermediate[slots[keep]] = from_float32(expert_fc1(xs, experts, e), dtype)
