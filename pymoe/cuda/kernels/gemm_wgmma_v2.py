"""The block GEMM on wgmma reading weight layout v2 (pymoe/ref/layout.py): the
wgmma GEMM at every block (``geometry.gemm_reads_v2``).

The block-GEMM contract of kernels/gemm.py, with ``w`` / ``s`` the experts' v2
words and v2 scale words (DeviceWeights.w13_v2 / w13_v2_scales, w2_v2 /
w2_v2_scales):

    gemm(acc_tile, blk, e, n0, a, w, s, pri, n_routes, top_k, tw)

leaves acc_tile[m * rows + 64 t + lr] = sum_k act[m, k] * W[row(t, lr), k] for
the B routes m of block ``blk``, the CTA's m-tiles t (rows =
geometry.acc_route_words: 64 x gemm_m_tiles + ACC_PAD, so the fragment stores
are free of bank conflicts) and each m-tile's 64 local rows lr
(common.make_row_map: gated w13 tiles hold 32 gate rows, then the 32 up rows of
the same columns).

Data path (pymoe/ref/wgmma.py v2_a_fragments / v2_b_image, checked on the CPU;
tests/cuda/test_wgmma.py's one-CTA chain kernel on the H200):
- A: warp w takes v2 row tile 4 (n0 / tn) + w (a gated tile: gate rows of 8
  columns as its rows 0..7, their up rows as 8..15, so the CTA's four tiles are
  the same 32 columns as the packed tile; otherwise 16 rows).  A lane takes its
  16 bytes of a k-tile (64 K) and decodes word s into k-step s's four A
  registers as they are (common.make_decoder: shifts and masks, FP4 x 2^-126 /
  2^-14), then multiplies them to value x scale in one packed multiply by a
  scale pair: bf16 MXFP4 E8M0 x 2^118 and fp16 MXFP4 2^14 x E8M0 (made in
  registers from the byte, e8m0_rows / f16_rows), fp16 NVFP4 the E4M3 value
  (cvt, e4m3_rows), bf16 NVFP4 E4M3 x 2^116 from a shared table; except the
  table, one pair holds both rows' (g, g + 8) factors and each multiply takes
  its half by operand selector.  The 2^8 /
  2^14 / 2^10 left over are taken out of the fp32 accumulators at the end.
  Exact where geometry.wgmma_scale_fold_ok.
- B: a k-tile's image is 4 k-step images of the block's routes in their
  natural K order (v2 holds each k-step in the fragment's own order), K-major
  in the 32-byte swizzle (sbo 256): a route's 16 values of k-step s as 8 words
  x0..x7 are one 32-byte row, x0 .. x3 and x4 .. x7 swapped where address bit 7
  is set (pymoe/ref/wgmma.py b_image_sw32).  A route's k-tile is staged in
  16-byte chunks (stage_chunk: zeros past K, padding routes skipped), a warp's
  lanes on consecutive chunks so each copy instruction reads whole 32-byte
  sectors and writes each into one 32-byte chunk of shared memory, which a
  copy needs to fetch the sector once (docs/performance.md steps 18 and 19):
  in the wide loop threads 4m .. 4m + 3 take chunks q and q + 4 of route m
  (stage_x), in the ring loop thread t takes chunk t % 8 of route t / 8.
- A CTA runs geometry.gemm_warpgroups(B) warpgroups on the one ring: warpgroup
  g (warps 4g .. 4g + 3) multiplies the CTA's row tiles 4g .. 4g + 3, i.e. its
  own 64 weight rows, so the activations are staged, fenced and barriered once
  for all of them; its accumulators land in rows 64g .. 64g + 63 of each
  route's warpgroups x 64 in the tile.  Blocks of 128 and 144
  (geometry.WGMMA_V2_MTILES 2) give a warpgroup two such m-tiles, the CTA's
  m-tiles 2g and 2g + 1.
- Two main loops on one cp.async ring, one barrier a k-tile each; the block
  picks:
  * the wide loop (B = 128 or 144, triton_kernels' 128 x 256 tile, or 144 x
    256; routes 128 .. 143 a 16-byte chunk a thread of warpgroup 1): the
    cp.async ring below with WGMMA_V2_WIDE_RING slots (4 k-tiles ahead, up to 172 KB of
    dynamic shared memory, one CTA an SM), each holding both m-tiles' weights
    and scales; threads 4m .. 4m + 3 stage routes m and m + 64.  Each m-tile's
    4 wgmma m64n128k16 are their own group, and wgmma.wait_group 1 before an
    m-tile's decode retires only that m-tile's previous group, so one m-tile's
    decode can run under the other's wgmma; n64 on the first 32 accumulators
    when routes 64 .. 127 are all padding, in a second copy of the loop chosen
    once a CTA (a branch inside the loop makes ptxas retire both groups before
    the second decode: step 13 of docs/performance.md).
  * the ring loop (B <= 64): WGMMA_V2_RING[B] slots, each a
    k-tile's weights (16 bytes a thread), scale word(s) and image (thread t
    stages 16-byte chunk t % 8 of route t / 8, and of route (t + 256) / 8
    where B > 32), every byte copied by cp.async (activations zero-filled
    past K, padding skipped; a router weight on the input, or a base not
    16-byte aligned, goes through registers and st.shared instead, in the
    same chunks), S - 2 k-tiles ahead (S slots).  Iteration c:
    cp.async.wait_group S - 3 (k-tile c landed), the proxy fence where
    activations went through registers (cp.async's own writes need none:
    triton_kernels fences none, and dropping it measured the same), barrier
    (every warp past k-tile c - 2); copies of k-tile c + S - 2 into the slot
    k-tile c - 2 used; weights and scales
    from shared memory; wgmma.wait_group 0 (k-tile c - 1, whose A registers are
    written next); decode; 4 wgmma.  No global load into registers is in flight
    at a fence, whose MEMBAR.ALL.CTA waits for every one.
  The ring loop runs whole turns of the ring unrolled (then the last k-tiles
  straight-line), so a k-tile's slot is a constant in its copy of the step:
  slot addresses and descriptors are the ring's plus constants, no counters.
  The wide loop keeps slot counters (unrolled, it ran 3% slower).
A tile index past the projection's row tiles is clamped to the last one; its
rows are past the outputs, which the epilogues never read.
"""
from __future__ import annotations

from numba import cuda, float32, int32, int64, uint32, uint64

from ...geometry import (GEMM_TILE_ROWS, WGMMA_V2_MTILES, WGMMA_V2_RING,
                         WGMMA_V2_WIDE_RING, LaunchKey, acc_route_words, gemm_threads,
                         is_gated, v2_k_tiles, v2_row_tiles, v2_scale_bytes)
from .common import (TILE_ROWS, Shape, e8m0_rows, f16_rows, make_decoder, make_pair16,
                     make_round_pair, make_scale_value, tile_roles)
from .gemm_mma import make_route_row
from .intrinsics import SIM
from .ptx import (cp_async4_g, cp_async8_g, cp_async16_g, cp_async16_z, cp_commit, gaddr,
                  e4m3x2_f16x2, ld_nc1, ld_nc4, lds1, lds2, lds4, make_cp_wait, mul2_bf16,
                  mul2_bf16_hi, mul2_bf16_lo, mul2_f16, mul2_f16_hi, mul2_f16_lo, prmt,
                  smem_u32, sts4)
from .wgmma import (fence_proxy_async, make_acc_fill, make_store_acc_t, make_wgmma_rs,
                    make_wgmma_wait, wgmma_commit, wgmma_desc_sw32, wgmma_fence)

__all__ = ["make_tile_gemm", "acc_tile_words"]

# The unrolled ring loop's steps (one copy per k-tile of a ring turn) are inlined
# by NVVM (forceinline), not copied into the caller's Numba IR, which took
# minutes on an unrolled 6-slot wide loop (as in decode.py).  The simulator takes no
# forceinline (it never builds these kernels, whose PTX is inline, but imports
# this module).
step_fn = (cuda.jit(device=True, inline=True) if SIM
           else cuda.jit(device=True, forceinline=True))

SBO = 256               # bytes between groups of 8 routes in the image
KT_WORDS = 128          # uint32 words of one v2 tile (32 lanes x 16 bytes)


def slot_bytes(block: int, fmt: str) -> int:
    """Bytes of one ring slot (one k-tile): every thread's 16 weight bytes an
    m-tile, its scale word(s) an m-tile, then the block's activation image (4
    k-steps x 32 bytes a route)."""
    nthr = gemm_threads("wgmma", block)
    mt = WGMMA_V2_MTILES[block]
    swl = 2 if fmt == "nvfp4" else 1
    return mt * (nthr * 16 + nthr * 4 * swl) + 4 * 32 * block


def ring_slots(block: int) -> int:
    """Slots of the cp.async ring: WGMMA_V2_WIDE_RING for the wide loop, else
    WGMMA_V2_RING[block]."""
    return WGMMA_V2_WIDE_RING if WGMMA_V2_MTILES[block] > 1 else WGMMA_V2_RING[block]


def acc_tile_words(block: int, fmt: str = "mxfp4") -> int:
    """fp32 words of the caller's accumulator tile (block routes x
    geometry.acc_route_words: the CTA's rows, padded): at least the ring (+ 256
    bytes to align it), which lives there until the tile is written: ring_slots
    slots (the caller allocates it as dynamic shared memory: 36 KB at B = 32,
    MXFP4; 156-168 KB in the wide loop)."""
    tile = block * acc_route_words("wgmma", block)
    return max(tile, ring_slots(block) * slot_bytes(block, fmt) // 4 + 64)


def make_tile_gemm(key: LaunchKey, sh: Shape, block: int, gather_tokens: bool,
                   accs: bool = False):
    """The v2 twin of gemm_wgmma.make_tile_gemm (see the module docstring).
    ``accs`` (the wide loop only): the GEMM returns its (acc0, acc1) fragments
    in registers instead of storing them into the tile (its ring copies done, no
    barrier after): fc2's make_acc_stores writes them where they go."""
    bf16 = key.dtype == "bfloat16"
    pair16 = make_pair16(key.dtype)
    scale_value = make_scale_value(key.format)
    nv = sh.nv
    b = block
    assert b in WGMMA_V2_MTILES, b
    mt = WGMMA_V2_MTILES[b]             # m64 tiles a warpgroup (2: the wide loop)
    wide = mt > 1
    assert not wide or b in (128, 144), b
    which = "w13" if gather_tokens else "w2"
    gated = gather_tokens and is_gated(key.activation)
    on_input = tile_roles(key, gather_tokens)[0]
    kdim = sh.k
    kt_n = v2_k_tiles(kdim)
    ntr = v2_row_tiles(which, key.activation, key.hidden_size, key.intermediate_size)
    tn = GEMM_TILE_ROWS // 2 if gated else GEMM_TILE_ROWS   # output columns a tile
    sw = v2_scale_bytes(key.format) // 4                   # scale words a v2 tile
    step_b = 32 * b                                        # one k-step's image, bytes
    img = 4 * step_b                                       # one k-tile's image
    ring = ring_slots(b)
    assert ring >= 3
    nthr = gemm_threads(key.gemm, b)
    rows = acc_route_words(key.gemm, b)     # words between routes in the tile (padded)
    # threads 4m .. 4m + 3 stage route m (wide: routes m and m + 64), a k-step each
    assert (4 * 64 == nthr) if wide else (4 * b <= nthr), b
    swl = 2 if nv else 1                                   # scale words a lane
    WSLOT = mt * nthr * 16                                 # a slot: weights, scales
    SSLOT = mt * nthr * 4 * swl                            # (m-tile major), the image
    SLOT = slot_bytes(b, key.format)
    assert SLOT == WSLOT + SSLOT + img and SLOT % 128 == 0, SLOT
    # the images start 256-byte aligned (their swizzle's repeat)
    assert SLOT % 256 == 0 and (WSLOT + SSLOT) % 256 == 0, SLOT
    cp_wait = make_cp_wait(ring - 3)          # k-tile c's group done, c + 1's may pend
    cp_wait0 = make_cp_wait(0)
    kw_tail = kdim % 64 != 0
    decode = make_decoder(key.dtype)
    mul2 = mul2_bf16 if bf16 else mul2_f16
    # One packed multiply a pair by its scale (the scale's value x tmul), and
    # the products are 1 / post of their value until the fp32 accumulators are
    # scaled (exact where geometry.wgmma_scale_fold_ok):
    # - bf16 MXFP4 (fold1): E8M0 x 2^118 made in registers, rows g and g + 8
    #   in one pair (e8m0_rows), each multiply taking its half;
    # - fp16 MXFP4: 2^14 x E8M0 made in registers (f16_rows, both rows), so
    #   the products are the weights' values (bytes 104 .. 128);
    # - fp16 NVFP4 (e4m3_rows, both rows): the E4M3 value by cvt, products x 2^-14;
    # - bf16 NVFP4 (table): E4M3 x 2^116 from a shared table (E4M3 -> bf16 has
    #   no conversion instruction on sm_90, and its subnormals no cheap bit path).
    fold1 = bf16 and not nv
    table = nv and bf16
    if nv:
        tmul = 2.0 ** 116 if bf16 else 1.0
    else:
        tmul = 2.0 ** 118 if fold1 else 1.0
    tmul, post = float32(tmul), float32(acc_post(key))
    fill = make_acc_fill(b)
    mma = make_wgmma_rs(b, key.dtype)
    mma64 = make_wgmma_rs(64, key.dtype) if wide else mma
    HALF = 8 * SBO                      # wide: routes 64 .. 127's image, bytes
    wait0 = make_wgmma_wait(0)
    wait1 = make_wgmma_wait(1)
    store_acc = make_store_acc_t(TILE_ROWS // 2 if gated else 8)
    round_pair = make_round_pair(key.dtype)
    route_row = make_route_row(key, block, gather_tokens)

    @cuda.jit(device=True, inline=True)
    def copy_w(c, slot, gw, gs, tid, i):
        """cp.async the 16 weight bytes and scale word(s) of this lane's m-tile i
        of the k-tile c past the one whose global addresses are gw, gs (k-tile 0,
        lane_addrs, or the ring loop's turn base: copy_ktile) into ring slot
        ``slot`` (shared address): one wide multiply-add each."""
        cp_async16_g(slot + uint32(i * nthr * 16) + uint32(16) * tid,
                     gw + uint64(c) * uint64(4 * KT_WORDS))
        ga = gs + uint64(c) * uint64(4 * sw)
        ss = slot + uint32(WSLOT + i * nthr * 4 * swl)
        if nv:                                          # rows g and g + 8
            cp_async8_g(ss + uint32(8) * tid, ga)
        else:                                           # both rows in one word
            cp_async4_g(ss + uint32(4) * tid, ga)

    @cuda.jit(device=True, inline=True)
    def e4m3_rows(wg, wu, st):
        """fp16 NVFP4: the E4M3 scales of k-step st for both rows as one fp16
        pair by one cvt: byte st of row g's word wg into the low byte, of row g +
        8's word wu into the high one (their values, exact)."""
        return e4m3x2_f16x2(prmt(wg, wu, uint32(0x4400 + st + ((4 + st) << 4))))

    @cuda.jit(device=True, inline=True)
    def a_regs(ww, st, sa, sc, s2):
        """k-step st's A registers (rows g, g + 8) from word ww, scaled by the
        scale words sa (MXFP4: both rows) and sc (NVFP4: row g + 8's)."""
        d0, d1, d2, d3 = decode(ww)
        if table:
            fg = s2[(sa >> uint32(8 * st)) & uint32(255)]
            fu = s2[(sc >> uint32(8 * st)) & uint32(255)]
            return mul2(d0, fg), mul2(d1, fu), mul2(d2, fg), mul2(d3, fu)
        if fold1:
            f = e8m0_rows(sa, st // 2)
            return (mul2_bf16_lo(d0, f), mul2_bf16_hi(d1, f), mul2_bf16_lo(d2, f),
                    mul2_bf16_hi(d3, f))
        f = e4m3_rows(sa, sc, st) if nv else f16_rows(sa, st // 2)
        return mul2_f16_lo(d0, f), mul2_f16_hi(d1, f), mul2_f16_lo(d2, f), mul2_f16_hi(d3, f)

    @cuda.jit(device=True, inline=True)
    def load8(a, src, avec):
        """4 activation words (8 values) at word src: one 16-byte load when the
        activations' base is 16-byte aligned (rows and 8-value groups are, since
        K % 8 == 0), else four 4-byte loads."""
        if avec:
            return ld_nc4(a, src)
        return ld_nc1(a, src), ld_nc1(a, src + 1), ld_nc1(a, src + 2), ld_nc1(a, src + 3)

    @cuda.jit(device=True, inline=True)
    def load_chunk(c, off, q, mult, a, avec):
        """The 4 activation words (16-byte chunk q, 8 values) of k-tile c of one
        route row at word offset off (>= 0), scaled by mult where the router
        weight is on the input: zeros past K (K % 8 == 0, so a chunk is all in
        or all out)."""
        z = uint32(0)
        x0 = x1 = x2 = x3 = z
        if uint32(c * uint32(64) + uint32(8) * q) < uint32(kdim):
            x0, x1, x2, x3 = load8(a, off + int64(uint32(c * uint32(32) + uint32(4) * q)),
                                   avec)
            if on_input:
                x0 = round_pair(x0, mult)
                x1 = round_pair(x1, mult)
                x2 = round_pair(x2, mult)
                x3 = round_pair(x3, mult)
        return x0, x1, x2, x3

    @cuda.jit(device=True, inline=True)
    def route_src(off, mult, q, a):
        """A staging thread's route: (off, mult) as route_row gives them, and for
        the cp.async copies the global address of chunk q of its row at k-tile 0
        (0 in padding)."""
        xa = uint64(0)
        if off >= 0:
            xa = uint64(gaddr(a, off + int64(4) * int64(q)))
        return off, mult, xa

    @cuda.jit(device=True, inline=True)
    def img_row(m):
        """Route m's (uint32) 32-byte row in a ring slot's k-step 0 image, slot-
        relative: groups of 8 routes SBO bytes apart."""
        return uint32(WSLOT + SSLOT) + (m >> uint32(3)) * uint32(SBO) + (
            m & uint32(7)) * uint32(32)

    @cuda.jit(device=True, inline=True)
    def chunk_at(row, q):
        """The shared address of 16-byte chunk q (0 .. 7: k-step q / 2's half q % 2)
        of a route row at shared address row (k-step s's 32 bytes at + s step_b)
        in the 32-byte swizzle: a k-step's halves swapped where bit 7 of the
        address is set, so both stay in the row's 32-byte chunk."""
        return (row + (q >> uint32(1)) * uint32(step_b)
                + (((q & uint32(1)) << uint32(4)) ^ ((row >> uint32(3)) & uint32(16))))

    @cuda.jit(device=True, inline=True)
    def copy16(r, ga, k0, zsrc):
        """cp.async 16 bytes (8 values from K index k0) from global address ga
        to shared address r, zero-filled past K (reading nothing: from zsrc)."""
        if kw_tail:
            ok = k0 < uint32(kdim)
            cp_async16_z(r, ga if ok else zsrc, uint32(16) if ok else uint32(0))
        else:
            cp_async16_g(r, ga)

    @cuda.jit(device=True, inline=True)
    def copy_chunk(c, cr, row, off, xa, q):
        """Chunk q of k-tile c of a route row (at word offset off, < 0: padding,
        skipped) into the image at row, by cp.async from xa, chunk q's global
        address at k-tile c - cr (the ring loop's bases move a turn at a time).
        The two lanes of a 32-byte global sector write one 32-byte chunk of
        shared memory, so the copy fetches each sector once (a no-swizzle
        image, halves 128 bytes apart, fetched each twice: docs/performance.md
        step 18, tools/probe_l2_copies.py)."""
        if off >= 0:
            copy16(chunk_at(row, q), xa + uint64(cr) * uint64(128),
                   uint32(c * uint32(64) + uint32(8) * q), xa)

    @cuda.jit(device=True, inline=True)
    def put_chunk(c, row, off, mult, q, a, avec):
        """copy_chunk through registers, for when the values must be scaled
        (router weight on the input) or the base is not 16-byte aligned:
        loaded, scaled and stored (the next barrier's proxy fence covers the
        stores); zeros past K."""
        if off >= 0:
            x0, x1, x2, x3 = load_chunk(c, off, q, mult, a, avec)
            sts4(chunk_at(row, q), x0, x1, x2, x3)

    @cuda.jit(device=True, inline=True)
    def stage_chunk(c, row, rsrc, q, a, avec):
        """16-byte chunk q of k-tile c of one route row into the image at row
        (rsrc: route_src's tuple at chunk q), by copy_chunk or put_chunk.  A
        padding route's chunks are skipped: its image columns keep stale
        values, which reach only its own accumulator columns (wgmma's N side),
        never read."""
        off, mult, xa = rsrc
        if on_input or not avec:
            put_chunk(c, row, off, mult, q, a, avec)
        else:
            copy_chunk(c, c, row, off, xa, q)

    @cuda.jit(device=True, inline=True)
    def stage_x(c, row, rsrc, q, a, avec):
        """Thread q's quarter of k-tile c of one route row (the wide loop's
        mapping, threads 4m .. 4m + 3 on route m): chunks q and q + 4 (as
        stage_chunk), so the warp's first copy takes bytes 0..63 of each of its
        routes' 128-byte runs and its second bytes 64..127."""
        off, mult, xa = rsrc
        if on_input or not avec:
            put_chunk(c, row, off, mult, q, a, avec)
            put_chunk(c, row, off, mult, q + uint32(4), a, avec)
        elif off >= 0:                  # copy_chunk twice, sharing the addresses
            r = chunk_at(row, q)
            ga = xa + uint64(c) * uint64(128)
            k0 = uint32(c * uint32(64) + uint32(8) * q)
            copy16(r, ga, k0, xa)
            copy16(r + uint32(2 * step_b), ga + uint64(64), uint32(k0 + uint32(32)), xa)

    # Blocks of 144: routes 128 .. 143 are staged one 16-byte chunk a thread by the
    # CTA's last 8 (b - 128) threads (warpgroup 1 at 144), so every warp issues 4
    # or 5 activation copies a k-tile rather than warps 0 and 1 six.  The ring
    # loop (blocks <= 64) stages all its routes so: thread t chunk t % 8 of route
    # t / 8 and, past 32 routes, of route (t + nthr) / 8.
    X3 = nthr - 8 * (b - 128) if b > 128 else nthr
    assert X3 >= 0
    assert wide or 8 * b <= 2 * nthr, b

    @cuda.jit(device=True, inline=True)
    def ktile(acc, wa0, wa1, wa2, wa3, sa0, sa1, s2, dring, cur, slot16):
        """One k-tile on the tensor cores, both loops: wait for the previous one
        (its A registers are written next), decode words wa0..wa3 with their
        scales, issue the 4 wgmma on ring slot cur's image (descriptor dring plus
        cur slots of slot16 16-byte units), commit."""
        wait0()
        acc = issue4(acc, wa0, wa1, wa2, wa3, sa0, sa1, s2,
                     dring + int64(cur * uint32(slot16)))
        wgmma_commit()
        return acc

    def make_issue4(mma_n):
        @cuda.jit(device=True, inline=True)
        def issue4(acc, wa0, wa1, wa2, wa3, sa0, sa1, s2, d):
            """Decode words wa0..wa3 (one m-tile's k-tile) with their scales and
            issue its 4 wgmma (mma_n) on the image at descriptor d, uncommitted."""
            p00, p01, p02, p03 = a_regs(wa0, 0, sa0, sa1, s2)
            p10, p11, p12, p13 = a_regs(wa1, 1, sa0, sa1, s2)
            p20, p21, p22, p23 = a_regs(wa2, 2, sa0, sa1, s2)
            p30, p31, p32, p33 = a_regs(wa3, 3, sa0, sa1, s2)
            wgmma_fence()
            acc = mma_n(acc, p00, p01, p02, p03, d, int32(1))
            acc = mma_n(acc, p10, p11, p12, p13, d + step_b // 16, int32(1))
            acc = mma_n(acc, p20, p21, p22, p23, d + 2 * step_b // 16, int32(1))
            acc = mma_n(acc, p30, p31, p32, p33, d + 3 * step_b // 16, int32(1))
            return acc
        return issue4

    issue4 = make_issue4(mma)
    issue4_64 = make_issue4(mma64)      # wide, padded half: routes 0..63 (32 accumulators)

    @cuda.jit(device=True, inline=True)
    def store_mtile(acc_tile, acc, i):
        """m-tile i's accumulators of this warp into the tile (after every
        warpgroup's last wgmma and the barrier that frees the ring): the CTA's
        m-tile mt(warp, i) takes the tile's rows 64 mt .. 64 mt + 63 of each route."""
        tid = cuda.threadIdx.x
        warp = tid // 32
        lane = tid % 32
        g = lane // 4                   # the fragment's row group and column pair
        t = lane % 4
        wl = warp % 4                   # the warp in its warpgroup
        lr = (8 * wl + g) if gated else (16 * wl + g)
        store_acc(acc_tile, int64(2 * t) * rows + m_tile(warp, i) * TILE_ROWS + lr, rows,
                  post, acc)

    @cuda.jit(device=True, inline=True)
    def store_tile(acc_tile, acc):
        """The accumulators into the tile, then the barrier the epilogue reads after."""
        store_mtile(acc_tile, acc, 0)
        cuda.syncthreads()

    @cuda.jit(device=True, inline=True)
    def m_tile(warp, i):
        """The CTA's m-tile (64 weight rows) that warp ``warp``'s m-tile i is:
        warpgroup g's are mt g .. mt g + mt - 1."""
        return (warp // 4) * mt + i

    @cuda.jit(device=True, inline=True)
    def lane_addrs(e, n0, j, i, w, s):
        """lane_bases as the global addresses (uint64) of k-tile 0's words."""
        wb, sb = lane_bases(e, n0, j, i)
        return uint64(gaddr(w, wb)), uint64(gaddr(s, sb))

    @cuda.jit(device=True, inline=True)
    def lane_bases(e, n0, j, i):
        """(wb, sb): thread j's first weight word and scale word(s) of its m-tile
        i's v2 row tile (row tile 4 (n0 / tn + m_tile(warp, i)) + warp % 4 of
        expert e, warp = j // 32, clamped to the last; NVFP4: rows g and g + 8,
        MXFP4: both rows in one word)."""
        warp = j // 32
        lane = j % 32
        g = lane // 4
        tile = min(int64(n0 // tn + m_tile(warp, i)) * 4 + warp % 4, ntr - 1)
        tix = (e * ntr + tile) * kt_n
        return tix * KT_WORDS + lane * 4, tix * sw + (2 * g if nv else g)

    @cuda.jit(device=True, inline=True)
    def copy_ktile(c, cr, sl, gw0, gs0, gw1, gs1, xoff, r0, r1, r2, q, a, utid, avec):
        """The copies of k-tile c (< kt_n) into ring slot sl: this thread's
        weights and scale word(s) of each m-tile (cp.async), and its activation
        chunks (stage_chunk; r0, r1, r2: route_src, rows from xoff: ring_setup):
        the wide loop's chunks q and q + 4 of routes m and m + 64 (stage_x) and
        at blocks of 144 from thread X3 on chunk utid % 8 of route 128 + (utid -
        X3) / 8; the ring loop's chunk q = utid % 8 of route utid / 8 and, past
        nthr / 8 routes, of route utid / 8 + nthr / 8.  Uncommitted.  The ring
        loop's global addresses (gw0, gs0 and its routes' xa) are those of
        k-tile c - cr, cr a constant in each unrolled step; the wide loop's
        of k-tile 0 (cr = c)."""
        copy_w(cr, sl, gw0, gs0, utid, 0)
        if wide:
            copy_w(cr, sl, gw1, gs1, utid, 1)
            stage_x(c, sl + xoff, r0, q, a, avec)
            stage_x(c, sl + xoff + uint32(HALF), r1, q, a, avec)
            if b > 128:
                if utid >= uint32(X3):
                    stage_chunk(c, sl + img_row(uint32(128) + ((utid - uint32(X3)) >> uint32(3))),
                                r2, utid & uint32(7), a, avec)
        else:
            off0, mult0, xa0 = r0
            off1, mult1, xa1 = r1
            row1 = sl + xoff + uint32(nthr // 64 * SBO)     # route utid / 8 + nthr / 8
            if on_input or not avec:
                put_chunk(c, sl + xoff, off0, mult0, q, a, avec)
                if 8 * b > nthr:
                    put_chunk(c, row1, off1, mult1, q, a, avec)
            else:
                copy_chunk(c, cr, sl + xoff, off0, xa0, q)
                if 8 * b > nthr:
                    copy_chunk(c, cr, row1, off1, xa1, q)

    @cuda.jit(device=True, inline=True)
    def ring_prologue(ring_base, gw0, gs0, gw1, gs1, xoff, r0, r1, r2, q, a, utid, avec, s2,
                      tid):
        """The copies of k-tiles 0 .. ring - 3 (those < kt_n), one group each
        (empty past kt_n: the group count stays), then the scale table (the
        first iteration's barrier publishes it)."""
        for c0 in range(ring - 2):
            if c0 < kt_n:
                copy_ktile(uint32(c0), uint32(c0), ring_base + uint32(c0 * SLOT), gw0, gs0, gw1,
                           gs1, xoff, r0, r1, r2, q, a, utid, avec)
            cp_commit()
        fill_table(s2, tid)

    @cuda.jit(device=True, inline=True)
    def fill_table(s2, tid):
        """The shared scale table: scale byte -> its 16-bit pair x tmul (bf16
        NVFP4 only: the others make their scales in registers)."""
        if table:
            for i in range(tid, 256, nthr):
                s2[i] = pair16(scale_value(i) * tmul)

    @cuda.jit(device=True, inline=True)
    def ring_setup(acc_tile, a, tid):
        """(ring_base, xoff, avec, st_x, utid): the ring's 256-byte aligned base
        in the caller's tile (the image's swizzle repeats every 256 bytes), the
        row (img_row) of this thread's route m in a slot's image (the wide
        loop's m = tid / 4, the ring loop's tid / 8: copy_ktile), whether the
        activations' base is 16-byte aligned, whether stage_chunk stores
        through registers (then the proxy fence is needed), and tid as uint32."""
        utid = uint32(tid)
        ring_base = (smem_u32(acc_tile) + uint32(255)) & uint32(0xFFFFFF00)
        xoff = img_row(utid >> uint32(2 if wide else 3))
        avec = (gaddr(a, 0) & 15) == 0
        return ring_base, xoff, avec, on_input or not avec, utid

    @cuda.jit(device=True, inline=True)
    def ring_wait(st_x):
        """The top of a ring iteration: this thread's copies of its k-tile
        landed, the proxy fence where activations went through st.shared (the
        async proxy, wgmma, sees them past the barrier), the barrier."""
        cp_wait()
        if st_x:
            fence_proxy_async()
        cuda.syncthreads()

    @cuda.jit(device=True, inline=True)
    def ring_copy(c, ct, nxt, ring_base, gw0, gs0, gw1, gs1, xoff, r0, r1, r2, q, a, utid,
                  avec):
        """After iteration c's barrier: k-tile c + ring - 2's copies into slot nxt,
        the one k-tile c - 2 was read from (every warp retired that k-tile's
        wgmma before the barrier), as one group (empty past the last k-tile:
        the group count stays).  The global addresses are k-tile ct's."""
        cs = uint32(c + uint32(ring - 2))
        if cs < uint32(kt_n):
            copy_ktile(cs, uint32(cs - ct), ring_base + nxt * uint32(SLOT), gw0, gs0, gw1, gs1,
                       xoff, r0, r1, r2, q, a, utid, avec)
        cp_commit()

    @cuda.jit(device=True, inline=True)
    def ring_refill(c, ct, nxt, ring_base, st_x, gw0, gs0, gw1, gs1, xoff, r0, r1, r2, q, a,
                    utid, avec):
        """ring_wait, then ring_copy: the top of ring iteration c."""
        ring_wait(st_x)
        ring_copy(c, ct, nxt, ring_base, gw0, gs0, gw1, gs1, xoff, r0, r1, r2, q, a, utid, avec)

    @cuda.jit(device=True, inline=True)
    def ring_desc(ring_base):
        """The image descriptor of ring slot 0.  Descriptors: the start address is
        the low 14 bits (16-byte units) and shared addresses stay below 256 KB,
        so slot j's image descriptor is slot 0's plus j SLOT / 16, no carry out
        of the field."""
        return wgmma_desc_sw32(ring_base + uint32(WSLOT + SSLOT), SBO)

    @cuda.jit(device=True, inline=True)
    def ring_next(i):
        """The ring slot after slot i (the wide loop's counters)."""
        return uint32(0) if i == uint32(ring - 1) else uint32(i + uint32(1))

    @cuda.jit(device=True, inline=True)
    def slot_words(sc, utid, i):
        """(w0, w1, w2, w3, s0, s1): this thread's m-tile i weight words and
        scale words (NVFP4: rows g and g + 8; MXFP4: both rows in s0, groups 0
        / 1 of row g in bytes 0 / 1 and of row g + 8 in bytes 2 / 3, which
        e8m0_rows / f16_rows take together; s1 unused, 0) in the ring slot at
        shared address sc."""
        w0, w1, w2, w3 = lds4(sc + uint32(i * nthr * 16) + uint32(16) * utid)
        ss = sc + uint32(WSLOT + i * nthr * 4 * swl)
        if nv:
            s0, s1 = lds2(ss + uint32(8) * utid)
        else:
            s0 = lds1(ss + uint32(4) * utid)
            s1 = uint32(0)
        return w0, w1, w2, w3, s0, s1

    # The ring loop runs whole turns of the ring unrolled, then the last kt_n % ring
    # k-tiles straight-line: k-tile c's slot c % ring is a constant in each copy
    # of the step, so no slot counters are kept and the descriptors and slot
    # addresses are the ring's plus constants (docs/performance.md step 22).
    kt_left = kt_n % ring
    kt_main = kt_n - kt_left
    # Where a thread stages two routes (blocks of 48 / 64), ptxas at the cap of 80
    # registers recomputed each copy's 64-bit address from k-tile 0's into one
    # register pair, so each copy waited for the last to read its address (long
    # scoreboard; docs/performance.md step 47): there the addresses move a turn at
    # a time and each copy adds a constant.  At blocks up to 32 ptxas folds the
    # constants itself and the per-turn moves only cost instructions; fc2 at 64
    # spills 72-96 bytes with them (local ptxas, every format x dtype).
    TURN_BASES = 8 * b > nthr and (b < 64 or gather_tokens)

    @step_fn
    def ring_step(acc, ct, j, ring_base, dring, st_x, gw, gs, xoff, r0, r1, q, a, utid, avec,
                  s2):
        """Ring-loop iteration c, whose slot j = c % ring is a constant:
        ring_refill into slot (j + ring - 2) % ring, then k-tile c from slot j.
        (Every warp's wait_group 0 in k-tile c - 1 retired k-tile c - 2's wgmma.)
        c = ct + j, ct the turn's first k-tile.  Where a thread stages two
        routes (TURN_BASES) gw, gs and the routes' xa are k-tile ct's
        addresses, so each copy's is theirs plus a constant; else k-tile 0's."""
        cur = uint32(j)
        nxt = uint32((j + ring - 2) % ring)
        c = uint32(ct + uint32(j))
        ring_refill(c, ct if TURN_BASES else uint32(0), nxt, ring_base, st_x, gw, gs, gw, gs,
                    xoff, r0, r1, r0, q, a, utid, avec)
        wa0, wa1, wa2, wa3, sa0, sa1 = slot_words(ring_base + cur * uint32(SLOT), utid, 0)
        return ktile(acc, wa0, wa1, wa2, wa3, sa0, sa1, s2, dring, cur, SLOT // 16)

    def make_ring_steps(n):
        """ring_steps(acc, c, ...): ring-loop iterations c .. c + n - 1 (c % ring ==
        0), slots 0 .. n - 1, one inlined copy each."""
        if n == 1:
            @step_fn
            def one(acc, c, ring_base, dring, st_x, gw, gs, xoff, r0, r1, q, a, utid, avec, s2):
                return ring_step(acc, c, 0, ring_base, dring, st_x, gw, gs, xoff, r0, r1, q, a,
                                 utid, avec, s2)
            return one
        head = make_ring_steps(n - 1)
        j = n - 1

        @step_fn
        def steps(acc, c, ring_base, dring, st_x, gw, gs, xoff, r0, r1, q, a, utid, avec, s2):
            acc = head(acc, c, ring_base, dring, st_x, gw, gs, xoff, r0, r1, q, a, utid, avec,
                       s2)
            return ring_step(acc, c, j, ring_base, dring, st_x, gw, gs,
                             xoff, r0, r1, q, a, utid, avec, s2)
        return steps

    ring_turn = make_ring_steps(ring)
    ring_rest = make_ring_steps(max(kt_left, 1))

    @cuda.jit(device=True, inline=True)
    def gemm(acc_tile, blk, e, n0, a, w, s, pri, n_routes, top_k, tw):
        tid = cuda.threadIdx.x
        s2 = cuda.shared.array(256, uint32)             # scale byte -> 16-bit pair
        gw, gs = lane_addrs(e, n0, tid, 0, w, s)
        ring_base, xoff, avec, st_x, utid = ring_setup(acc_tile, a, tid)
        q = uint32(tid & 7)             # chunk q of routes tid / 8 and (past nthr / 8
        off = int64(-1)                 # routes) tid / 8 + nthr / 8: copy_ktile
        mult = float32(1.0)
        off1 = int64(-1)
        mult1 = float32(1.0)
        if tid < 8 * b:
            off, mult = route_row(blk, tid >> 3, pri, n_routes, top_k, tw)
        if 8 * b > nthr and tid < 8 * b - nthr:
            off1, mult1 = route_row(blk, (tid + nthr) >> 3, pri, n_routes, top_k, tw)
        r0 = route_src(off, mult, q, a)
        r1 = route_src(off1, mult1, q, a)
        ring_prologue(ring_base, gw, gs, gw, gs, xoff, r0, r1, r0, q, a, utid, avec, s2, tid)
        acc = fill(float32(0.0))
        dring = ring_desc(ring_base)
        c = uint32(0)
        while c < uint32(kt_main):      # whole turns of the ring, then the rest
            acc = ring_turn(acc, c, ring_base, dring, st_x, gw, gs, xoff, r0, r1, q, a, utid,
                            avec, s2)
            c = uint32(c + uint32(ring))
            if TURN_BASES:
                # the addresses move to the next turn's first k-tile (a padding
                # route's xa, 0, moves too: never read)
                gw = gw + uint64(ring * 4 * KT_WORDS)
                gs = gs + uint64(ring * 4 * sw)
                r0 = (r0[0], r0[1], r0[2] + uint64(ring * 128))
                r1 = (r1[0], r1[1], r1[2] + uint64(ring * 128))
        if kt_left > 0:
            acc = ring_rest(acc, c, ring_base, dring, st_x, gw, gs, xoff, r0, r1, q, a, utid,
                            avec, s2)
        wait0()
        cp_wait0()                      # (only empty groups can be left)
        cuda.syncthreads()              # every warpgroup's wgmma done: the ring is free
        store_tile(acc_tile, acc)

    def make_wide_loop(full):
        """The wide loop from k-tile 0's top to its last wgmma retired: n128 wgmma
        (full) or n64 on the first 32 accumulators of each m-tile (routes
        64..127 all padding), chosen once a CTA so that no branch inside the
        k-loop merges accumulators in flight (ptxas then retires both m-tiles'
        groups before each decode: performance.md Speed II step 13).  Returns
        both m-tiles' 64 accumulators (a padded half's last 32 zero, never read)."""
        issue = issue4 if full else issue4_64
        fill_n = fill if full else fill64
        pad = keep if full else widen

        @cuda.jit(device=True, inline=True)
        def loop(ring_base, st_x, gw0, gs0, gw1, gs1, xoff, r0, r1, r2, hh, a, utid, avec, s2):
            # (not unrolled by a ring turn like the ring loop: measured 3% slower
            # at T = 4096, docs/performance.md step 22)
            acc0 = fill_n(float32(0.0))
            acc1 = fill_n(float32(0.0))
            dring = ring_desc(ring_base)
            cur = uint32(0)                 # slots of k-tiles c, c + ring - 2
            nxt = uint32(ring - 2)
            c = uint32(0)
            while c < uint32(kt_n):
                ring_wait(st_x)
                # k-tile c's weights and scales first: their shared loads do not
                # queue behind the copies in the memory pipe
                sc = ring_base + cur * uint32(SLOT)
                x0, x1, x2, x3, sa0, sa1 = slot_words(sc, utid, 0)
                y0, y1, y2, y3, sc0, sc1 = slot_words(sc, utid, 1)
                # (every warp's wait_group 1 before k-tile c - 1's second m-tile
                # retired k-tile c - 2's groups)
                ring_copy(c, uint32(0), nxt, ring_base, gw0, gs0, gw1, gs1, xoff, r0, r1, r2, hh,
                          a, utid, avec)
                d = dring + int64(cur * uint32(SLOT // 16))
                wait1()                     # m-tile 0's group of k-tile c - 1 retired
                acc0 = issue(acc0, x0, x1, x2, x3, sa0, sa1, s2, d)
                wgmma_commit()
                wait1()                     # m-tile 1's group of k-tile c - 1 retired
                acc1 = issue(acc1, y0, y1, y2, y3, sc0, sc1, s2, d)
                wgmma_commit()
                cur = ring_next(cur)
                nxt = ring_next(nxt)
                c = uint32(c + uint32(1))
            wait0()
            return pad(acc0), pad(acc1)
        return loop

    @cuda.jit(device=True, inline=True)
    def keep(acc):
        return acc

    @cuda.jit(device=True, inline=True)
    def widen(acc):                     # 32 accumulators -> the full fragment's b / 2
        return acc + fill_rest(float32(0.0))

    if wide:
        fill64 = make_acc_fill(64)
        fill_rest = make_acc_fill(b - 64)
        loop_full = make_wide_loop(True)       # blocks of 128 / 144 with routes 64.. live
        loop_half = make_wide_loop(False)      # routes 64.. all padding

    @cuda.jit(device=True, inline=True)
    def gemm_wide(acc_tile, blk, e, n0, a, w, s, pri, n_routes, top_k, tw):
        """The wide loop (blocks of 128, see the module doc): two m-tiles a
        warpgroup, each decoded and issued as its own wgmma group while the
        other's runs."""
        tid = cuda.threadIdx.x
        s2 = cuda.shared.array(256, uint32)             # scale byte -> 16-bit pair
        gw0, gs0 = lane_addrs(e, n0, tid, 0, w, s)
        gw1, gs1 = lane_addrs(e, n0, tid, 1, w, s)
        m = tid >> 2                    # threads 4m .. 4m + 3 stage routes m and
        hh = uint32(tid & 3)            # m + 64, a quarter each (stage_x)
        off, mult = route_row(blk, m, pri, n_routes, top_k, tw)
        off1, mult1 = route_row(blk, m + 64, pri, n_routes, top_k, tw)
        ring_base, xoff, avec, st_x, utid = ring_setup(acc_tile, a, tid)
        off2 = int64(-1)                # blocks past 128: routes 128 .. b - 1, a
        mult2 = float32(1.0)            # chunk a thread from X3 on (copy_ktile)
        if b > 128 and tid >= X3:
            off2, mult2 = route_row(blk, 128 + ((tid - X3) >> 3), pri, n_routes, top_k, tw)
        r0 = route_src(off, mult, hh, a)
        r1 = route_src(off1, mult1, hh, a)
        r2 = route_src(off2, mult2, uint32(tid & 7), a)
        live1 = int64(pri[blk * b + 64]) < n_routes     # (uniform) routes 64.. hold one
        ring_prologue(ring_base, gw0, gs0, gw1, gs1, xoff, r0, r1, r2, hh, a, utid, avec, s2,
                      tid)
        if live1:
            acc0, acc1 = loop_full(ring_base, st_x, gw0, gs0, gw1, gs1, xoff, r0, r1, r2, hh,
                                   a, utid, avec, s2)
        else:
            acc0, acc1 = loop_half(ring_base, st_x, gw0, gs0, gw1, gs1, xoff, r0, r1, r2, hh,
                                   a, utid, avec, s2)
        cp_wait0()                      # (only empty groups can be left)
        if accs:
            return acc0, acc1
        cuda.syncthreads()              # every warpgroup's wgmma done: the ring is free
        store_mtile(acc_tile, acc0, 0)
        store_mtile(acc_tile, acc1, 1)
        cuda.syncthreads()

    assert wide or not accs, block
    return gemm_wide if wide else gemm


def acc_post(key: LaunchKey) -> float:
    """What the v2 GEMM's fp32 accumulators are multiplied by at the end (the
    power of two its scale fold left out: make_tile_gemm)."""
    bf16 = key.dtype == "bfloat16"
    if key.format == "nvfp4":
        return 1024.0 if bf16 else 2.0 ** 14
    return 256.0 if bf16 else 1.0
