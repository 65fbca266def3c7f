"""FC1 kernel: packed routes x w13 + activation (launched by pymoe/cuda/fc1.py).

Shape legend: T tokens, k top-k, R = T*k, E, H, I, F rows of w13, B block, S slots,
TN = key.tile_n intermediate columns per CTA, Bc = geometry.gemm_cta_block routes
a CTA (B, or a sub-block of it on the GEMMs that read packed rows).

    grid (ceil(I/TN), S/Bc): CTA (n-tile, sub-block c) computes, for the Bc slots
    of c (expert block_expert_ids[c Bc // B]), the TN intermediate columns n0.. :
        intermediate[s, n] = round(act(W13[e] @ x[pri[s] // k] ...)), 0 in padding
Blocks past the packed total (owner -1) write zeros.  FP4 is decoded per 32-value
K chunk (in registers on tensor cores, in shared memory on CUDA cores); bf16
weights never reach global memory.
"""
from __future__ import annotations

from numba import cuda, float32, int32, int64, uint32, uint64

from ...geometry import (LaunchKey, acc_route_words, gemm_block_ctas, gemm_cta_block,
                         gemm_max_regs, gemm_m_tiles, gemm_reads_v2, gemm_threads, is_gated)
from .block_pack import make_block_pack
from .common import (ACC_ALIGN, TILE_ROWS, activation_code, epilogue_vec, lds_f4,
                     make_cta_expert, make_fc1_epilogue_parts, make_pack2, shape_of)
from .gemm import acc_tile_dyn_bytes, acc_tile_words, make_tile_gemm
from .intrinsics import act_code, make_act_io
from .ptx import pdl_trigger, pdl_wait, smem_u32, stg2
from .spec import KernelSpec

__all__ = ["build"]


def build(key: LaunchKey) -> KernelSpec:
    sh = shape_of(key, "w13")
    b = gemm_cta_block(key.gemm, key.block)     # routes a CTA: the block or a sub-block
    cta_expert = make_cta_expert(key)
    gemm = make_tile_gemm(key, sh, b, gather_tokens=True)
    consts, apply = make_fc1_epilogue_parts(key)
    _, store, _ = make_act_io(key.dtype)
    gated = is_gated(key.activation)
    mts = gemm_m_tiles(key.gemm, b)             # m-tiles a CTA, 64 weight rows each
    nthr = gemm_threads(key.gemm, b)
    rows = acc_route_words(key.gemm, b)         # tile words a route: its rows (+ pad)
    tn = key.tile_n
    tn1 = tn // mts                             # columns an m-tile
    assert tn1 == (TILE_ROWS // 2 if gated else TILE_ROWS), key
    inter = key.intermediate_size
    acc_n = acc_tile_words(key, b)              # b x rows, or more: the GEMM's B ring
    dyn = acc_tile_dyn_bytes(key, b)            # the tile in dynamic shared memory
    acc_shape = 0 if dyn else acc_n
    assert b <= nthr and nthr % tn == 0, (b, nthr, tn)
    vec = epilogue_vec(inter, tn, nthr, tn1)    # columns a thread of the epilogue
    groups = tn // vec                          # its column groups a route
    mstep = nthr // groups                      # its routes a pass
    pack2 = make_pack2(key.dtype)

    @cuda.jit(device=True, inline=True)
    def body(x, pri, beid, n_routes, top_k, tw, w, s, g13, b13, out, e, src, sb):
        """The block's GEMM and epilogue: expert e (< 0: past the packed total), its
        slots' routes at src[sb * b ...] (pri and the CTA's block, or the CTA's
        own packed copy in shared memory and 0)."""
        tid = cuda.threadIdx.x
        n0 = cuda.blockIdx.x * tn
        blk = cuda.blockIdx.y                   # the CTA's (sub-)block
        acc = cuda.shared.array(acc_shape, float32, alignment=ACC_ALIGN)  # (0: dynamic)
        live = cuda.shared.array(b, int32)          # slot m holds a route (1) or padding
        if e >= 0:                                  # (uniform in the CTA)
            gemm(acc, sb, e, n0, x, w, s, src, n_routes, top_k, tw)
        pdl_trigger()           # fc2 may be scheduled once every CTA is here (the last
        #                         wave: earlier ones would take the slots of later ones)
        if tid < b:                                  # one load a slot, not one an output
            live[tid] = int32(1) if e >= 0 and int64(src[sb * b + tid]) < n_routes \
                else int32(0)
        cuda.syncthreads()
        # a CTA past the packed total (e < 0) is all padding: the loop below writes
        # its zeros (expert 0's scales and biases loaded, never applied)
        e = max(e, int64(0))
        # thread tid takes columns c .. c + vec - 1 of routes m, m + mstep, ...:
        # the columns' scales and biases once, 32-bit tile indices, and an
        # unsigned output index stepped by a constant (no wraparound code)
        c = uint32(tid) % uint32(groups) * uint32(vec)
        m = uint32(tid) // uint32(groups)
        n = uint32(cuda.blockIdx.x * tn) + c
        if n < uint32(inter):   # (vec 4: inter % 4 == 0, so all 4 columns are)
            # m-tile c // tn1's 64 rows: its gate rows, then its up rows
            rc = (c // uint32(tn1)) * uint32(TILE_ROWS) + c % uint32(tn1)
            o = uint64(blk * b + m) * uint64(inter) + uint64(n)
            if vec == 1:
                gs, us, gb, ub = consts(e, n, g13, b13)
                while m < uint32(b):
                    v = float32(0.0)
                    if live[m] != 0:
                        r0 = m * uint32(rows) + rc
                        up = acc[r0 + uint32(tn1)] if gated else float32(0.0)
                        v = apply(acc[r0], up, gs, us, gb, ub)
                    store(out, o, v)
                    m = uint32(m + uint32(mstep))
                    o = uint64(o + uint64(mstep * inter))
            else:
                # 4 columns: one 16-byte tile load a part, one 8-byte store
                gs, us, gb0, ub0 = consts(e, n, g13, b13)
                _, _, gb1, ub1 = consts(e, n + uint32(1), g13, b13)
                _, _, gb2, ub2 = consts(e, n + uint32(2), g13, b13)
                _, _, gb3, ub3 = consts(e, n + uint32(3), g13, b13)
                base = smem_u32(acc)
                while m < uint32(b):
                    w0 = w1 = uint32(0)
                    if live[m] != 0:
                        r0 = m * uint32(rows) + rc
                        a0, a1, a2, a3 = lds_f4(acc, base, r0)
                        u0 = u1 = u2 = u3 = float32(0.0)
                        if gated:
                            u0, u1, u2, u3 = lds_f4(acc, base, r0 + uint32(tn1))
                        w0 = pack2(apply(a0, u0, gs, us, gb0, ub0),
                                   apply(a1, u1, gs, us, gb1, ub1))
                        w1 = pack2(apply(a2, u2, gs, us, gb2, ub2),
                                   apply(a3, u3, gs, us, gb3, ub3))
                    stg2(out, o, w0, w1)
                    m = uint32(m + uint32(mstep))
                    o = uint64(o + uint64(mstep * inter))

    if key.self_pack:
        # geometry.self_packs: no route_pack launch before this one; the CTA packs
        # its own block (and column 0 writes the route buffers for fc2)
        assert gemm_block_ctas(key.gemm, key.block) == 1, key
        block_pack = make_block_pack(nthr, b)

        def kernel(x, pri, beid, n_routes, top_k, tw, w, s, g13, b13, out, ids, stride,
                   emap, has_map, num_ids, n_exp, offsets, count):
            rt = cuda.shared.array(b, int32)        # the block's routes (n_routes: padding)
            e = int64(block_pack(cuda.blockIdx.y, ids, stride, n_routes, emap, has_map,
                                 num_ids, n_exp, pri, beid, offsets, count, rt))
            body(x, pri, beid, n_routes, top_k, tw, w, s, g13, b13, out, e, rt, 0)
        extra = ("i4[]", "i8", "i4[]", "i8", "i8", "i8", "i4[]", "i4[]")
    else:
        def kernel(x, pri, beid, n_routes, top_k, tw, w, s, g13, b13, out):
            blk = cuda.blockIdx.y
            pdl_wait()          # a dependent launch (sm_90): the route pack is done
            e = cta_expert(beid, pri, blk, n_routes)
            body(x, pri, beid, n_routes, top_k, tw, w, s, g13, b13, out, e, pri, blk)
        extra = ()

    sarg = "u4[]" if gemm_reads_v2(key.gemm, b) else "u1[]"   # v2 scale words
    return KernelSpec(kernel, (activation_code(key), "i4[]", "i4[]", "i8", "i8", "f4[]",
                               "u4[]", sarg, "f4[]", "f4[]", act_code(key.dtype))
                      + extra,
                      nthr, arch_specific=key.gemm == "wgmma",
                      max_regs=gemm_max_regs(key.gemm, b, key.router_on_input),
                      dyn_smem=dyn)
