"""FC1 (NumPy twin of pymoe/cuda/fc1.py): gate/up projection + activation over
packed routes.

Shape legend: T tokens, k top-k, R = T*k, E experts, H hidden, I intermediate,
F = 2I gated / I relu2, S packed slots, B = key.block.

    for each block b owned by expert e = block_expert_ids[b], slot s of the block
    with route r = pri[s] < R:
        h1 = (W13q[e] @ x[r // k]) * global13[e] + b13[e]     fp32
        intermediate[s] = round_dtype(act(h1))                 [S, I]
    padding slots (and blocks past the total) are written with 0.

key.self_pack (geometry.self_packs: small blocks, no route_pack launch): fc1
first fills the four route buffers itself, as route_pack would, from
``routes`` = (topk_ids, expert_map, expert_offsets, packed_route_count); the
CUDA twin's CTAs each pack their own block (cuda/kernels/block_pack.py
make_block_pack) and its n-tile 0 writes them.

Rounding points: pymoe/ref/expert.py.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import from_float32
from ..geometry import LaunchKey
from .expert import expert_fc1, route_rows
from .routes import block_slots, pack_routes

__all__ = ["fc1"]


def check_routes(routes, key: LaunchKey) -> None:
    """``routes`` is given exactly when fc1 packs its blocks itself (both twins)."""
    if key.self_pack and routes is None:
        raise ValueError("routes: this fc1 key packs its own blocks (key.self_pack), so it "
                         "needs routes=(topk_ids, expert_map, expert_offsets, "
                         "packed_route_count)")
    if not key.self_pack and routes is not None:
        raise ValueError("routes: only an fc1 key with self_pack takes routes (this one "
                         "reads the blocks route_pack wrote)")


def fc1(x, experts, topk_weights, packed_route_indices, block_expert_ids, intermediate,
        *, top_k: int, key: LaunchKey, stream=None, routes=None) -> None:
    """``stream`` is accepted for the twins' one signature and ignored (the
    reference runs synchronously on the host).  ``routes``: see the module doc."""
    check_routes(routes, key)
    if routes is not None:
        ids, emap, offsets, count = routes
        pack_routes(ids, emap, experts.num_experts, key.block, offsets, packed_route_indices,
                    block_expert_ids, count)
    r = x.shape[0] * top_k
    intermediate[...] = 0
    owners = np.asarray(block_expert_ids)
    for e in np.unique(owners[owners >= 0]):
        slots = block_slots(owners, e, key.block)
        routes = np.asarray(packed_route_indices)[slots].astype(np.int64)
        keep = routes < r
        xs = route_rows(x, topk_weights, routes[keep], top_k, key.dtype, key.router_on_input)
        intermediate[slots[keep]] = from_float32(expert_fc1(xs, experts, int(e)), key.dtype)
