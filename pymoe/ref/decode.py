"""Decode (NumPy twin of pymoe/cuda/decode.py): small T, no route packing;
every route read straight from topk_ids.

Shape legend: T tokens, k top-k, R = T*k (r = t*k + j), E experts, H, I.

    decode_fc1: intermediate[r] = round_dtype(act(W13q[e_r] @ x[t] ...))  [R, I]
                (0 for invalid routes)
    decode_fc2: route_out[r] = w[r] * (W2q[e_r] @ a[r] * g2 + b2)    fp32 [R, H]
                (valid routes only), then fc2.combine: y[t] = round(sum_j in order)
Same rounding points as fc1 + fc2 + combine; the experts are taken in expert order,
as the CUDA twin's CTAs take them (one CTA row per active expert).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import from_float32, to_float32
from ..geometry import LaunchKey
from .expert import expert_fc1, expert_fc2, route_rows
from .routes import local_expert_ids

__all__ = ["decode_fc1", "decode_fc2"]


def decode_fc1(x, topk_ids, expert_map, experts, topk_weights, intermediate, *,
               key: LaunchKey, stream=None) -> None:
    """``stream``: accepted for the twins' one signature, ignored."""
    dtype = key.dtype
    k = topk_ids.shape[1]
    loc = local_expert_ids(topk_ids, expert_map, experts.num_experts).ravel()   # [R]
    intermediate[...] = 0
    for e in np.unique(loc[loc >= 0]):
        routes = np.flatnonzero(loc == e)
        xs = route_rows(x, topk_weights, routes, k, dtype, key.router_on_input)
        intermediate[routes] = from_float32(expert_fc1(xs, experts, int(e)), dtype)


def decode_fc2(intermediate, topk_ids, expert_map, experts, topk_weights, route_out, *,
               key: LaunchKey, stream=None) -> None:
    """route_out[r] = w[r] * (W2q[e_r] @ a[r] * g2 + b2) for every valid route, expert
    by expert in expert order as the CUDA twin's CTAs take them (w[r] = 1 with the
    router weight on the input); fc2.combine then sums j in order.
    ``stream``: accepted for the twins' one signature, ignored."""
    dtype = key.dtype
    loc = local_expert_ids(topk_ids, expert_map, experts.num_experts).ravel()   # [R]
    w = np.asarray(topk_weights, np.float32).ravel()
    for e in np.unique(loc[loc >= 0]):
        routes = np.flatnonzero(loc == e)
        h = expert_fc2(to_float32(intermediate[routes], dtype), experts, int(e))
        route_out[routes] = h if key.router_on_input else h * w[routes][:, None]
