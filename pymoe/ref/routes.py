"""Which local expert each route goes to (NumPy twin of
pymoe/cuda/kernels/routes.py::local_expert).

Shape legend: T tokens, k top-k, E local experts, G experts in the id space.

    local_expert_ids(topk_ids, expert_map, E)[t, j] = e in [0, E), or -1 when
        the id is outside [0, G) or the expert map sends it outside [0, E)
        (a host map is validated by bind; a device map is not, and a value past
        the local experts makes the route invalid instead of reading past them)
    block_slots(block_expert_ids, e, B) = the slots of the blocks e owns, in order
    pack_routes(...): route_pack's four buffers (pymoe/ref/route_pack.py), also
        what a self-packing fc1 writes (pymoe/ref/fc1.py)
"""
from __future__ import annotations

import numpy as np

__all__ = ["local_expert_ids", "block_slots", "pack_routes"]


def local_expert_ids(topk_ids, expert_map, num_experts: int) -> np.ndarray:
    """[T, k] local expert id of every route, -1 where the route is invalid
    (id outside the id space, or mapped to -1 by the expert map)."""
    ids = np.asarray(topk_ids).astype(np.int64)
    if expert_map is None:
        return np.where((ids >= 0) & (ids < num_experts), ids, -1)
    m = np.asarray(expert_map).astype(np.int64)
    inside = (ids >= 0) & (ids < m.shape[0])
    loc = np.where(inside, m[np.clip(ids, 0, m.shape[0] - 1)], -1)
    return np.where((loc >= 0) & (loc < num_experts), loc, -1)


def block_slots(block_expert_ids, e: int, block: int) -> np.ndarray:
    """Slots of the blocks expert e owns (block_expert_ids[b] == e), in order."""
    blocks = np.flatnonzero(np.asarray(block_expert_ids) == e)
    return (blocks[:, None] * block + np.arange(block)).ravel()


def pack_routes(topk_ids, expert_map, num_experts: int, block: int, expert_offsets,
                packed_route_indices, block_expert_ids, packed_route_count) -> None:
    """Fill route_pack's four buffers in place (pymoe/ref/route_pack.py's
    docstring says what they hold)."""
    loc = local_expert_ids(topk_ids, expert_map, num_experts).ravel()   # [R]
    r = loc.shape[0]
    valid = np.flatnonzero(loc >= 0)                                     # [Rv]
    counts = np.bincount(loc[valid], minlength=num_experts)              # [E]
    padded = -(-counts // block) * block
    expert_offsets[0] = 0
    np.cumsum(padded, out=expert_offsets[1:])
    total = int(expert_offsets[num_experts])
    packed_route_count[0] = total
    packed_route_indices[:] = r
    order = valid[np.argsort(loc[valid], kind="stable")]                 # [Rv] by expert, then r
    starts = np.cumsum(counts) - counts                                  # unpadded group starts
    rank = np.arange(order.shape[0]) - starts[loc[order]]
    packed_route_indices[expert_offsets[loc[order]] + rank] = order
    b_start = np.arange(block_expert_ids.shape[0]) * block
    owner = np.searchsorted(expert_offsets[1:], b_start, side="right")
    block_expert_ids[:] = np.where(b_start < total, owner, -1)
