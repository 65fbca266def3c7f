"""FC2 (NumPy twin of pymoe/cuda/fc2.py): down projection per packed route, then
the router-weighted sum over top-k in j order (deterministic, no atomics).

Shape legend: T tokens, k top-k, R = T*k, E experts, H hidden, I intermediate, S slots.

    fc2:     route_out[r] = w[r] * ((W2q[e] @ a[s]) * global2[e] + b2[e])   fp32 [R, H]
             (w[r] = 1 with apply_router_weight_on_input)
    combine: y[t] = round_dtype(sum_{j valid, in order} route_out[t*k + j])  [T, H]
"""
from __future__ import annotations

import numpy as np

from ..dtypes import from_float32, to_float32
from ..geometry import LaunchKey
from .expert import expert_fc2
from .routes import block_slots, local_expert_ids

__all__ = ["fc2", "combine"]


def fc2(intermediate, experts, topk_weights, packed_route_indices, block_expert_ids,
        route_out, *, key: LaunchKey, stream=None) -> None:
    """``stream``: accepted for the twins' one signature, ignored."""
    r = route_out.shape[0]
    w = np.asarray(topk_weights, np.float32).ravel()
    owners = np.asarray(block_expert_ids)
    for e in np.unique(owners[owners >= 0]):
        slots = block_slots(owners, e, key.block)
        routes = np.asarray(packed_route_indices)[slots].astype(np.int64)
        keep = routes < r
        routes = routes[keep]
        h = expert_fc2(to_float32(intermediate[slots[keep]], key.dtype), experts, int(e))
        if not key.router_on_input:
            h = h * w[routes][:, None]
        route_out[routes] = h


def combine(route_out, topk_ids, expert_map, num_experts: int, out, *, key: LaunchKey,
            stream=None) -> None:
    """``stream``: accepted for the twins' one signature, ignored."""
    t, k = topk_ids.shape
    loc = local_expert_ids(topk_ids, expert_map, num_experts)            # [T, k]
    ro = route_out.reshape(t, k, -1)
    acc = np.zeros((t, ro.shape[2]), np.float32)                         # [T, H]
    for j in range(k):
        m = loc[:, j] >= 0
        acc[m] += ro[m, j]
    out[...] = from_float32(acc, key.dtype)
