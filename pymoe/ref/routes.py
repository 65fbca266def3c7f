"""Which local expert each route goes to (NumPy twin of
pymoe/cuda/kernels/routes.py::local_expert).

Shape legend: T tokens, k top-k, E local experts, G experts in the id space.

    local_expert_ids(topk_ids, expert_map, E)[t, j] = e in [0, E), or -1 when
        the id is outside [0, G) or the expert map sends it outside [0, E)
        (a host map is validated by bind; a device map is not, and a value past
        the local experts makes the route invalid instead of reading past them)
    block_slots(block_expert_ids, e, B) = the slots of the blocks e owns, in order
"""
from __future__ import annotations

import numpy as np

__all__ = ["local_expert_ids", "block_slots"]


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
