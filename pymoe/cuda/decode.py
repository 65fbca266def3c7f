"""Decode (CUDA twin of pymoe/ref/decode.py): small T, no route packing; every
route reads its expert straight from topk_ids.

    decode_fc1  one launch, grid (ceil(I / key.tile_n), R)
    decode_fc2  one launch, grid (ceil(H / key.tile_n), T)
The kernels are pymoe/cuda/kernels/decode.py.
"""
from __future__ import annotations

from ..geometry import LaunchKey
from .kernels.routes import route_args
from .launch import PreparedLaunch, launch_stream, resolve

__all__ = ["decode_fc1", "decode_fc2"]


def prepare_decode_fc1(x, topk_ids, expert_map, experts, topk_weights, intermediate, *,
                       key: LaunchKey, stream=None) -> PreparedLaunch:
    ids, stride, emap, has_map, num_ids = route_args(topk_ids, expert_map, experts.num_experts)
    t, k = topk_ids.shape
    return resolve(key, stream).prepare(
        (-(-experts.intermediate_size // key.tile_n), t * k),
        (x, ids, stride, k, emap, has_map, num_ids, topk_weights, experts.w13_words,
         experts.w13_scales, experts.scale_lut, experts.w13_global, experts.w13_bias,
         intermediate))


def decode_fc1(x, topk_ids, expert_map, experts, topk_weights, intermediate, *,
               key: LaunchKey, stream=None) -> None:
    """pymoe.ref.decode.decode_fc1 on device arrays, enqueued on ``stream``."""
    s = launch_stream(stream)
    prepare_decode_fc1(x, topk_ids, expert_map, experts, topk_weights, intermediate,
                       key=key, stream=s)(s)


def prepare_decode_fc2(intermediate, topk_ids, expert_map, experts, topk_weights, out, *,
                       key: LaunchKey, stream=None) -> PreparedLaunch:
    ids, stride, emap, has_map, num_ids = route_args(topk_ids, expert_map, experts.num_experts)
    t, k = topk_ids.shape
    return resolve(key, stream).prepare(
        (-(-experts.hidden_size // key.tile_n), t),
        (intermediate, ids, stride, k, emap, has_map, num_ids, topk_weights,
         experts.w2_words, experts.w2_scales, experts.scale_lut, experts.w2_global,
         experts.w2_bias, out))


def decode_fc2(intermediate, topk_ids, expert_map, experts, topk_weights, out, *,
               key: LaunchKey, stream=None) -> None:
    """pymoe.ref.decode.decode_fc2 on device arrays, enqueued on ``stream``."""
    s = launch_stream(stream)
    prepare_decode_fc2(intermediate, topk_ids, expert_map, experts, topk_weights, out,
                       key=key, stream=s)(s)
