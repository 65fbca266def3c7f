"""Decode (CUDA twin of pymoe/ref/decode.py): small T, no route packing; every
CTA reads topk_ids itself and streams one active expert's layout-v2 tiles once
for all of that expert's routes.

    decode_fc1  one launch, grid geometry.decode_grid("w13", row tiles of w13, k-tiles, R, E)
    decode_fc2  one launch, the same over w2 -> route_out (fp32, valid routes)
(then fc2.combine sums each token's k routes in j order).  decode_fc2 is a
dependent launch after decode_fc1 where the runner asks (programmatic on sm_90:
launch.pdl_enabled; geometry.decode_dependent); called alone it is an ordinary
launch, since before its wait it reads topk_ids, which the kernel before it
may have written.
The kernels are pymoe/cuda/kernels/decode.py.
"""
from __future__ import annotations

from ..geometry import (DECODE_ROUTE_CAP, ROUTE_PACK_MAX_EXPERTS, LaunchKey, decode_grid,
                        v2_k_tiles, v2_row_tiles)
from ..interop import data_address
from .device_weights import check_gemm_scales
from .kernels.intrinsics import SIM
from .kernels.routes import route_args
from .launch import PreparedLaunch, launch_stream, resolve

__all__ = ["decode_fc1", "decode_fc2"]

_SMS: dict = {}


def _num_sms() -> int:
    """Streaming multiprocessors of the current device (cached per device)."""
    if SIM:
        return 1
    import cupy
    dev = cupy.cuda.runtime.getDevice()
    n = _SMS.get(dev)
    if n is None:
        n = _SMS[dev] = int(cupy.cuda.Device(dev).attributes["MultiProcessorCount"])
    return n


def _prepare(which: str, a, topk_ids, expert_map, experts, topk_weights, out, key, stream,
             dependent=False):
    e = experts.num_experts
    if e > ROUTE_PACK_MAX_EXPERTS:
        raise ValueError(f"experts: {e} local experts; the decode kernels take at most "
                         f"{ROUTE_PACK_MAX_EXPERTS}")
    t, k = topk_ids.shape
    r = t * k
    if r > DECODE_ROUTE_CAP:
        raise ValueError(f"topk_ids: {t} x {k} = {r} routes; the decode regime takes at most "
                         f"{DECODE_ROUTE_CAP} (geometry.decode_max_tokens)")
    ids, stride, emap, has_map, num_ids = route_args(topk_ids, expert_map, e)
    ntr = v2_row_tiles(which, key.activation, key.hidden_size, key.intermediate_size)
    if which == "w13":
        w, s, g, b = experts.w13_v2, experts.w13_v2_scales, experts.w13_global, experts.w13_bias
    else:
        w, s, g, b = experts.w2_v2, experts.w2_v2_scales, experts.w2_global, experts.w2_bias
    check_gemm_scales(experts, key)          # a folding key on weights that do not fold
    avec = int(data_address(a) % 4 == 0)
    return resolve(key, stream).prepare(
        decode_grid(which, ntr, v2_k_tiles(key.hidden_size if which == "w13"
                                       else key.intermediate_size), r, e, _num_sms()),
        (a, ids, stride, k, emap, has_map, num_ids, r, topk_weights, w, s, g, b, out, avec),
        dependent=dependent)


def prepare_decode_fc1(x, topk_ids, expert_map, experts, topk_weights, intermediate, *,
                       key: LaunchKey, stream=None) -> PreparedLaunch:
    return _prepare("w13", x, topk_ids, expert_map, experts, topk_weights, intermediate,
                    key, stream)


def decode_fc1(x, topk_ids, expert_map, experts, topk_weights, intermediate, *,
               key: LaunchKey, stream=None) -> None:
    """pymoe.ref.decode.decode_fc1 on device arrays, enqueued on ``stream``."""
    s = launch_stream(stream)
    prepare_decode_fc1(x, topk_ids, expert_map, experts, topk_weights, intermediate,
                       key=key, stream=s)(s)


def prepare_decode_fc2(intermediate, topk_ids, expert_map, experts, topk_weights, route_out,
                       *, key: LaunchKey, stream=None, dependent: bool = False
                       ) -> PreparedLaunch:
    """``dependent``: a dependent launch (launch.Kernel.prepare) right after
    decode_fc1 of the same call (the runner's chain)."""
    return _prepare("w2", intermediate, topk_ids, expert_map, experts, topk_weights,
                    route_out, key, stream, dependent)


def decode_fc2(intermediate, topk_ids, expert_map, experts, topk_weights, route_out, *,
               key: LaunchKey, stream=None) -> None:
    """pymoe.ref.decode.decode_fc2 on device arrays, enqueued on ``stream``."""
    s = launch_stream(stream)
    prepare_decode_fc2(intermediate, topk_ids, expert_map, experts, topk_weights, route_out,
                       key=key, stream=s)(s)
