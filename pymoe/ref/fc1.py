"""FC1 (NumPy twin of pymoe/cuda/fc1.py): gate/up projection + activation over
packed routes.

Shape legend: T tokens, k top-k, R = T*k, E experts, H hidden, I intermediate,
F = 2I gated / I relu2, S packed slots, B = key.block.

    for each block b owned by expert e = block_expert_ids[b], slot s of the block
    with route r = pri[s] < R:
        h1 = (W13q[e] @ x[r // k]) * global13[e] + b13[e]     fp32
        intermediate[s] = round_dtype(act(h1))                 [S, I]
    padding slots (and blocks past the total) are written with 0.

Rounding points: pymoe/ref/expert.py.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import from_float32
from ..geometry import LaunchKey
from .expert import expert_fc1, route_rows
from .routes import block_slots

__all__ = ["fc1"]


def fc1(x, experts, topk_weights, packed_route_indices, block_expert_ids, intermediate,
        *, top_k: int, key: LaunchKey, stream=None) -> None:
    """``stream`` is accepted for the twins' one signature and ignored (the
    reference runs synchronously on the host)."""
    r = x.shape[0] * top_k
    intermediate[...] = 0
    owners = np.asarray(block_expert_ids)
    for e in np.unique(owners[owners >= 0]):
        slots = block_slots(owners, e, key.block)
        routes = np.asarray(packed_route_indices)[slots].astype(np.int64)
        keep = routes < r
        xs = route_rows(x, topk_weights, routes[keep], top_k, key.dtype, key.router_on_input)
        intermediate[slots[keep]] = from_float32(expert_fc1(xs, experts, int(e)), key.dtype)
