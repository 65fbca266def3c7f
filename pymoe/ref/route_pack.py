"""Route packing (NumPy twin of pymoe/cuda/route_pack.py): top-k ids -> routes
grouped per expert, padded to B.

Shape legend: T tokens, k top-k, R = T*k flat routes (r = t*k + j), E local
experts, B block size, S slot capacity (geometry.packed_slots), S/B blocks.

    packed_route_indices[expert_offsets[e] + i] = i-th route of expert e, in
        increasing r (stable); every other slot holds the sentinel R
    expert_offsets[e+1] - expert_offsets[e] = count_e rounded up to B
    block_expert_ids[b] = e owning slots [b*B, (b+1)*B), -1 past the total
    packed_route_count[0] = expert_offsets[E]

    >>> import numpy as np
    >>> ids = np.array([[1, 0], [1, 5]], np.int32)       # T=2, k=2, E=2: id 5 invalid
    >>> off = np.empty(3, np.int32); pri = np.empty(8, np.int32)
    >>> beid = np.empty(4, np.int32); cnt = np.empty(1, np.int32)
    >>> from pymoe.geometry import LaunchKey
    >>> key = LaunchKey("route_pack", "mxfp4", "silu", "bfloat16", 64, 64)
    >>> route_pack(ids, None, 2, 2, off, pri, beid, cnt, key=key)
    >>> off.tolist(), pri.tolist(), beid.tolist(), cnt.tolist()
    ([0, 2, 4], [1, 4, 0, 2, 4, 4, 4, 4], [0, 1, -1, -1], [4])
"""
from __future__ import annotations

from ..geometry import LaunchKey
from .routes import pack_routes

__all__ = ["route_pack"]


def route_pack(topk_ids, expert_map, num_experts: int, block: int, expert_offsets,
               packed_route_indices, block_expert_ids, packed_route_count, *,
               key: LaunchKey, stream=None) -> None:
    """Fill the four route buffers in place (see the module docstring).  ``key``
    and ``stream``: the twins' one signature (the reference needs neither)."""
    pack_routes(topk_ids, expert_map, num_experts, block, expert_offsets,
                packed_route_indices, block_expert_ids, packed_route_count)
