"""Route packing (CUDA twin of pymoe/ref/route_pack.py): one launch,
geometry.route_pack_grid(R) CTAs.

Same buffers, same contract, same signature as the reference; the kernel is
pymoe/cuda/kernels/route_pack.py.  ``prepare_route_pack`` returns the launch
without enqueuing it (the runner resolves every launch of a call first).
"""
from __future__ import annotations

from ..geometry import BLOCK_SIZES, ROUTE_PACK_MAX_EXPERTS, LaunchKey, route_pack_grid
from .kernels.routes import route_args
from .launch import PreparedLaunch, launch_stream, resolve

__all__ = ["route_pack"]


def prepare_route_pack(topk_ids, expert_map, num_experts: int, block: int, expert_offsets,
                       packed_route_indices, block_expert_ids, packed_route_count, *,
                       key: LaunchKey, stream=None) -> PreparedLaunch:
    if num_experts > ROUTE_PACK_MAX_EXPERTS:
        raise ValueError(f"num_experts={num_experts}: the route packer supports at most "
                         f"{ROUTE_PACK_MAX_EXPERTS}")
    if block not in BLOCK_SIZES:
        raise ValueError(f"block={block}: the route packer takes one of "
                         f"geometry.BLOCK_SIZES {BLOCK_SIZES}")
    ids, stride, emap, has_map, num_ids = route_args(topk_ids, expert_map, num_experts)
    ctas, tile = route_pack_grid(topk_ids.size)
    return resolve(key, stream).prepare(
        ctas, (ids, stride, topk_ids.size, emap, has_map, num_ids, num_experts, block,
               expert_offsets, packed_route_indices, packed_route_indices.size,
               block_expert_ids, block_expert_ids.size, packed_route_count, tile))


def route_pack(topk_ids, expert_map, num_experts: int, block: int, expert_offsets,
               packed_route_indices, block_expert_ids, packed_route_count, *,
               key: LaunchKey, stream=None) -> None:
    """pymoe.ref.route_pack.route_pack on device arrays, enqueued on ``stream``."""
    s = launch_stream(stream)
    prepare_route_pack(topk_ids, expert_map, num_experts, block, expert_offsets,
                       packed_route_indices, block_expert_ids, packed_route_count,
                       key=key, stream=s)(s)
