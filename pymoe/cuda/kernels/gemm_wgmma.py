"""The block GEMM on Hopper's warpgroup tensor cores: wgmma m64nBk16 (bf16 or
f16 in, fp32 accumulate; sm_90a), FP4 decoded to 16-bit A fragments in registers,
the routes' activations as B from a ring of shared-memory images.

Same contract as ``gemm_mma.make_tile_gemm`` (and the plain ``gemm_fma`` twin):

    gemm(acc_tile, blk, e, n0, a, w, s, lut, pri, n_routes, top_k, tw)

leaves acc_tile[m * TILE_ROWS + lr] = sum_k act[m, k] * W[row(lr), k] for the B
routes m of block ``blk`` and the 64 weight rows lr of expert e from n0.

Layout of the work (swap-AB, as gemm_mma): the CTA is one warpgroup; warp w owns
weight rows 16w..16w+15, which is exactly wgmma's A fragment (lane (g, q): rows
16w+g and 16w+g+8), and B = the block's routes is the wgmma's n.
- A: per 32-value K chunk a lane loads one 32-bit word per row (values 8q..8q+7)
  and decodes it to 4 pairs (gemm_mma.make_decode_word: pair p = values
  (8q+p, 8q+p+4)); k-step ks of the chunk takes pairs 2ks and 2ks+1, the same K
  binding as gemm_mma's mma.sync.  The scale is folded into the 16-bit pairs by
  an exact packed multiply: NVFP4's E4M3 always, MXFP4's E8M0 when every scale
  byte of the weights keeps the products exact in the dtype
  (``geometry.wgmma_scale_fold_ok``; pymoe/cuda/fc1.py refuses the others
  before launch).
- B: K-major, no swizzle (pymoe/ref/wgmma.py b_image, lbo 128, sbo 256).  Under
  that K binding, k-step ks / core matrix h of a chunk holds, for each route,
  the 8 values = p (mod 4) of the chunk, p = 2ks + h, in order.  Two threads
  stage a route's chunk (threads 2m, 2m+1 for route m; with B = 128 also route
  m + 64): each loads 8 activation words (16 values; two 16-byte loads when the
  activations' base is 16-byte aligned), builds the words of all four core
  rows with byte permutes and writes 8 bytes to each.
- Loads go through ld.global.nc intrinsics (no Numba wraparound code around
  them); weight and scale loads are branch-free (the chunk clamped to the
  last, a row past the tile's outputs reads row 0 and is zeroed).
- Ring: WGMMA_RING chunk images (B = 128: 3, inside the caller's acc_tile,
  which is free until the end; shared memory stays under 48 KB static).  Iteration c waits at one barrier (chunk c's
  image written, every warp past chunk c-2), then for its own chunk c-1
  (wgmma reads the A registers asynchronously, and writing them before the
  wait is undefined: measured, the results go wrong), decodes and issues
  chunk c's two wgmma, commits, loads chunk c+2's weight words, stores chunk
  c+RING-2's activations (loaded one iteration earlier) into the slot chunk
  c-2 read and loads the next chunk's.  The multiply of chunk c overlaps the
  loads, stores and barrier of its iteration; every global load has a whole
  iteration to land.
"""
from __future__ import annotations

from numba import cuda, float32, int32, int64, uint32

from ...geometry import WGMMA_RING, LaunchKey
from .common import THREADS, TILE_ROWS, Shape, make_pair16, make_round_pair, tile_roles
from .gemm_mma import make_decode_pairs, make_lane_rows, make_load_w, make_route_row
from .ptx import gaddr, ld_nc1, ld_nc4, prmt, smem_u32, sts2
from .wgmma import (fence_proxy_async, make_acc_fill, make_wgmma_rs, make_wgmma_wait,
                    store_acc_t, wgmma_commit, wgmma_desc, wgmma_fence)

__all__ = ["make_tile_gemm"]

LBO = 128               # bytes between the two K core matrices of a k-step image
SBO = 256               # bytes between groups of 8 routes


def make_tile_gemm(key: LaunchKey, sh: Shape, block: int, gather_tokens: bool):
    """wgmma twin of gemm_mma.make_tile_gemm (see the module docstring)."""
    pair16 = make_pair16(key.dtype)
    decode_pairs = make_decode_pairs(key.dtype, True)
    route_row = make_route_row(key, block, gather_tokens)
    nv = sh.nv
    on_input = tile_roles(key, gather_tokens)[0]
    kdim, chunks = sh.k, sh.chunks
    b = block
    img = 64 * b                                 # bytes of one chunk's image (2 k-steps)
    # B = 128: the ring lives in the caller's acc_tile (B * TILE_ROWS floats, free
    # until the end), 3 chunk images, so shared memory stays under 48 KB static
    in_acc = b > 64
    ring = 3 if in_acc else WGMMA_RING
    if in_acc:
        assert b * TILE_ROWS * 4 >= ring * img + 128, (b, ring)
    ring_words = 32 if in_acc else ring * img // 4 + 32   # + 128 bytes to align the ring
    pow2 = ring & (ring - 1) == 0
    per = max(1, 2 * b // THREADS)               # routes a thread stages (B = 128: 2)
    assert 2 * b <= per * THREADS and per <= 2, b
    k_whole = kdim % 16 == 0                     # no chunk half is cut by K
    fill = make_acc_fill(b)
    mma = make_wgmma_rs(b, key.dtype)
    wait0 = make_wgmma_wait(0)
    round_pair = make_round_pair(key.dtype)
    load_w = make_load_w(sh)
    lane_rows = make_lane_rows(key, sh, gather_tokens)

    @cuda.jit(device=True, inline=True)
    def load_x(c, off, hh, mult, a, avec):
        """The 8 activation words (values 16hh .. 16hh+15 of chunk c) of one route
        row at word offset off (< 0: padding): zeros past K or in padding.
        avec: the activations' base is 16-byte aligned (two 16-byte loads; rows
        and chunk halves are, since K % 8 == 0), else 4-byte loads.  The loads
        are intrinsics: no wraparound or bounds code around them."""
        v0 = uint32(0)
        v1 = uint32(0)
        v2 = uint32(0)
        v3 = uint32(0)
        v4 = uint32(0)
        v5 = uint32(0)
        v6 = uint32(0)
        v7 = uint32(0)
        k0 = c * 32 + 16 * hh
        if off >= 0 and k0 < kdim:
            src = off + c * 16 + 8 * hh
            hi = k_whole or k0 + 8 < kdim               # K % 8 == 0: whole 8-value groups
            if avec:
                v0, v1, v2, v3 = ld_nc4(a, src)
                if hi:
                    v4, v5, v6, v7 = ld_nc4(a, src + 4)
            else:
                v0 = ld_nc1(a, src)
                v1 = ld_nc1(a, src + 1)
                v2 = ld_nc1(a, src + 2)
                v3 = ld_nc1(a, src + 3)
                if hi:
                    v4 = ld_nc1(a, src + 4)
                    v5 = ld_nc1(a, src + 5)
                    v6 = ld_nc1(a, src + 6)
                    v7 = ld_nc1(a, src + 7)
            if on_input:
                v0 = round_pair(v0, mult)
                v1 = round_pair(v1, mult)
                v2 = round_pair(v2, mult)
                v3 = round_pair(v3, mult)
                v4 = round_pair(v4, mult)
                v5 = round_pair(v5, mult)
                v6 = round_pair(v6, mult)
                v7 = round_pair(v7, mult)
        return v0, v1, v2, v3, v4, v5, v6, v7

    @cuda.jit(device=True, inline=True)
    def store_x(row, x):
        """Core rows p = 0..3 of one route, bytes 8hh..8hh+7 (row: their shared
        address in k-step 0, matrix 0): words i = 2hh, 2hh+1 of core row p hold
        values (p + 8i, p + 8i + 4) of the chunk."""
        v0, v1, v2, v3, v4, v5, v6, v7 = x
        sts2(row, prmt(v0, v2, uint32(0x5410)), prmt(v4, v6, uint32(0x5410)))
        sts2(row + uint32(LBO), prmt(v0, v2, uint32(0x7632)), prmt(v4, v6, uint32(0x7632)))
        sts2(row + uint32(32 * b), prmt(v1, v3, uint32(0x5410)),
             prmt(v5, v7, uint32(0x5410)))
        sts2(row + uint32(32 * b + LBO), prmt(v1, v3, uint32(0x7632)),
             prmt(v5, v7, uint32(0x7632)))

    @cuda.jit(device=True, inline=True)
    def slot(c):
        """The ring slot of chunk c (a mask for a power-of-two ring)."""
        if pow2:
            return uint32(c) & uint32(ring - 1)
        return uint32(c) % uint32(ring)

    @cuda.jit(device=True, inline=True)
    def gemm(acc_tile, blk, e, n0, a, w, s, lut, pri, n_routes, top_k, tw):
        tid = cuda.threadIdx.x
        warp = tid // 32
        lane = tid % 32
        g = lane // 4
        t = lane % 4
        rb = cuda.shared.array(ring_words, uint32)      # the B image ring
        s2 = cuda.shared.array(256, uint32)             # scale byte -> 16-bit pair
        for i in range(tid, 256, THREADS):
            s2[i] = pair16(lut[i] * float32(4.0))
        # this thread stages half (hh) of route m's chunk rows, when tid < 2B
        # (B = 128: also of route m + 64)
        m = tid >> 1
        hh = tid & 1
        stager = tid < 2 * b
        off = int64(-1)
        mult = float32(1.0)
        off2 = int64(-1)
        mult2 = float32(1.0)
        if stager:
            off, mult = route_row(blk, m, pri, n_routes, top_k, tw)
            if per == 2:
                off2, mult2 = route_row(blk, m + THREADS // 2, pri, n_routes, top_k, tw)
        if in_acc:
            base = smem_u32(acc_tile)
        else:
            base = smem_u32(rb)
        ring_base = (base + uint32(127)) & uint32(0xFFFFFF80)
        xrow = ring_base + uint32((m >> 3) * SBO + (m & 7) * 16 + 8 * hh)
        xrow2 = xrow + uint32((THREADS // 2 // 8) * SBO)    # route m + 64
        wb0, wb1, sb0, sb1, ok0, ok1 = lane_rows(n0, e, warp, g, t)
        avec = (gaddr(a, 0) & 15) == 0
        sidx = t // 2 if nv else 0
        # prologue: chunks 0 .. ring-3 staged, chunk ring-2's activations and
        # chunks 0, 1's weights in registers
        if stager:
            for c0 in range(ring - 2):
                store_x(xrow + uint32(c0 * img), load_x(c0, off, hh, mult, a, avec))
                if per == 2:
                    store_x(xrow2 + uint32(c0 * img), load_x(c0, off2, hh, mult2, a, avec))
        xn = load_x(ring - 2, off, hh, mult, a, avec)
        xn2 = xn
        if per == 2:
            xn2 = load_x(ring - 2, off2, hh, mult2, a, avec)
        cuda.syncthreads()                              # s2
        wa0, wa1, ba0, ba1 = load_w(0, wb0, wb1, sb0, sb1, ok0, ok1, sidx, w, s)
        wn0, wn1, bn0, bn1 = load_w(1, wb0, wb1, sb0, sb1, ok0, ok1, sidx, w, s)
        acc = fill(float32(0.0))
        for c in range(chunks):
            fence_proxy_async()
            cuda.syncthreads()
            # chunk c-1 done: its A registers may be written again (wgmma reads
            # them asynchronously; ptxas does not guard them: UB otherwise)
            wait0()
            sa0 = s2[ba0]
            sa1 = s2[ba1]
            a00, a01, a02, a03 = decode_pairs(wa0, sa0)
            a10, a11, a12, a13 = decode_pairs(wa1, sa1)
            sa = ring_base + slot(c) * uint32(img)
            wgmma_fence()
            acc = mma(acc, a00, a10, a01, a11, wgmma_desc(sa, LBO, SBO), int32(1))
            acc = mma(acc, a02, a12, a03, a13, wgmma_desc(sa + uint32(32 * b), LBO, SBO),
                      int32(1))
            wgmma_commit()
            wa0, wa1, ba0, ba1 = wn0, wn1, bn0, bn1
            wn0, wn1, bn0, bn1 = load_w(c + 2, wb0, wb1, sb0, sb1, ok0, ok1, sidx, w, s)
            cs = c + ring - 2
            if cs < chunks:
                so = slot(cs) * uint32(img)
                if stager:
                    store_x(xrow + so, xn)
                    if per == 2:
                        store_x(xrow2 + so, xn2)
                xn = load_x(cs + 1, off, hh, mult, a, avec)
                if per == 2:
                    xn2 = load_x(cs + 1, off2, hh, mult2, a, avec)
        wait0()
        if in_acc:
            cuda.syncthreads()                          # the ring is acc_tile: all read
        store_acc_t(acc_tile, int64(2 * t) * TILE_ROWS + 16 * warp + g, TILE_ROWS, float32(1.0),
                    acc)
        cuda.syncthreads()

    return gemm
