"""FC1 (CUDA twin of pymoe/ref/fc1.py): packed routes x w13 + activation.

Shape legend: T tokens, k top-k, R = T*k, E, H, I, F rows of w13, B block, S slots.

    grid (ceil(I/TN), S/B): CTA (n-tile, block b) computes, for the B slots of
    block b (expert block_expert_ids[b]), the TN intermediate columns n0.. :
        intermediate[s, n] = round(act(W13[e] @ x[pri[s] // k] ...)), 0 in padding
Blocks past the packed total (owner -1) write zeros.  FP4 is decoded in shared
memory per 32-value K chunk; bf16 weights never reach global memory.
"""
from __future__ import annotations

from numba import cuda, float32, int64

from ..geometry import LaunchKey, is_gated
from .gemm import (THREADS, TILE_ROWS, activation_arg, activation_code, make_fc1_epilogue,
                   make_tile_gemm, shape_of)
from .intrinsics import act_code, make_act_io
from .launch import KernelSpec, register, resolve

__all__ = ["fc1"]


def tile_n(activation: str) -> int:
    """Intermediate columns per CTA: 32 gate + 32 up rows, or 64 relu2 rows."""
    return TILE_ROWS // 2 if is_gated(activation) else TILE_ROWS


@register("fc1")
def build(key: LaunchKey) -> KernelSpec:
    sh = shape_of(key, "w13")
    b = key.block
    gemm = make_tile_gemm(key, sh, b, gather_tokens=True)
    epi = make_fc1_epilogue(key)
    _, store, _ = make_act_io(key.dtype)
    gated = is_gated(key.activation)
    tn = tile_n(key.activation)
    inter = key.intermediate_size
    acc_n = b * TILE_ROWS

    def kernel(x, pri, beid, n_routes, top_k, tw, w, s, lut, g13, b13, out):
        tid = cuda.threadIdx.x
        n0 = cuda.blockIdx.x * tn
        blk = cuda.blockIdx.y
        e = int64(beid[blk])
        if e < 0:
            for idx in range(tid, b * tn, THREADS):
                n = n0 + idx % tn
                if n < inter:
                    store(out, (blk * b + idx // tn) * inter + n, float32(0.0))
            return
        acc = cuda.shared.array(acc_n, float32)
        gemm(acc, blk, e, n0, x, w, s, lut, pri, n_routes, top_k, tw)
        for idx in range(tid, b * tn, THREADS):
            m = idx // tn
            c = idx % tn
            n = n0 + c
            if n < inter:
                slot = blk * b + m
                v = float32(0.0)
                if int64(pri[slot]) < n_routes:
                    up = acc[m * TILE_ROWS + tn + c] if gated else float32(0.0)
                    v = epi(acc[m * TILE_ROWS + c], up, e, n, g13, b13)
                store(out, slot * inter + n, v)

    return KernelSpec(kernel, (activation_code(key.dtype), "i4[]", "i4[]", "i8", "i8", "f4[]",
                               "u4[]", "u1[]", "f4[]", "f4[]", "f4[]", act_code(key.dtype)),
                      THREADS)


def fc1(x, experts, topk_weights, packed_route_indices, block_expert_ids, intermediate,
        *, top_k: int, key: LaunchKey, stream=None, prepare: bool = False):
    """pymoe.ref.fc1 on device arrays (one launch over every planned block).
    Takes block_expert_ids where the reference walks expert_offsets."""
    d = experts._device_copy
    kern = resolve(key, stream)
    return kern.launch((-(-experts.intermediate_size // tile_n(key.activation)),
                 block_expert_ids.size),
                (activation_arg(kern, x), packed_route_indices, block_expert_ids,
                 x.shape[0] * top_k, top_k,
                 topk_weights, d["w13_words"], experts.w13_scales, d["scale_lut"],
                 experts.w13_global, experts.w13_bias, intermediate), stream, prepare=prepare)
