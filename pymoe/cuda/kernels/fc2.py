"""FC2 kernels: down projection per packed route, then the router-weighted sum
over top-k in j order (no atomics: bit-identical runs).  Launched by
pymoe/cuda/fc2.py.

Shape legend: T tokens, k top-k, R = T*k, E, H, I, B block, S slots, TN = key.tile_n.

    fc2      grid (ceil(H/TN), S/Bc): route_out[pri[s], n] = w * (W2[e] @ a[s] * g2 + b2)
             (Bc = geometry.gemm_cta_block routes a CTA: B, or a sub-block of it;
             on wgmma's wide loop, blocks of 128 / 144, the outputs go from the
             accumulator registers to route_out: make_acc_stores)
    combine  grid (ceil(H/TN), T):   y[t, n] = round(sum_{j valid} route_out[t*k+j, n])
             (TN / COMBINE_VEC threads, COMBINE_VEC columns each)
"""
from __future__ import annotations

from numba import cuda, float32, int32, int64, uint32, uint64

from ...geometry import (COMBINE_CHUNK, COMBINE_MAX_K, COMBINE_VEC, WGMMA_V2_MTILES, LaunchKey,
                         acc_route_words, gemm_cta_block, gemm_max_regs, gemm_m_tiles,
                         gemm_reads_v2, gemm_threads)
from .common import (ACC_ALIGN, TILE_ROWS, activation_code, epilogue_vec, lds_f4,
                     make_cta_expert, make_fc2_epilogue_parts, shape_of)
from .gemm import acc_tile_dyn_bytes, acc_tile_words, make_tile_gemm
from .gemm_wgmma_v2 import acc_post, step_fn
from .intrinsics import act_code, as_bits, as_float, make_act_io
from .ptx import gaddr, ld_g4, make_stg_f32_if, pdl_trigger, pdl_wait, smem_u32, stg4
from .routes import local_expert
from .spec import KernelSpec

__all__ = ["build", "build_combine"]


def build(key: LaunchKey) -> KernelSpec:
    sh = shape_of(key, "w2")
    b = gemm_cta_block(key.gemm, key.block)     # routes a CTA: the block or a sub-block
    consts, apply = make_fc2_epilogue_parts(key)
    nthr = gemm_threads(key.gemm, b)
    dyn = acc_tile_dyn_bytes(key, b)            # the tile in dynamic shared memory
    sarg = "u4[]" if gemm_reads_v2(key.gemm, b) else "u1[]"   # v2 scale words
    sig = (activation_code(key), "i4[]", "i4[]", "i8", "i8", "f4[]", "u4[]", sarg,
           "f4[]", "f4[]", "f4[]")
    spec = dict(arch_specific=key.gemm == "wgmma", max_regs=gemm_max_regs(key.gemm, b),
                dyn_smem=dyn)
    if gemm_reads_v2(key.gemm, b) and WGMMA_V2_MTILES[b] == 2:     # the wide loop
        return KernelSpec(_direct_kernel(key, sh, b, consts, apply), sig, nthr, **spec)
    cta_expert = make_cta_expert(key)
    gemm = make_tile_gemm(key, sh, b, gather_tokens=False)
    hid = key.hidden_size
    mts = gemm_m_tiles(key.gemm, b)             # m-tiles a CTA, 64 weight rows each
    tn = key.tile_n                             # = the accumulator rows a route
    assert tn == TILE_ROWS * mts, key
    rows = acc_route_words(key.gemm, b)         # tile words a route: its tn rows (+ pad)
    acc_n = acc_tile_words(key, b)              # b x tn, or more: the GEMM's B ring
    acc_shape = 0 if dyn else acc_n
    assert b <= nthr and nthr % tn == 0, (b, nthr, tn)
    vec = epilogue_vec(hid, tn, nthr)           # columns a thread of the epilogue
    groups = tn // vec                          # its column groups a route
    mstep = nthr // groups                      # its routes a pass
    slot_routes = make_slot_routes(b, key.router_on_input)

    def kernel(a, pri, beid, n_routes, top_k, tw, w, s, g2, b2, route_out):
        tid = cuda.threadIdx.x
        n0 = cuda.blockIdx.x * tn
        blk = cuda.blockIdx.y                   # the CTA's (sub-)block
        pdl_wait()              # a dependent launch (sm_90): fc1's output is complete
        e = cta_expert(beid, pri, blk, n_routes)
        if e < 0:
            return
        acc = cuda.shared.array(acc_shape, float32, alignment=ACC_ALIGN)  # (0: dynamic)
        rs = cuda.shared.array(b, int32)            # slot m's route (-1: padding)
        ws = cuda.shared.array(b, float32)          # and its router weight
        gemm(acc, blk, e, n0, a, w, s, pri, n_routes, top_k, tw)
        pdl_trigger()           # the combine may be scheduled (see fc1)
        slot_routes(rs, ws, pri, blk, n_routes, tw)
        cuda.syncthreads()
        # thread tid takes columns c .. c + vec - 1 of routes m, m + mstep, ...:
        # the columns' scales and biases once, 32-bit tile indices, unsigned
        # output indices
        c = uint32(tid) % uint32(groups) * uint32(vec)
        m = uint32(tid) // uint32(groups)
        n = uint32(cuda.blockIdx.x * tn) + c
        if n < uint32(hid):     # (vec 4: hid % 4 == 0, so all 4 columns are)
            if vec == 1:
                gs, gb = consts(e, n, g2, b2)
                while m < uint32(b):
                    r = rs[m]
                    if r >= 0:
                        # the router weight: ws[m] (slot m's), not tw[r]
                        route_out[uint64(r) * uint64(hid) + uint64(n)] = apply(
                            acc[m * uint32(rows) + c], gs, gb, ws[m])
                    m = uint32(m + uint32(mstep))
            else:
                # 4 columns: one 16-byte tile load, one 16-byte store
                gs, gb0 = consts(e, n, g2, b2)
                _, gb1 = consts(e, n + uint32(1), g2, b2)
                _, gb2 = consts(e, n + uint32(2), g2, b2)
                _, gb3 = consts(e, n + uint32(3), g2, b2)
                base = smem_u32(acc)
                while m < uint32(b):
                    r = rs[m]
                    if r >= 0:
                        a0, a1, a2, a3 = lds_f4(acc, base, m * uint32(rows) + c)
                        wm = ws[m]
                        stg4(route_out, uint64(r) * uint64(hid) + uint64(n),
                             as_bits(apply(a0, gs, gb0, wm)), as_bits(apply(a1, gs, gb1, wm)),
                             as_bits(apply(a2, gs, gb2, wm)), as_bits(apply(a3, gs, gb3, wm)))
                    m = uint32(m + uint32(mstep))

    return KernelSpec(kernel, sig, nthr, **spec)


def make_slot_routes(b: int, on_input: bool):
    """slot_routes(rs, ws, pri, blk, n_routes, tw): threads below b put slot m's
    route into rs[m] (-1: padding) and its router weight into ws[m] (1 with the
    weight on the input), once a slot rather than per output; the caller's
    barrier publishes them."""
    @cuda.jit(device=True, inline=True)
    def slot_routes(rs, ws, pri, blk, n_routes, tw):
        tid = cuda.threadIdx.x
        if tid < b:
            r = int64(pri[blk * b + tid])
            ok = r < n_routes
            rs[tid] = int32(r) if ok else int32(-1)
            ws[tid] = tw[r] if ok and not on_input else float32(1.0)
    return slot_routes


def _direct_kernel(key: LaunchKey, sh, b: int, consts, apply):
    """fc2 on the wide loop (two m-tiles a warpgroup, blocks of 128 / 144): the
    accumulators go from registers straight to the route rows
    (make_acc_stores below), with no tile in shared memory and no
    barrier between the last wgmma and the stores; each store writes 32-byte
    runs (a warp: 8 consecutive columns of 4 routes)."""
    gemm = make_tile_gemm(key, sh, b, gather_tokens=False, accs=True)
    stores = make_acc_stores(key, b, apply)
    cta_expert = make_cta_expert(key)
    slot_routes = make_slot_routes(b, key.router_on_input)
    hid = key.hidden_size
    tn = key.tile_n
    assert acc_tile_dyn_bytes(key, b) > 0, b     # the ring: dynamic shared memory

    def kernel(a, pri, beid, n_routes, top_k, tw, w, s, g2, b2, route_out):
        tid = cuda.threadIdx.x
        n0 = cuda.blockIdx.x * tn
        blk = cuda.blockIdx.y                   # the CTA's block
        pdl_wait()              # a dependent launch (sm_90): fc1's output is complete
        e = cta_expert(beid, pri, blk, n_routes)
        if e < 0:
            return
        acc = cuda.shared.array(0, float32, alignment=ACC_ALIGN)  # (the ring)
        rs = cuda.shared.array(b, int32)            # slot m's route (-1: padding)
        ws = cuda.shared.array(b, float32)          # and its router weight
        slot_routes(rs, ws, pri, blk, n_routes, tw)     # (published by the GEMM's
        #                                                 first k-tile barrier)
        acc0, acc1 = gemm(acc, blk, e, n0, a, w, s, pri, n_routes, top_k, tw)
        pdl_trigger()           # the combine may be scheduled (see fc1)
        warp = uint32(tid) >> uint32(5)
        lane = uint32(tid) & uint32(31)
        c0 = uint32(n0) + (warp >> uint32(2)) * uint32(128) + (warp & uint32(3)) * uint32(16) \
            + (lane >> uint32(2))
        last = uint32(hid - 1)                  # (a column past it: read clamped, not stored)
        gs, gb0 = consts(e, min(c0, last), g2, b2)
        _, gb1 = consts(e, min(c0 + uint32(8), last), g2, b2)
        _, gb2 = consts(e, min(c0 + uint32(64), last), g2, b2)
        _, gb3 = consts(e, min(c0 + uint32(72), last), g2, b2)
        ok = (c0 < uint32(hid), c0 + uint32(8) < uint32(hid), c0 + uint32(64) < uint32(hid),
              c0 + uint32(72) < uint32(hid))
        stores(route_out, acc0, acc1, rs, ws, (lane & uint32(3)) * uint32(2), c0, gs,
               (gb0, gb1, gb2, gb3), ok)

    return kernel


def make_acc_stores(key: LaunchKey, block: int, apply):
    """stores(out, acc0, acc1, rs, ws, t2, cb, gs, gb, ok): the wide loop's
    fragments (gemm_wgmma_v2.make_tile_gemm(accs=True)) straight to the route
    rows, no tile in shared memory: out[rs[m] * H + n] = apply(acc x post, gs,
    gb[.], ws[m]) for each route m of this thread's fragment columns (m = 8 j +
    t2 + v, t2 = 2 (lane % 4), v = 0, 1; rs[m] < 0: padding, not stored) and
    its four columns n = cb + (0, 8, 64, 72): rows g and g + 8 of its warp's 16
    in m-tiles 0 and 1 (cb = n0 + 128 (warp / 4) + 16 (warp % 4) + lane / 4:
    gemm_wgmma_v2's m_tile and store_mtile); gb and ok are per column (bias,
    column < H; ok read only where tile_n does not divide H).  One inlined step
    a fragment column group j, so every accumulator index is a constant; the
    stores are predicated (no branch a route), from one address a route
    (&out[cb] + rs[m] x 4 H)."""
    b = block
    assert WGMMA_V2_MTILES[b] == 2, b
    post = float32(acc_post(key))
    row_bytes = 4 * key.hidden_size
    tail = key.hidden_size % key.tile_n != 0     # ok matters: the last n-tile's past H
    st0, st8, st64, st72 = (make_stg_f32_if(4 * c) for c in (0, 8, 64, 72))

    @cuda.jit(device=True, inline=True)
    def route(pc, acc0, acc1, i0, i1, r, wm, gs, gb, ok):
        live = r >= 0
        addr = pc + uint64(int64(r) * int64(row_bytes))     # (r < 0: not stored)
        p0 = p1 = p2 = p3 = live
        if tail:
            p0, p1, p2, p3 = ok[0] & live, ok[1] & live, ok[2] & live, ok[3] & live
        st0(addr, apply(acc0[i0] * post, gs, gb[0], wm), p0)
        st8(addr, apply(acc0[i1] * post, gs, gb[1], wm), p1)
        st64(addr, apply(acc1[i0] * post, gs, gb[2], wm), p2)
        st72(addr, apply(acc1[i1] * post, gs, gb[3], wm), p3)

    def make(n):
        j = n - 1

        @step_fn
        def step(pc, acc0, acc1, rs, ws, t2, gs, gb, ok):
            m = uint32(8 * j) + t2
            route(pc, acc0, acc1, 4 * j, 4 * j + 2, rs[m], ws[m], gs, gb, ok)
            route(pc, acc0, acc1, 4 * j + 1, 4 * j + 3, rs[m + uint32(1)], ws[m + uint32(1)],
                  gs, gb, ok)
        if n == 1:
            return step
        head = make(n - 1)

        @step_fn
        def steps(pc, acc0, acc1, rs, ws, t2, gs, gb, ok):
            head(pc, acc0, acc1, rs, ws, t2, gs, gb, ok)
            step(pc, acc0, acc1, rs, ws, t2, gs, gb, ok)
        return steps

    all_steps = make(b // 8)

    @cuda.jit(device=True, inline=True)
    def stores(out, acc0, acc1, rs, ws, t2, cb, gs, gb, ok):
        all_steps(uint64(gaddr(out, cb)), acc0, acc1, rs, ws, t2, gs, gb, ok)
    return stores


def build_combine(key: LaunchKey) -> KernelSpec:
    """y[t, n] = round(sum_{j valid} route_out[t*k + j, n]), j in order, fp32.

    CTA (x, t): COMBINE_THREADS threads, COMBINE_VEC consecutive columns each
    (tile_n columns a CTA); whether route t*k + j is valid is decided once a CTA
    (threads j < k, into shared memory) when k <= COMBINE_MAX_K, else by every
    thread.  The routes go COMBINE_CHUNK at a time: their rows' 16 bytes loaded
    at once (a route past k reads the last route's row, in bounds, and is not
    added), then added in j order, so a thread waits on memory ceil(k / 4)
    times, not k.  Unsigned indices: no wraparound code around the loads.  A
    dependent launch (launch.PreparedLaunch.dependent): it reads route_out only
    after pdl_wait, which follows the validity scan (inputs only)."""
    _, store, _ = make_act_io(key.dtype)
    hid = key.hidden_size
    tn = key.tile_n
    vec = COMBINE_VEC
    threads = tn // vec
    assert threads * vec == tn and hid % vec == 0 and vec == 4, (tn, hid)
    assert COMBINE_CHUNK == 4

    @cuda.jit(device=True, inline=True)
    def add_row(y0, y1, y2, y3, w0, w1, w2, w3):
        """The 4 running sums plus one route's 4 columns (ld_g4's words)."""
        return y0 + as_float(w0), y1 + as_float(w1), y2 + as_float(w2), y3 + as_float(w3)

    @cuda.jit(device=True, inline=True)
    def valid(ok, small, ids, stride, r0, j, top_k, emap, has_map, num_ids):
        """Whether route j (< top_k) of the token goes to a local expert."""
        if small:
            return ok[j] >= 0
        return local_expert(ids, stride, int64(r0 + j), emap, has_map, num_ids) >= 0

    def kernel(route_out, ids, stride, top_k, emap, has_map, num_ids, out):
        tid = cuda.threadIdx.x
        n = cuda.blockIdx.x * tn + tid * vec
        t = cuda.blockIdx.y
        ok = cuda.shared.array(COMBINE_MAX_K, int32)
        small = top_k <= COMBINE_MAX_K
        if small:
            for j in range(tid, top_k, threads):
                ok[j] = local_expert(ids, stride, t * top_k + j, emap, has_map, num_ids)
            cuda.syncthreads()
        pdl_wait()       # a dependent launch (sm_90): route_out is complete from here
        if n >= hid:
            return
        y0 = float32(0.0)
        y1 = float32(0.0)
        y2 = float32(0.0)
        y3 = float32(0.0)
        k = uint64(top_k)
        last = uint64(k - uint64(1))
        r0 = uint64(t) * k                      # the token's first route
        col = uint64(n)
        h = uint64(hid)
        j = uint64(0)
        while j < k:
            j1 = min(uint64(j + uint64(1)), last)
            j2 = min(uint64(j + uint64(2)), last)
            j3 = min(uint64(j + uint64(3)), last)
            a0, a1, a2, a3 = ld_g4(route_out, uint64(r0 + j) * h + col)
            b0, b1, b2, b3 = ld_g4(route_out, uint64(r0 + j1) * h + col)
            c0, c1, c2, c3 = ld_g4(route_out, uint64(r0 + j2) * h + col)
            d0, d1, d2, d3 = ld_g4(route_out, uint64(r0 + j3) * h + col)
            # in j order; a clamped duplicate (j1 == j, ...) is not added
            if valid(ok, small, ids, stride, r0, j, top_k, emap, has_map, num_ids):
                y0, y1, y2, y3 = add_row(y0, y1, y2, y3, a0, a1, a2, a3)
            if j1 > j and valid(ok, small, ids, stride, r0, j1, top_k, emap, has_map,
                                num_ids):
                y0, y1, y2, y3 = add_row(y0, y1, y2, y3, b0, b1, b2, b3)
            if j2 > j1 and valid(ok, small, ids, stride, r0, j2, top_k, emap, has_map,
                                 num_ids):
                y0, y1, y2, y3 = add_row(y0, y1, y2, y3, c0, c1, c2, c3)
            if j3 > j2 and valid(ok, small, ids, stride, r0, j3, top_k, emap, has_map,
                                 num_ids):
                y0, y1, y2, y3 = add_row(y0, y1, y2, y3, d0, d1, d2, d3)
            j = uint64(j + uint64(COMBINE_CHUNK))
        dst = uint64(t * hid + n)
        store(out, dst, y0)
        store(out, dst + uint64(1), y1)
        store(out, dst + uint64(2), y2)
        store(out, dst + uint64(3), y3)

    return KernelSpec(kernel, ("f4[]", "i4[]", "i8", "i8", "i4[]", "i8", "i8",
                               act_code(key.dtype)), threads)
