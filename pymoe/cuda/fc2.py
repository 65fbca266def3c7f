"""FC2 (CUDA twin of pymoe/ref/fc2.py): down projection per packed route, then
the router-weighted sum over top-k in j order (no atomics: bit-identical runs).

Shape legend: T tokens, k top-k, R = T*k, E, H, I, B block, S slots.

    fc2      grid (ceil(H/64), S/B): route_out[pri[s], n] = w * (W2[e] @ a[s] * g2 + b2)
    combine  grid (ceil(H/128), T):  y[t, n] = round(sum_{j valid} route_out[t*k+j, n])
"""
from __future__ import annotations

from numba import cuda, float32, int64

from ..geometry import LaunchKey
from .gemm import (THREADS, TILE_ROWS, activation_arg, activation_code, make_fc2_epilogue,
                   make_tile_gemm, shape_of)
from .intrinsics import act_code, make_act_io
from .launch import KernelSpec, register, resolve
from .route_pack import local_expert, route_args

__all__ = ["fc2", "combine"]

COMBINE_TN = 128


@register("fc2")
def build(key: LaunchKey) -> KernelSpec:
    sh = shape_of(key, "w2")
    b = key.block
    gemm = make_tile_gemm(key, sh, b, gather_tokens=False)
    hid = key.hidden_size
    epi = make_fc2_epilogue(key)
    acc_n = b * TILE_ROWS

    def kernel(a, pri, beid, n_routes, top_k, tw, w, s, lut, g2, b2, route_out):
        tid = cuda.threadIdx.x
        n0 = cuda.blockIdx.x * TILE_ROWS
        blk = cuda.blockIdx.y
        e = int64(beid[blk])
        if e < 0:
            return
        acc = cuda.shared.array(acc_n, float32)
        gemm(acc, blk, e, n0, a, w, s, lut, pri, n_routes, top_k, tw)
        for idx in range(tid, b * TILE_ROWS, THREADS):
            m = idx // TILE_ROWS
            c = idx % TILE_ROWS
            n = n0 + c
            r = int64(pri[blk * b + m])
            if n < hid and r < n_routes:
                route_out[r * hid + n] = epi(acc[idx], e, n, r, tw, g2, b2)

    return KernelSpec(kernel, (activation_code(key.dtype), "i4[]", "i4[]", "i8", "i8", "f4[]",
                               "u4[]", "u1[]",
                               "f4[]", "f4[]", "f4[]", "f4[]"), THREADS)


@register("combine")
def build_combine(key: LaunchKey) -> KernelSpec:
    _, store, _ = make_act_io(key.dtype)
    hid = key.hidden_size

    def kernel(route_out, ids, stride, top_k, emap, has_map, num_ids, out):
        n = cuda.blockIdx.x * COMBINE_TN + cuda.threadIdx.x
        t = cuda.blockIdx.y
        if n >= hid:
            return
        y = float32(0.0)
        for j in range(top_k):
            r = t * top_k + j
            if local_expert(ids, stride, r, emap, has_map, num_ids) >= 0:
                y += route_out[r * hid + n]
        store(out, t * hid + n, y)

    return KernelSpec(kernel, ("f4[]", "i4[]", "i8", "i8", "i4[]", "i8", "i8",
                               act_code(key.dtype)),
                      COMBINE_TN)


def fc2(intermediate, experts, topk_weights, packed_route_indices, block_expert_ids,
        route_out, *, top_k: int, key: LaunchKey, stream=None, prepare: bool = False):
    """pymoe.ref.fc2 on device arrays (one launch over every planned block)."""
    d = experts._device_copy
    kern = resolve(key, stream)
    return kern.launch((-(-experts.hidden_size // TILE_ROWS), block_expert_ids.size),
                (activation_arg(kern, intermediate), packed_route_indices, block_expert_ids,
                 route_out.shape[0],
                 top_k, topk_weights, d["w2_words"], experts.w2_scales, d["scale_lut"],
                 experts.w2_global, experts.w2_bias, route_out), stream, prepare=prepare)


def combine(route_out, topk_ids, expert_map, num_experts: int, out, *, key: LaunchKey,
            stream=None, prepare: bool = False):
    """pymoe.ref.combine on device arrays (one launch)."""
    ids, stride, has_map, num_ids = route_args(topk_ids, expert_map, num_experts)
    t, k = topk_ids.shape
    kern = resolve(key, stream)
    return kern.launch((-(-out.shape[1] // COMBINE_TN), t),
                       (route_out, ids, stride, k, expert_map, has_map, num_ids, out),
                       stream, prepare=prepare)
