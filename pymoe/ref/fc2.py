"""FC2 (NumPy twin): down projection per packed route, then the router-weighted
sum over top-k in j order (deterministic, no atomics).

Shape legend: T tokens, k top-k, R = T*k, E experts, H hidden, I intermediate, S slots.

    fc2:     route_out[r] = w[r] * ((W2q[e] @ a[s]) * global2[e] + b2[e])   fp32 [R, H]
             (w[r] = 1 with apply_router_weight_on_input)
    combine: y[t] = round_dtype(sum_{j valid, in order} route_out[t*k + j])  [T, H]
"""
from __future__ import annotations

import numpy as np

from ..dtypes import from_float32, to_float32
from .dequant import dequant
from .route_pack import local_expert_ids

__all__ = ["fc2", "combine", "expert_fc2"]


def expert_fc2(a: np.ndarray, experts, e: int) -> np.ndarray:
    """fp32 rows a [n, I] through expert e's down projection: fp32 [n, H]."""
    h = a @ dequant(experts, "w2", e, apply_global=False).T
    if experts.format == "nvfp4":
        h = h * np.asarray(experts.w2_global, np.float32)[e]
    if experts.w2_bias is not None:
        h = h + np.asarray(experts.w2_bias, np.float32)[e]
    return h.astype(np.float32, copy=False)


def fc2(intermediate, experts, topk_weights, packed_route_indices, expert_offsets,
        route_out, *, dtype: str, apply_router_weight_on_input: bool = False) -> None:
    r = route_out.shape[0]
    w = np.asarray(topk_weights, np.float32).ravel()
    for e in range(experts.num_experts):
        lo, hi = int(expert_offsets[e]), int(expert_offsets[e + 1])
        if lo == hi:
            continue
        routes = packed_route_indices[lo:hi].astype(np.int64)
        keep = routes < r
        routes = routes[keep]
        h = expert_fc2(to_float32(intermediate[lo:hi][keep], dtype), experts, e)
        if not apply_router_weight_on_input:
            h = h * w[routes][:, None]
        route_out[routes] = h


def combine(route_out, topk_ids, expert_map, num_experts: int, out, *, dtype: str) -> None:
    t, k = topk_ids.shape
    loc = local_expert_ids(topk_ids, expert_map, num_experts)            # [T, k]
    ro = route_out.reshape(t, k, -1)
    acc = np.zeros((t, ro.shape[2]), np.float32)                         # [T, H]
    for j in range(k):
        m = loc[:, j] >= 0
        acc[m] += ro[m, j]
    out[...] = from_float32(acc, dtype)
