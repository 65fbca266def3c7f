"""The block GEMM on tensor cores: mma.sync m16n8k16 (bf16 or f16 in, fp32
accumulate), FP4 decoded to 16-bit pairs in registers with byte permutes.

Same contract as ``gemm_fma.make_tile_gemm`` (the plain twin the simulator runs):

    gemm(acc_tile, blk, e, n0, a, w, s, pri, n_routes, top_k, tw)

leaves acc_tile[m * TILE_ROWS + lr] (shared, fp32) = sum_k act[m, k] * W[row(lr), k]
for the B activation rows m of block ``blk`` and the 64 weight rows lr of expert
e starting at n0 (gated w13: 32 gate rows then 32 up rows).  Here ``a`` is the
activation array as uint32 words (two 16-bit values each).

Layout of the work (swap-AB: the weights are the mma's A operand, so a block of
only 8 routes still fills the M=16 side):
- CTA = 4 warps; warp w owns weight rows 16w..16w+15 and every route of the block
  (B/8 n-tiles of 8 routes).  Lane (g, t) = (lane // 4, lane % 4).
- Per 32-value K chunk, lane (g, t) loads ONE 32-bit word per weight row: word t
  of the row's 16-byte chunk (values 8t..8t+7) for rows g and g+8.  K is summed
  in any order, so the mma's K slots are bound to values by a permutation that
  keeps every lane on its own word: the 16-bit pair p (p = 0..3) of lane t holds
  values (8t+p, 8t+p+4), and k-step ks uses pairs 2ks (slots 2t, 2t+1) and
  2ks+1 (slots 2t+8, 2t+9).  The activations are staged in shared memory in the
  same permuted order (word 4t+p of a route = values 8t+p | 8t+p+4 << 16), with an
  XOR swizzle that makes the fragment reads bank-conflict free.
- FP4 -> 16-bit: the 3 magnitude bits of 4 codes select bytes from two 8-byte
  tables (prmt), 4 more prmt pair them up, and the sign bits of nibbles p and p+4
  sit exactly at bits 15 and 31 after one shift: 14 integer ops per 8 weights.
  Exact for both bf16 and f16 (E2M1 values have 2 significant bits).
- Scales: MXFP4 (one per row per chunk): the chunk's two k-steps accumulate into a
  fresh fp32 fragment, which is added scaled (fp32, exact power of two) to the
  accumulator. NVFP4 (one per 16 values = per lane word): the decoded pairs are
  multiplied by the E4M3 value in 16-bit (exact: <= 6 significant bits).
"""
from __future__ import annotations

from numba import cuda, float32, int64, uint32

from ...geometry import LaunchKey
from .common import (THREADS, TILE_ROWS, Shape, make_pair16, make_round_pair,
                     make_scale_value, tile_roles)
from .ptx import (gaddr, ld_nc1, ld_nc4, ld_nc_u8, mma_bf16, mma_f16, mul2_bf16, mul2_f16,
                  prmt)

__all__ = ["make_tile_gemm", "make_decode_word", "make_decode_pairs", "make_route_row",
           "make_load_w", "make_lane_rows", "TABLES"]

# 8-byte magnitude tables (index = 3 magnitude bits of an E2M1 code): the high and
# low bytes of the 16-bit encodings of 0, .5, 1, 1.5, 2, 3, 4, 6.
TABLES = {
    "bfloat16": (0x3F3F3F00, 0x40404040, 0xC0800000, 0xC0804000),
    "float16": (0x3E3C3800, 0x46444240, 0x00000000, 0x00000000),
}
# warp w of the CTA owns weight rows 16w..16w+15 of the tile (geometry asserts
# GEMM_TILE_ROWS == 16 * GEMM_THREADS / 32)


def make_decode_word(dtype: str):
    """decode_word(wv, p) for ``dtype`` (exported for the GPU unit test)."""
    h0, h1, l0, l1 = (uint32(v) for v in TABLES[dtype])

    @cuda.jit(device=True, inline=True)
    def decode_word(wv, p):
        """16-bit pair p (0..3) of an 8-code word: (code p, code p+4)."""
        m = wv & uint32(0x77777777)
        mh = m >> uint32(16)
        if p < 2:
            x = prmt(prmt(l0, l1, m), prmt(h0, h1, m), uint32(0x5140))
            y = prmt(prmt(l0, l1, mh), prmt(h0, h1, mh), uint32(0x5140))
        else:
            x = prmt(prmt(l0, l1, m), prmt(h0, h1, m), uint32(0x7362))
            y = prmt(prmt(l0, l1, mh), prmt(h0, h1, mh), uint32(0x7362))
        sel = uint32(0x5410) if (p & 1) == 0 else uint32(0x7632)
        sign = (wv << uint32(12 - 4 * p)) & uint32(0x80008000)
        return prmt(x, y, sel) | sign

    return decode_word


def make_decode_pairs(dtype: str, scaled: bool):
    """decode_pairs(wv, sc) -> the word's 4 16-bit pairs (decode_word p = 0..3),
    each times the 16-bit scale pair sc by an exact packed multiply when
    ``scaled`` (NVFP4), else sc is unused."""
    decode = make_decode_word(dtype)
    mul2 = mul2_bf16 if dtype == "bfloat16" else mul2_f16

    @cuda.jit(device=True, inline=True)
    def decode_pairs(wv, sc):
        p0 = decode(wv, 0)
        p1 = decode(wv, 1)
        p2 = decode(wv, 2)
        p3 = decode(wv, 3)
        if scaled:
            p0 = mul2(p0, sc)
            p1 = mul2(p1, sc)
            p2 = mul2(p2, sc)
            p3 = mul2(p3, sc)
        return p0, p1, p2, p3

    return decode_pairs


def make_route_row(key: LaunchKey, block: int, gather_tokens: bool):
    """route_row(blk, m, pri, n_routes, top_k, tw) -> (off, mult): the uint32-word
    offset of slot m's activation row in block blk (-1 for padding) and the
    router weight to apply on the input (1 unless router_on_input): fc1 gathers
    token rows r // top_k, fc2 reads the slot's own intermediate row.  A
    padding slot's columns reach only its own accumulators, which neither
    epilogue writes out (fc1 writes zeros there, fc2 skips the slot), so its
    row is never loaded or staged."""
    on_input = key.router_on_input and gather_tokens
    hw = key.hidden_size // 2
    iw = key.intermediate_size // 2

    @cuda.jit(device=True, inline=True)
    def route_row(blk, m, pri, n_routes, top_k, tw):
        slot = blk * block + m
        off = int64(-1)
        mult = float32(1.0)
        if gather_tokens:
            r = int64(pri[slot])
            if r < n_routes:
                off = (r // top_k) * hw
                if on_input:
                    mult = tw[r]
        elif int64(pri[slot]) < n_routes:     # fc2: the slot's own row; padding
            off = slot * iw                     # (fc1's zero rows) is not staged
        return off, mult

    return route_row


def make_load_w(sh: Shape):
    """load_w(c, wb0, wb1, sb0, sb1, ok0, ok1, sidx, w, s) -> (word0, word1, byte0,
    byte1): chunk c's weight words of a lane's two rows (word offsets wb0 / wb1
    with the lane's t folded in) and their scale BYTES (row offsets sb0 / sb1;
    NVFP4's group 2c + sidx).  Branch-free: c is clamped to the last chunk (a
    load past it is never used) and a row past the tile's outputs (not ok) reads
    a valid row and is zeroed.  The bytes are looked up only at use, an
    iteration or two later: an LDS on a fresh LDG would stall the warp for a
    whole global latency."""
    nv, chunks = sh.nv, sh.chunks

    @cuda.jit(device=True, inline=True)
    def load_w(c, wb0, wb1, sb0, sb1, ok0, ok1, sidx, w, s):
        cc = min(c, chunks - 1)
        sg = 2 * cc + sidx if nv else cc
        wv0 = ld_nc1(w, wb0 + 4 * cc)
        sc0 = ld_nc_u8(s, sb0 + sg)
        wv1 = ld_nc1(w, wb1 + 4 * cc)
        sc1 = ld_nc_u8(s, sb1 + sg)
        if not ok0:
            wv0 = uint32(0)
            sc0 = uint32(0)
        if not ok1:
            wv1 = uint32(0)
            sc1 = uint32(0)
        return wv0, wv1, sc0, sc1

    return load_w


def make_lane_rows(key: LaunchKey, sh: Shape, gather_tokens: bool):
    """lane_rows(n0, e, warp, g, t) -> (wb0, wb1, sb0, sb1, ok0, ok1): load_w's
    offsets of a lane's two weight rows (local 16 warp + g and + 8 of the tile at
    n0 of expert e; word offsets with t folded in, scale-row offsets) and whether
    each is an output; a row past the outputs points at row 0 (zeroed by load_w)."""
    _, row_of, nout = tile_roles(key, gather_tokens)
    rows, words, sgroups = sh.rows, sh.words, sh.sgroups

    @cuda.jit(device=True, inline=True)
    def lane_rows(n0, e, warp, g, t):
        n_a, row_a = row_of(n0, 16 * warp + g)
        n_b, row_b = row_of(n0, 16 * warp + g + 8)
        ok0 = n_a < nout
        ok1 = n_b < nout
        if not ok0:
            row_a = 0
        if not ok1:
            row_b = 0
        return ((e * rows + row_a) * words + t, (e * rows + row_b) * words + t,
                (e * rows + row_a) * sgroups, (e * rows + row_b) * sgroups, ok0, ok1)

    return lane_rows


def make_tile_gemm(key: LaunchKey, sh: Shape, block: int, gather_tokens: bool):
    """Tensor-core twin of gemm_fma.make_tile_gemm (see the module docstring)."""
    bf16 = key.dtype == "bfloat16"
    pair16 = make_pair16(key.dtype)
    scale_value = make_scale_value(key.format)
    mma = mma_bf16 if bf16 else mma_f16
    nv = sh.nv
    decode_pairs = make_decode_pairs(key.dtype, nv)
    route_row = make_route_row(key, block, gather_tokens)
    on_input = tile_roles(key, gather_tokens)[0]
    kdim, chunks = sh.k, sh.chunks
    b = block
    nt = b // 8                                   # n-tiles of 8 routes
    acc_n = nt * 4
    xw_n = b * 16

    round_pair = make_round_pair(key.dtype)
    load_w = make_load_w(sh)
    lane_rows = make_lane_rows(key, sh, gather_tokens)
    n_tasks = b * 4                                 # (route, 8-value group) a chunk
    assert n_tasks <= 2 * THREADS, "two staging tasks a thread at most"

    @cuda.jit(device=True, inline=True)
    def load_xa(c, idx, xrow, a, avec):
        """The 4 activation words of task idx (route idx // 4, values 8tq..8tq+7
        of chunk c, tq = idx % 4): zeros in padding, past K or past the tasks.
        avec: the activations' base is 16-byte aligned (one 16-byte load), else
        four 4-byte loads; intrinsics, so no wraparound code around them."""
        v0 = uint32(0)
        v1 = uint32(0)
        v2 = uint32(0)
        v3 = uint32(0)
        if idx < n_tasks and c < chunks:
            off = xrow[uint32(idx) >> uint32(2)]
            tq = idx & 3
            if off >= 0 and c * 32 + 8 * tq < kdim:
                src = off + c * 16 + 4 * tq
                if avec:
                    v0, v1, v2, v3 = ld_nc4(a, src)
                else:
                    v0 = ld_nc1(a, src)
                    v1 = ld_nc1(a, src + 1)
                    v2 = ld_nc1(a, src + 2)
                    v3 = ld_nc1(a, src + 3)
        return v0, v1, v2, v3

    @cuda.jit(device=True, inline=True)
    def store_xa(idx, x, xw, xmul):
        """Task idx's words into xw in the permuted, swizzled order (times the
        router weight, rounded, when it goes on the input)."""
        if idx < n_tasks:
            v0, v1, v2, v3 = x
            m = uint32(idx) >> uint32(2)
            tq = uint32(idx) & uint32(3)
            if on_input:
                mult = xmul[m]
                v0 = round_pair(v0, mult)
                v1 = round_pair(v1, mult)
                v2 = round_pair(v2, mult)
                v3 = round_pair(v3, mult)
            base = m * uint32(16)
            swm = (m >> uint32(1)) & uint32(3)
            q = uint32(4) * tq
            xw[base + (q ^ swm)] = prmt(v0, v2, uint32(0x5410))
            xw[base + ((q + uint32(1)) ^ swm)] = prmt(v0, v2, uint32(0x7632))
            xw[base + ((q + uint32(2)) ^ swm)] = prmt(v1, v3, uint32(0x5410))
            xw[base + ((q + uint32(3)) ^ swm)] = prmt(v1, v3, uint32(0x7632))

    @cuda.jit(device=True, inline=True)
    def gemm(acc_tile, blk, e, n0, a, w, s, pri, n_routes, top_k, tw):
        tid = cuda.threadIdx.x
        warp = tid // 32
        lane = tid % 32
        g = lane // 4
        t = lane % 4
        xw = cuda.shared.array(xw_n, uint32)             # staged activations (permuted)
        xrow = cuda.shared.array(b, int64)               # word offset of each route's row
        xmul = cuda.shared.array(b, float32)
        sl = cuda.shared.array(256, float32)             # scale byte -> scale value
        s2 = cuda.shared.array(256, uint32)              # NVFP4: scale as 16-bit pair
        for i in range(tid, 256, THREADS):
            v = scale_value(i)
            sl[i] = v
            if nv:
                s2[i] = pair16(v)
        for m in range(tid, b, THREADS):
            off, mult = route_row(blk, m, pri, n_routes, top_k, tw)
            xrow[m] = off
            xmul[m] = mult
        # this lane's two weight rows (local lr0 = 16*warp + g and lr0 + 8)
        wb0, wb1, sb0, sb1, ok0, ok1 = lane_rows(n0, e, warp, g, t)
        avec = (gaddr(a, 0) & 15) == 0
        acc = cuda.local.array(acc_n, float32)
        for i in range(acc_n):
            acc[i] = float32(0.0)
        sw = uint32((g >> 1) & 3)                        # read swizzle of routes 8j+g
        t4 = uint32(4 * t)
        cuda.syncthreads()
        # software pipeline: chunk c+1's weight words and scale bytes are
        # loaded while chunk c multiplies (two staging tasks a thread at most:
        # B * 4 <= 2 * THREADS)
        i0 = tid
        i1 = tid + THREADS
        sidx = t // 2 if nv else 0
        nw0, nw1, nr0, nr1 = load_w(0, wb0, wb1, sb0, sb1, ok0, ok1, sidx, w, s)
        for c in range(chunks):
            store_xa(i0, load_xa(c, i0, xrow, a, avec), xw, xmul)
            store_xa(i1, load_xa(c, i1, xrow, a, avec), xw, xmul)
            wv0, wv1, r0, r1 = nw0, nw1, nr0, nr1
            nw0, nw1, nr0, nr1 = load_w(c + 1, wb0, wb1, sb0, sb1, ok0, ok1, sidx, w, s)
            cuda.syncthreads()
            sc0 = uint32(0)
            sc1 = uint32(0)
            f0 = float32(0.0)
            f1 = float32(0.0)
            if nv:
                sc0 = s2[r0]
                sc1 = s2[r1]
            else:
                f0 = sl[r0]
                f1 = sl[r1]
            a00, a01, a02, a03 = decode_pairs(wv0, sc0)
            a10, a11, a12, a13 = decode_pairs(wv1, sc1)
            for j in range(nt):
                rb = uint32((8 * j + g) * 16)            # unsigned: no wraparound code
                b00 = xw[rb + (t4 ^ sw)]
                b01 = xw[rb + ((t4 + uint32(1)) ^ sw)]
                b10 = xw[rb + ((t4 + uint32(2)) ^ sw)]
                b11 = xw[rb + ((t4 + uint32(3)) ^ sw)]
                if nv:
                    d0, d1, d2, d3 = mma(a00, a10, a01, a11, b00, b01, acc[4 * j],
                                         acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3])
                    d0, d1, d2, d3 = mma(a02, a12, a03, a13, b10, b11, d0, d1, d2, d3)
                    acc[4 * j] = d0
                    acc[4 * j + 1] = d1
                    acc[4 * j + 2] = d2
                    acc[4 * j + 3] = d3
                else:
                    z = float32(0.0)
                    d0, d1, d2, d3 = mma(a00, a10, a01, a11, b00, b01, z, z, z, z)
                    d0, d1, d2, d3 = mma(a02, a12, a03, a13, b10, b11, d0, d1, d2, d3)
                    acc[4 * j] += d0 * f0
                    acc[4 * j + 1] += d1 * f0
                    acc[4 * j + 2] += d2 * f1
                    acc[4 * j + 3] += d3 * f1
            cuda.syncthreads()
        lr0 = 16 * warp + g
        for j in range(nt):
            m = 8 * j + 2 * t
            acc_tile[m * TILE_ROWS + lr0] = acc[4 * j]
            acc_tile[(m + 1) * TILE_ROWS + lr0] = acc[4 * j + 1]
            acc_tile[m * TILE_ROWS + lr0 + 8] = acc[4 * j + 2]
            acc_tile[(m + 1) * TILE_ROWS + lr0 + 8] = acc[4 * j + 3]
        cuda.syncthreads()

    return gemm

