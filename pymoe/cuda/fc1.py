"""FC1 (CUDA twin of pymoe/ref/fc1.py): packed routes x w13 + activation.

One launch over every planned block (grid: ceil(I / key.tile_n) x blocks); the
kernel is pymoe/cuda/kernels/fc1.py.  ``experts`` are DeviceWeights
(pymoe.cuda.to_device).
"""
from __future__ import annotations

from ..geometry import LaunchKey, gemm_block_ctas, gemm_reads_v2
from ..plan import check_packed_rows
from ..ref.fc1 import check_routes
from .kernels.routes import route_args
from .kernels.common import activation_arg
from .device_weights import check_gemm_scales
from .launch import PreparedLaunch, launch_stream, resolve

__all__ = ["fc1"]


def prepare_fc1(x, experts, topk_weights, packed_route_indices, block_expert_ids,
                intermediate, *, top_k: int, key: LaunchKey, stream=None,
                dependent: bool = False, routes=None) -> PreparedLaunch:
    """``dependent``: a dependent launch (launch.Kernel.prepare) after route_pack.
    ``routes``: (topk_ids, expert_map, expert_offsets, packed_route_count) when the
    key packs its own blocks (pymoe.ref.fc1)."""
    check_routes(routes, key)
    check_gemm_scales(experts, key)
    check_packed_rows(experts, (key,))
    kern = resolve(key, stream)
    v2 = gemm_reads_v2(key.gemm, key.block)
    extra = ()
    if routes is not None:
        ids, emap, offsets, count = routes
        extra = route_args(ids, emap, experts.num_experts) + (experts.num_experts, offsets,
                                                              count)
    return kern.prepare(
        (-(-experts.intermediate_size // key.tile_n),
         block_expert_ids.size * gemm_block_ctas(key.gemm, key.block)),
        (activation_arg(kern, x), packed_route_indices, block_expert_ids,
         x.shape[0] * top_k, top_k, topk_weights,
         experts.w13_v2 if v2 else experts.w13_words,
         experts.w13_v2_scales if v2 else experts.w13_scales,
         experts.w13_global, experts.w13_bias, intermediate) + extra,
        dependent=dependent)


def fc1(x, experts, topk_weights, packed_route_indices, block_expert_ids, intermediate,
        *, top_k: int, key: LaunchKey, stream=None, routes=None) -> None:
    """pymoe.ref.fc1.fc1 on device arrays, enqueued on ``stream``."""
    s = launch_stream(stream)
    prepare_fc1(x, experts, topk_weights, packed_route_indices, block_expert_ids,
                intermediate, top_k=top_k, key=key, stream=s, routes=routes)(s)
