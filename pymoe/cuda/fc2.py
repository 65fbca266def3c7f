"""FC2 (CUDA twin of pymoe/ref/fc2.py): down projection per packed route, then
the router-weighted sum over top-k in j order (no atomics).

    fc2      one launch over every planned block: route_out[r] (fp32)
    combine  one launch: y[t] = round(sum_j route_out[t*k + j]) over valid routes
             (a dependent launch where the decode regime's decode_dependent says)
The kernels are pymoe/cuda/kernels/fc2.py.
"""
from __future__ import annotations

from ..geometry import LaunchKey, gemm_block_ctas, gemm_reads_v2
from ..plan import check_packed_rows
from .kernels.common import activation_arg
from .kernels.routes import route_args
from .device_weights import check_gemm_scales
from .launch import PreparedLaunch, launch_stream, resolve

__all__ = ["fc2", "combine"]


def prepare_fc2(intermediate, experts, topk_weights, packed_route_indices, block_expert_ids,
                route_out, *, key: LaunchKey, stream=None,
                dependent: bool = False) -> PreparedLaunch:
    """``dependent``: a dependent launch (launch.Kernel.prepare) after fc1."""
    check_gemm_scales(experts, key)
    check_packed_rows(experts, (key,))
    kern = resolve(key, stream)
    v2 = gemm_reads_v2(key.gemm, key.block)
    # top_k is an fc1 argument of the shared block GEMM; fc2 reads slot rows, not tokens
    return kern.prepare(
        (-(-experts.hidden_size // key.tile_n),
         block_expert_ids.size * gemm_block_ctas(key.gemm, key.block)),
        (activation_arg(kern, intermediate), packed_route_indices, block_expert_ids,
         route_out.shape[0], 1, topk_weights,
         experts.w2_v2 if v2 else experts.w2_words,
         experts.w2_v2_scales if v2 else experts.w2_scales,
         experts.w2_global, experts.w2_bias, route_out),
        dependent=dependent)


def fc2(intermediate, experts, topk_weights, packed_route_indices, block_expert_ids,
        route_out, *, key: LaunchKey, stream=None) -> None:
    """pymoe.ref.fc2.fc2 on device arrays, enqueued on ``stream``."""
    s = launch_stream(stream)
    prepare_fc2(intermediate, experts, topk_weights, packed_route_indices, block_expert_ids,
                route_out, key=key, stream=s)(s)


def prepare_combine(route_out, topk_ids, expert_map, num_experts: int, out, *,
                    key: LaunchKey, stream=None, dependent: bool = False) -> PreparedLaunch:
    """``dependent``: a dependent launch (launch.Kernel.prepare) after decode_fc2."""
    ids, stride, emap, has_map, num_ids = route_args(topk_ids, expert_map, num_experts)
    t, k = topk_ids.shape
    return resolve(key, stream).prepare(
        (-(-out.shape[1] // key.tile_n), t),
        (route_out, ids, stride, k, emap, has_map, num_ids, out), dependent=dependent)


def combine(route_out, topk_ids, expert_map, num_experts: int, out, *, key: LaunchKey,
            stream=None) -> None:
    """pymoe.ref.fc2.combine on device arrays, enqueued on ``stream``."""
    s = launch_stream(stream)
    prepare_combine(route_out, topk_ids, expert_map, num_experts, out, key=key, stream=s)(s)
