"""Decode kernels on weight layout v2 (launched by pymoe/cuda/decode.py): small T,
no route packing; each CTA reads topk_ids itself.

Shape legend: T tokens, k top-k, R = T*k (r = t*k + j), E local experts, H, I,
K the reduction dim (H for fc1, I for fc2), KT = ceil(K/64) k-tiles, NTR row tiles.

    decode_fc1  grid (gx, min(R, E)): CTA (bx, a) takes the a-th active expert e
                (in expert order) and row tiles bx, bx+gx, ... of its w13;
                intermediate[r, cols] = act(...) for every route r of e (zero rows
                for invalid routes, written by the CTAs with a == r % gy)
    decode_fc2  the same over w2: route_out[r, cols] = w_r * (W2[e] @ a_r * g2 + b2)
    (then fc2's combine sums the k routes of each token in j order)

On sm_90 decode_fc2 and the combine are programmatic dependent launches
(launch.PreparedLaunch.dependent): decode_fc1 and decode_fc2 let their
dependent grid be scheduled at their start (pdl_trigger), and decode_fc2 does
everything that reads inputs only (the routing scan, the scale tables, its
ring's first weight stages) before pdl_wait, after which decode_fc1's output is
complete and visible.  Before pdl_wait it writes nothing but shared memory.

A CTA is W = geometry.decode_conf(which, k-tiles).warps warps (4, or 8 for a
decode_fc2 over a long K) on ONE group of G = decode_row_group(NTR) 16-row
tiles side by side (row tiles i .. i + G - 1; G = 2 when NTR is even, else 1):
warp w takes k-tiles w, w+W, ... of each (split K; each step a warp reads G x
512 bytes of weights, one activation load serving the G tiles) and the
partial mma fragments of each tile meet in shared memory in a fixed order
(deterministic: the bits do not depend on G).  The
routes of e ride on the mma's N side, NT x 8 per pass over the group (NT =
decode_conf(...).ntiles).
The ring and the partials are static shared arrays in a narrow CTA and dynamic
shared memory (KernelSpec.dyn_smem) in a wide one.
Each warp's k-tiles of all its groups and passes form one stream: a lane copies
its 16 bytes of weights and its 4 / 8 scale bytes of each tile of the group per
k-tile into its own slot of a shared-memory ring of DECODE_RING / G stages with
cp.async (one group per stage, DECODE_RING / G - 1 stages ahead, across groups
and passes), waits for the oldest and reads the slot back (it reads only what it
copied, so no barrier); activations (two 4-byte pairs a route and k-step) are .nc
loads, cached.
A CTA finds its expert from the active-expert bitmap (a warp shuffle prefix of
the words' popcounts), copies the ring items that stay inside its first pass
(they need only the expert), and only then scans for that expert's routes, so
the scan runs under the weights' first DRAM round trip.
The FP4 -> 16-bit decode is shifts and masks (pymoe/ref/layout.py) and one
packed multiply per pair:
  MXFP4: x 2^126 (bf16) / 2^14 (fp16), exact; each 32-group's two k-steps
         accumulate into a fresh fragment that is added times the fp32 scale
         (from a shared table);
         where the key folds (geometry.decode_folds) x the group's E8M0 scale
         made in registers instead (common.e8m0_rows: x 2^-8 more, taken back
         in the epilogue / f16_rows), exact, and the fresh fragment is added
         as it is: the same bits, without the table's loads and the multiply.
  NVFP4: x (E4M3 scale x 2^116) (bf16) / x (E4M3 x 2^7) (fp16), exact; the
         missing 2^10 / 2^7 goes into the fp32 global scale in the epilogue.
Under Numba's simulator (no inline PTX) the ring runs as is on plain-Python
copies (ptx.py), every slot read is checked against the tile it should hold
and the guarded step against the partial last k-tile (it runs there and only
there), and each lane computes its own fragment entries from the same words
with the same decoder, in plain code.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, int16, int32, int64, uint32

from ...geometry import (DECODE_NARROW, DECODE_ROUTE_CAP, V2_LANE_WORDS, V2_TILE_K, V2_TILE_ROWS,
                         LaunchKey, decode_conf, decode_folds, decode_ring_stages,
                         decode_row_group,
                         is_gated, v2_k_tiles, v2_row_tiles, v2_scale_bytes)
from ...dtypes import round_to
from ...ref.layout import decode_pairs
from .common import (M14, M126, e8m0_rows, f16_rows, make_decoder, make_fc1_epilogue,
                     make_fc2_epilogue, make_round_pair, make_scale_value)
from .intrinsics import SIM, act_code, bf16_to_f32, f32_to_bf16, make_act_io
from .ptx import (cp_async4_g, cp_async8_g, cp_async16_g, cp_commit, f2h, gaddr, h2f, ld_nc1,
                  lds1, lds2, lds4, make_cp_wait, mma_bf16, mma_f16, mul2_bf16, mul2_bf16_hi,
                  mul2_bf16_lo, mul2_f16, mul2_f16_hi, mul2_f16_lo,
                  pdl_trigger, pdl_wait, smem_u32)
from .routes import local_expert
from .spec import KernelSpec

__all__ = ["build_fc1", "build_fc2", "make_decoder"]

# Device helpers here are inlined by NVVM (forceinline), not copied into the
# caller's Numba IR: the unrolled k loop would make Numba's IR inlining take
# minutes (launch._compile lets them compile without a GPU).  The simulator
# takes no forceinline.
device_fn = cuda.jit(device=True, inline=True) if SIM else cuda.jit(device=True,
                                                                    forceinline=True)


def _build(key: LaunchKey, which: str) -> KernelSpec:
    fc1 = which == "w13"
    bf16 = key.dtype == "bfloat16"
    nv = key.format == "nvfp4"
    fold = decode_folds(key)       # MXFP4 scales in the packed multiply (never under SIM)
    assert not (fold and SIM), "the simulator's keys do not fold (no device: 'mma')"
    gated = fc1 and is_gated(key.activation)
    on_input = fc1 and key.router_on_input
    hid, inter = key.hidden_size, key.intermediate_size
    kdim = hid if fc1 else inter
    kt_n = v2_k_tiles(kdim)
    conf = decode_conf(which, kt_n)
    W = conf.warps                             # K split W ways
    NT = conf.ntiles
    assert NT in (1, 2), "the fragment code below is written out for 1 or 2 n-tiles"
    THREADS = 32 * W
    SLOTS = 8 * NT                             # routes per pass
    ntr = v2_row_tiles(which, key.activation, hid, inter)
    rg = decode_row_group(ntr)       # row tiles a warp takes side by side
    pair = rg == 2
    depth = decode_ring_stages(ntr)  # ring stages (one k-tile of the group)
    sbytes = v2_scale_bytes(key.format)
    swords = sbytes // 4                                  # scale words per tile
    ncols = inter if fc1 else hid                         # output columns
    half = V2_TILE_ROWS // 2
    decode = make_decoder(key.dtype)
    scale_value = make_scale_value(key.format)
    mma = mma_bf16 if bf16 else mma_f16
    mul2 = mul2_bf16 if bf16 else mul2_f16
    load, store, _ = make_act_io(key.dtype)
    epi1 = make_fc1_epilogue(key)
    epi2 = make_fc2_epilogue(key)
    round_pair = make_round_pair(key.dtype)
    # NVFP4 weights carry 2^-10 (bf16) / 2^-7 (fp16) less than their value
    post = float32(1.0)
    if fold and bf16:
        post = float32(256.0)                 # e8m0_rows' factors carry 2^-8
    if nv:
        post = float32(1024.0) if bf16 else float32(128.0)
    bias16 = uint32(M126 if bf16 else M14)
    fbias = float32(2.0 ** 126) if bf16 else float32(2.0 ** 14)
    nvmul = float32(2.0 ** 116) if bf16 else float32(128.0)
    # each warp's partial fragments (ent per lane and row tile), double-buffered
    # by segment parity
    ent = 4 * NT                      # fragment entries a lane holds per row tile
    red_w = rg * ent * 32
    red_n = 2 * W * red_w

    if SIM and not bf16:
        def pack16(f):
            return np.uint32(np.array([f], np.float16).view(np.uint16)[0])

        def unpack16(h):
            return np.float32(np.array([int(h) & 0xFFFF], np.uint16).view(np.float16)[0])
    else:
        @device_fn
        def pack16(f):
            """float32 -> 16-bit bits of the dtype (round to nearest even)."""
            if bf16:
                return uint32(f32_to_bf16(f))
            return f2h(f)

        @device_fn
        def unpack16(h):
            if bf16:
                return bf16_to_f32(h)
            return h2f(h)

    def make_bfrag(vec, guard):
        """bfrag(a, xa, m, dk, kk) -> (b0, b1): the mma B fragment of one route's
        activation row for the k-step at a[xa + dk ...] (xa: the row's base plus
        the lane's 2t): b0 the pair at + 0, b1 the pair at + 8 (router weight m
        when on_input); ``vec``: 4-byte loads (a 4-byte aligned activation base),
        else 16-bit loads; ``guard``: zeros where kk + dk (+ 8) >= K (kk: the lane's
        first k in the last k-tile, when K % 64 != 0).  K % 8 == 0 (formats.py),
        so each pair is all inside K or all outside."""
        @device_fn
        def bfrag(a, xa, m, dk, kk):
            b0 = uint32(0)
            b1 = uint32(0)
            if not guard or kk + dk < kdim:
                if vec:
                    b0 = ld_nc1(a, xa + dk)
                else:
                    b0 = (uint32(pack16(load(a, xa + dk)))
                          | (uint32(pack16(load(a, xa + dk + 1))) << uint32(16)))
                if on_input:
                    b0 = round_pair(b0, m)
            if not guard or kk + dk + 8 < kdim:
                if vec:
                    b1 = ld_nc1(a, xa + dk + 8)
                else:
                    b1 = (uint32(pack16(load(a, xa + dk + 8)))
                          | (uint32(pack16(load(a, xa + dk + 9))) << uint32(16)))
                if on_input:
                    b1 = round_pair(b1, m)
            return b0, b1

        return bfrag

    # ---------------------------------------------------------------- GPU step
    @device_fn
    def weights16(ww, st, sa, sb, s2):
        """The A fragment of k-step st: 4 pairs in the dtype (see module doc)."""
        d0, d1, d2, d3 = decode(ww)
        if fold:                  # both rows' factors of this k-step's group, one pair
            if bf16:
                f = e8m0_rows(sa, st // 2)
                return (mul2_bf16_lo(d0, f), mul2_bf16_hi(d1, f), mul2_bf16_lo(d2, f),
                        mul2_bf16_hi(d3, f))
            f = f16_rows(sa, st // 2)
            return (mul2_f16_lo(d0, f), mul2_f16_hi(d1, f), mul2_f16_lo(d2, f),
                    mul2_f16_hi(d3, f))
        if nv:
            cg = s2[(sa >> uint32(8 * st)) & uint32(255)]
            cu = s2[(sb >> uint32(8 * st)) & uint32(255)]
            return mul2(d0, cg), mul2(d1, cu), mul2(d2, cg), mul2(d3, cu)
        return (mul2(d0, bias16), mul2(d1, bias16), mul2(d2, bias16),
                mul2(d3, bias16))

    @device_fn
    def ntile(a0, a1, a2, a3, x, y, b0, b1, b2, b3, sl, sa, grp):
        """One n-tile's fragment through k-steps x (B: b0, b1) and y (b2, b3):
        NVFP4 accumulates in place; MXFP4 into a fresh fragment added times the
        group's fp32 scales (bytes grp of row g and 2 + grp of row g+8 in sa),
        or as it is where the scales are folded into x and y."""
        if nv:
            a0, a1, a2, a3 = mma(x[0], x[1], x[2], x[3], b0, b1, a0, a1, a2, a3)
            return mma(y[0], y[1], y[2], y[3], b2, b3, a0, a1, a2, a3)
        z = float32(0.0)
        p0, p1, p2, p3 = mma(x[0], x[1], x[2], x[3], b0, b1, z, z, z, z)
        p0, p1, p2, p3 = mma(y[0], y[1], y[2], y[3], b2, b3, p0, p1, p2, p3)
        if fold:
            return a0 + p0, a1 + p1, a2 + p2, a3 + p3
        fg = sl[(sa >> uint32(8 * grp)) & uint32(255)]
        fu = sl[(sa >> uint32(16 + 8 * grp)) & uint32(255)]
        return a0 + p0 * fg, a1 + p1 * fg, a2 + p2 * fu, a3 + p3 * fu

    def make_step(vec, guard, two):
        """step(acc, wsl, ssl, xa0, xa1, m0, m1, sl, s2, a, kk, ...) -> acc: one
        k-tile from its ring slot (weights at shared address wsl, scales at ssl);
        n-tile 0 is the route whose activations for this lane sit at
        a[xa0 + 16 s + j] (k-step s, router weight m0), n-tile 1 (``two``) the one
        at a[xa1 ...]; kk: the lane's first k (guarded step only).  The trailing
        arguments serve the simulator's step (step_sim)."""
        bfrag = make_bfrag(vec, guard)

        @device_fn
        def group(acc, wa, wb, sa, sb, va, vb, ta, tb, grp, sl, s2, a, xa0, xa1, m0, m1,
                  kk):
            """k-steps 2grp, 2grp+1 (one MXFP4 group) into acc: row tile 0 of the
            group from words wa, wb and scales sa, sb (acc[0:8]), row tile 1 from
            va, vb, ta, tb (acc[8:16], when ``pair``); one activation load each."""
            a0, a1, a2, a3, a4, a5, a6, a7, e0, e1, e2, e3, e4, e5, e6, e7 = acc
            b0, b1 = bfrag(a, xa0, m0, 32 * grp, kk)
            b2, b3 = bfrag(a, xa0, m0, 32 * grp + 16, kk)
            x = weights16(wa, 2 * grp, sa, sb, s2)
            y = weights16(wb, 2 * grp + 1, sa, sb, s2)
            a0, a1, a2, a3 = ntile(a0, a1, a2, a3, x, y, b0, b1, b2, b3, sl, sa, grp)
            if pair:
                x2 = weights16(va, 2 * grp, ta, tb, s2)
                y2 = weights16(vb, 2 * grp + 1, ta, tb, s2)
                e0, e1, e2, e3 = ntile(e0, e1, e2, e3, x2, y2, b0, b1, b2, b3, sl, ta, grp)
            if two:
                c0, c1 = bfrag(a, xa1, m1, 32 * grp, kk)
                c2, c3 = bfrag(a, xa1, m1, 32 * grp + 16, kk)
                a4, a5, a6, a7 = ntile(a4, a5, a6, a7, x, y, c0, c1, c2, c3, sl, sa, grp)
                if pair:
                    e4, e5, e6, e7 = ntile(e4, e5, e6, e7, x2, y2, c0, c1, c2, c3, sl, ta,
                                           grp)
            return (a0, a1, a2, a3, a4, a5, a6, a7, e0, e1, e2, e3, e4, e5, e6, e7)

        @device_fn
        def step(acc, wsl, ssl, xa0, xa1, m0, m1, sl, s2, a, kk, tile, lane, sim):
            w0, w1, w2, w3 = lds4(wsl)
            sb = uint32(0)
            if nv:
                sa, sb = lds2(ssl)
            else:
                sa = lds1(ssl)
            v0 = v1 = v2 = v3 = ta = tb = uint32(0)
            if pair:                                 # the group's second row tile
                v0, v1, v2, v3 = lds4(wsl + uint32(tile_b))
                if nv:
                    ta, tb = lds2(ssl + uint32(stile_b))
                else:
                    ta = lds1(ssl + uint32(stile_b))
            acc = group(acc, w0, w1, sa, sb, v0, v1, ta, tb, 0, sl, s2, a, xa0, xa1, m0, m1,
                        kk)
            return group(acc, w2, w3, sa, sb, v2, v3, ta, tb, 1, sl, s2, a, xa0, xa1, m0, m1,
                         kk)

        return step

    tail = kdim % V2_TILE_K != 0                 # the last k-tile is partial
    sw = swords // 8                             # scale words a lane reads per tile
    tile_b = 32 * 16                             # a tile in a ring slot: 512 weight bytes
    stile_b = 32 * 4 * sw                        # and 32 lanes' scale words
    wslot_b = rg * tile_b                        # ring slot: the group's tiles
    sslot_b = rg * stile_b
    # The ring (weights, then scales) and the split-K partials: words [0, ring_w)
    # the weight slots (+ 16-byte alignment slack), ring_s scale words (+ 8-byte
    # slack), red_n fp32 partials.  A narrow CTA keeps them in three static arrays
    # (main's layout; 42 KB with the tables); a wide one would pass the 48 KB of
    # static arrays, so there they are one dynamic block in that order.
    ring_w = W * depth * rg * 32 * V2_LANE_WORDS + 4
    ring_s = W * depth * rg * 32 * sw + 2
    use_dyn = W > DECODE_NARROW.warps
    red_off = ring_w + ring_s if use_dyn else 0
    dyn_bytes = 4 * (ring_w + ring_s + red_n) if use_dyn else 0
    wstep = W * 32 * V2_LANE_WORDS               # words from a warp's tile to its next
    sstep = W * swords
    next_w = kt_n * 32 * V2_LANE_WORDS * 4       # bytes from a row tile to the next: w
    next_s = kt_n * swords * 4                   # and s
    cp_wait = make_cp_wait(depth - 1)            # produce() runs just before a step

    # The producer walks this warp's stream: rows row groups (bx, bx + gx, ...),
    # each npass passes, each nk k-tiles (warp, warp + 4, ...); an item copies
    # that k-tile of each row tile of the group.  State (pw, ps, rem, left,
    # rows): the global addresses of the lane's next weights and scales of the
    # group's first row tile (int64), then uint32 counters (every result cast
    # back, so they stay 32-bit): the items left in this pass, the passes left
    # for this group, the groups left (0: done; it then commits empty groups,
    # which keeps the group count uniform).  jp: the bytes (weights, scales) one
    # pass advances, taken back at its end; jr: the bytes from a group to the next.
    @device_fn
    def produce(st, slot, wr, sr, nk, npass, jp, jr):
        pw, ps, rem, left, rows = st
        if rows != uint32(0):
            cp_async16_g(wr + uint32(slot * wslot_b), pw)
            if nv:
                cp_async8_g(sr + uint32(slot * sslot_b), ps)
            else:
                cp_async4_g(sr + uint32(slot * sslot_b), ps)
            if pair:
                cp_async16_g(wr + uint32(slot * wslot_b + tile_b), pw + next_w)
                if nv:
                    cp_async8_g(sr + uint32(slot * sslot_b + stile_b), ps + next_s)
                else:
                    cp_async4_g(sr + uint32(slot * sslot_b + stile_b), ps + next_s)
            pw += 4 * wstep
            ps += 4 * sstep
            rem = uint32(rem - uint32(1))
            if rem == uint32(0):
                rem = nk
                pw -= jp[0]                       # back to the row tile's first item
                ps -= jp[1]
                if left > uint32(1):              # the same tiles again, next pass
                    left = uint32(left - uint32(1))
                else:                             # the next row tile
                    left = npass
                    rows = uint32(rows - uint32(1))
                    pw += jr[0]
                    ps += jr[1]
        cp_commit()
        return pw, ps, rem, left, rows

    @device_fn
    def early_items(nk):
        """Prologue items copied before the route scan: they stay inside the first
        pass (a pass boundary needs npass, known only after the scan)."""
        return min(depth - 1, nk - 1) if nk > 0 else 0

    @device_fn
    def produce_early(st, nk, wr, sr, jp, jr):
        for q in range(early_items(nk)):
            st = produce(st, q, wr, sr, uint32(nk), uint32(1), jp, jr)
        return st

    def make_segment(step, step_t):
        """segment(...) -> (acc, nit, st): this warp's k-tiles of one pass through
        the ring: nk unguarded steps, then the guarded last k-tile when ``last``;
        nit counts the items consumed (slot nit % depth), tile is the
        first k-tile's index in w (for the simulator's check)."""
        @device_fn
        def segment(acc, nk, last, nit, st, wr, sr, sl, s2, a, xa0, xa1, m0, m1, t,
                    nkw, npass, jp, jr, tile, lane, sim):
            j = uint32(0)
            while j < nk:
                st = produce(st, uint32(nit + uint32(depth - 1)) & uint32(depth - 1),
                             wr, sr, nkw, npass, jp, jr)
                cp_wait()
                slot = nit & uint32(depth - 1)
                acc = step(acc, wr + uint32(slot * uint32(wslot_b)),
                           sr + uint32(slot * uint32(sslot_b)), xa0, xa1, m0, m1, sl, s2, a, 0,
                           tile, lane, sim)
                xa0 += W * V2_TILE_K
                xa1 += W * V2_TILE_K
                tile += W
                nit = uint32(nit + uint32(1))
                j = uint32(j + uint32(1))
            if tail and last:
                st = produce(st, uint32(nit + uint32(depth - 1)) & uint32(depth - 1),
                             wr, sr, nkw, npass, jp, jr)
                cp_wait()
                slot = nit & uint32(depth - 1)
                acc = step_t(acc, wr + uint32(slot * uint32(wslot_b)),
                             sr + uint32(slot * uint32(sslot_b)), xa0, xa1, m0, m1, sl, s2, a,
                             (kt_n - 1) * V2_TILE_K + 2 * t, tile, lane, sim)
                nit = uint32(nit + uint32(1))
            return acc, nit, st

        return segment

    # ---------------------------------------------------------- simulator step
    # Plain Python (no device-function calls: each costs the simulator ~1 ms):
    # lane (g, t) computes its 8 fragment entries from the same words, decoded by
    # the layout module's twin of the decoder, in the same per-group order.
    np_dt = np.float16
    kval = kdim

    def f16(bits, dt):
        bits = int(bits) & 0xFFFF
        if dt == "bfloat16":
            return float(np.array([bits << 16], np.uint32).view(np.float32)[0])
        return float(np.array([bits], np.uint16).view(np_dt)[0])

    def xval(a, off, k, mult):
        if off < 0 or k >= kval:
            return 0.0
        v = a[off + k]
        v = f16(v, key.dtype) if bf16 else float(np.float16(v))
        if on_input:
            v = float(round_to(np.array([np.float32(v) * np.float32(mult)], np.float32),
                               key.dtype)[0])
        return v

    def ktile_sim(acc, c, tbase, w, s, sl, s2, a, xo, xm, nsl, lane):
        g = lane // 4
        t = lane % 4
        out = [float(v) for v in acc]
        tile = (tbase + c) * (32 * V2_LANE_WORDS)
        sbase = (tbase + c) * sbytes
        sb = np.asarray(s[sbase // 4:(sbase + sbytes) // 4], np.uint32).view(np.uint8)
        wdeq = np.zeros((2, 64))
        for hh in range(2):
            for k in range(64):
                st, tt, q = k // 16, (k % 8) // 2, k % 2
                p = 2 * ((k % 16) // 8) + hh
                word = int(w[tile + (4 * g + tt) * V2_LANE_WORDS + st])
                h = (decode_pairs(word, key.dtype)[p] >> (16 * q)) & 0xFFFF
                v = f16(h, key.dtype)
                if nv:
                    cb = int(sb[8 * g + 4 * hh + st])
                    v *= f16(int(s2[cb]) & 0xFFFF, key.dtype)
                else:
                    v *= float(fbias)
                wdeq[hh, k] = v
        for j in range(NT):
            for u in range(2):
                slot = 8 * j + 2 * t + u
                if slot >= nsl:
                    continue
                off, mult = int(xo[slot]), xm[slot]
                xs = np.array([xval(a, off, c * 64 + k, mult) for k in range(64)])
                for hh in range(2):
                    tot = np.float32(0.0)
                    for grp in range(2):
                        part = np.float32(np.dot(wdeq[hh, 32 * grp:32 * grp + 32],
                                                 xs[32 * grp:32 * grp + 32]))
                        if nv:
                            tot += part
                        else:
                            tot += part * np.float32(sl[int(sb[4 * g + 2 * hh + grp])])
                    out[4 * j + 2 * hh + u] = np.float32(out[4 * j + 2 * hh + u] + tot)
        return tuple(np.float32(v) for v in out)

    def step_sim(acc, wsl, ssl, xa0, xa1, m0, m1, sl, s2, a, kk, tile, lane, sim):
        """The simulator's step: the ring slot must hold this lane's words of k-tile
        ``tile`` (checked against global memory), then the plain per-lane math."""
        w, s, tbase, xo, xm, nsl = sim
        out = ()
        for h in range(rg):                       # the group's row tiles
            th = tile + h * kt_n
            ww = lds4(wsl + h * tile_b)
            want = tuple(int(w[th * (32 * V2_LANE_WORDS) + lane * V2_LANE_WORDS + q])
                         for q in range(4))
            assert tuple(int(v) for v in ww) == want, \
                "decode ring: a slot holds the wrong weights"
            sc = (lds2(ssl + h * stile_b) if nv else (lds1(ssl + h * stile_b),))
            si = th * swords + (lane // 4) * sw
            assert tuple(int(v) for v in sc) == tuple(int(s[si + q]) for q in range(sw)), \
                "decode ring: a slot holds the wrong scales"
            out += ktile_sim(acc[8 * h:8 * h + 8], tile - tbase, tbase + h * kt_n, w, s, sl,
                             s2, a, xo, xm, nsl, lane)
        return out + tuple(acc[len(out):])

    def make_step_sim(guarded):
        """step_sim behind a check that the segment picked the right step: the
        guarded one exactly for the last k-tile when K has a tail, the plain one
        for every other (the simulator's math reads past K as 0 either way, so
        without this a guard on the wrong warp or k-tile would pass)."""
        def step_s(acc, wsl, ssl, xa0, xa1, m0, m1, sl, s2, a, kk, tile, lane, sim):
            c = tile - sim[2]                     # the k-tile's index in its row
            if guarded:
                assert tail and c == kt_n - 1, \
                    f"decode: the guarded step ran on k-tile {c} of {kt_n}"
            else:
                assert not (tail and c == kt_n - 1), \
                    f"decode: the plain step ran on the partial last k-tile {c}"
            return step_sim(acc, wsl, ssl, xa0, xa1, m0, m1, sl, s2, a, kk, tile, lane, sim)
        return step_s

    two_nt = NT == 2                  # a pass's second n-tile exists
    if SIM:
        seg_v1 = seg_v2 = seg_s1 = seg_s2 = make_segment(make_step_sim(False),
                                                         make_step_sim(True))
    else:
        seg_v1 = make_segment(make_step(True, False, False), make_step(True, True, False))
        seg_v2 = make_segment(make_step(True, False, True), make_step(True, True, True))
        seg_s1 = make_segment(make_step(False, False, False), make_step(False, True, False))
        seg_s2 = make_segment(make_step(False, False, True), make_step(False, True, True))

    def kernel(a, ids, stride, top_k, emap, has_map, num_ids, n_routes, tw, w, s, gsc,
               bias, out, avec):
        pdl_trigger()                # the next grid may be scheduled (it waits)
        tid = cuda.threadIdx.x
        warp = tid // 32
        lane = tid % 32
        rank = cuda.blockIdx.y
        gy = cuda.gridDim.y
        bm = cuda.shared.array(32, uint32)
        info = cuda.shared.array(2, int32)              # [expert, routes]
        rl = cuda.shared.array(DECODE_ROUTE_CAP, int16)     # e's routes r
        rt = cuda.shared.array(DECODE_ROUTE_CAP, int16)     # and their activation rows
        xo = cuda.shared.array(SLOTS, int64)                # (simulator's step only)
        xm = cuda.shared.array(SLOTS, float32)
        sl = cuda.shared.array(256, float32)
        s2 = cuda.shared.array(256, uint32)
        if use_dyn:
            rw = cuda.shared.array(0, uint32)           # ring (aligned up below)
            red = cuda.shared.array(0, float32)         # partials, from red_off
        else:
            rw = cuda.shared.array(ring_w, uint32)      # aligned up to 16 B below
            rs = cuda.shared.array(ring_s, uint32)
            red = cuda.shared.array(red_n, float32)
        if tid < 32:
            bm[tid] = 0
        if tid == 0:
            info[0] = -1
            info[1] = 0
        cuda.syncthreads()
        # the scale tables (made from the byte: no global load; none where the
        # key folds) and the active-expert bitmap; invalid routes zeroed (fc1)
        # by CTA r % gy
        if not fold:                                 # (a fold makes its scales)
            for i in range(tid, 256, THREADS):
                v = scale_value(i)
                sl[i] = v
                if nv:
                    h = pack16(v * nvmul)
                    s2[i] = h | (h << uint32(16))
        for r in range(tid, n_routes, THREADS):
            e = local_expert(ids, stride, r, emap, has_map, num_ids)
            if e >= 0:
                cuda.atomic.or_(bm, e >> 5, uint32(1) << uint32(e & 31))
            elif fc1 and r % gy == rank:
                for i in range(cuda.blockIdx.x, ntr, cuda.gridDim.x):
                    for u in range(V2_TILE_ROWS if not gated else half):
                        n = i * (half if gated else V2_TILE_ROWS) + u
                        if n < ncols:
                            store(out, r * ncols + n, float32(0.0))
        cuda.syncthreads()
        if tid < 32:
            # the rank-th active expert: this word's place among the popcounts,
            # then a binary search for the bit inside the word
            word = bm[tid]
            cnt = cuda.popc(word)
            if SIM:
                pre = 0
                for i in range(tid):
                    pre += cuda.popc(bm[i])
            else:                             # exclusive prefix over the warp, by shuffles
                inc = int32(cnt)
                for d in (1, 2, 4, 8, 16):
                    v = cuda.shfl_up_sync(0xFFFFFFFF, inc, d)
                    if tid >= d:
                        inc = int32(inc + v)
                pre = inc - int32(cnt)
            if pre <= rank < pre + cnt:
                k = rank - pre                    # the k-th set bit of word
                b = 0
                for step in range(4, -1, -1):
                    hi = b + (1 << step)
                    if cuda.popc(word & ((uint32(1) << uint32(hi)) - uint32(1))) <= k:
                        b = hi
                info[0] = tid * 32 + b
        cuda.syncthreads()
        e = info[0]
        if e < 0:
            if not fc1:
                pdl_wait()           # (a grid ends only after its wait)
            return
        # this warp's stream: row groups bx, bx + gx, ... (nrt; group u = row tiles
        # rg u .. rg u + rg - 1), passes of SLOTS routes (npass), k-tiles warp,
        # warp + 4, ... (nk, the last one guarded when K % 64 != 0); produce() runs
        # depth - 1 items ahead.  Its first items need only e: they are copied
        # before the scan for e's routes (whose latency they then hide), as many
        # as cross no pass boundary (the only place produce() reads npass).
        bx = cuda.blockIdx.x
        gx = cuda.gridDim.x
        nrt = (ntr // rg - bx + gx - 1) // gx
        nk = (kt_n - warp + W - 1) // W if warp < kt_n else 0
        last = tail and nk > 0 and warp == (kt_n - 1) % W
        nk_main = nk - 1 if last else nk
        hop = gx * rg * kt_n                               # tiles from group to next
        tw0 = bx * rg * kt_n + warp                        # first tile, inside expert e
        g = lane // 4
        t = lane % 4
        te = int64(e) * (ntr * kt_n) + tw0                 # the first tile, in w
        jp = (int64(4 * nk * wstep), int64(4 * nk * sstep))
        jr = (int64(4 * hop * (32 * V2_LANE_WORDS)), int64(4 * hop * swords))
        lr = uint32((warp * depth * rg * 32 + lane) * 4)          # bytes / 4
        db = smem_u32(rw)
        wr = ((db + uint32(15)) & uint32(0xFFFFFFF0)) + lr * uint32(4)
        if use_dyn:
            sr = ((db + uint32(4 * ring_w + 7)) & uint32(0xFFFFFFF8)) + lr * uint32(sw)
        else:
            sr = ((smem_u32(rs) + uint32(7)) & uint32(0xFFFFFFF8)) + lr * uint32(sw)
        pw, ps, rem, _, rows = produce_early(
            (gaddr(w, te * (32 * V2_LANE_WORDS) + lane * V2_LANE_WORDS),
             gaddr(s, te * swords + g * sw), uint32(nk), uint32(1),
             uint32(nrt if nk > 0 else 0)), nk, wr, sr, jp, jr)
        for r in range(tid, n_routes, THREADS):
            if local_expert(ids, stride, r, emap, has_map, num_ids) == e:
                pos = cuda.atomic.add(info, 1, 1)
                rl[pos] = int16(r)
                rt[pos] = int16(r // top_k if fc1 else r)
        cuda.syncthreads()
        ne = info[1]
        npass = (ne + SLOTS - 1) // SLOTS
        st = (pw, ps, rem, uint32(npass), rows)
        for q in range(early_items(nk), depth - 1):
            st = produce(st, q, wr, sr, uint32(nk), uint32(npass), jp, jr)
        if not fc1:
            pdl_wait()               # decode_fc1's intermediate is complete from here
        nit = uint32(0)                                   # items consumed
        nkm = uint32(nk_main)
        nku = uint32(nk)
        npu = uint32(npass)
        seg = 0                                           # segments done (parity: red)
        for mi in range(nrt):
            i = (bx + mi * gx) * rg                         # the group's first row tile
            tbase = (e * ntr + i) * kt_n
            for p in range(0, ne, SLOTS):
                # lane (g, t) feeds routes p + g and p + 8 + g; an empty slot repeats
                # the pass's last route (computed, never stored): no barrier needed
                q0 = min(p + g, ne - 1)
                q1 = min(p + 8 + g, ne - 1)
                k0 = warp * V2_TILE_K + 2 * t
                xa0 = int64(rt[q0]) * kdim + k0
                xa1 = int64(rt[q1]) * kdim + k0
                m0 = float32(1.0)
                m1 = float32(1.0)
                if on_input:
                    m0 = tw[rl[q0]]
                    m1 = tw[rl[q1]]
                nsl = min(SLOTS, ne - p)
                sim = 0
                if SIM:                                   # ktile_sim reads the slot table
                    cuda.syncthreads()
                    if tid < SLOTS:
                        q = min(p + tid, ne - 1)
                        xo[tid] = int64(rt[q]) * kdim
                        xm[tid] = tw[rl[q]] if on_input else float32(1.0)
                    cuda.syncthreads()
                    sim = (w, s, tbase, xo, xm, nsl)
                z = float32(0.0)
                acc = (z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z)
                tile = tbase + warp
                if avec != 0:
                    if two_nt and nsl > 8:
                        acc, nit, st = seg_v2(acc, nkm, last, nit, st, wr, sr, sl, s2, a,
                                              xa0, xa1, m0, m1, t, nku, npu, jp, jr, tile, lane,
                                              sim)
                    else:
                        acc, nit, st = seg_v1(acc, nkm, last, nit, st, wr, sr, sl, s2, a,
                                              xa0, xa1, m0, m1, t, nku, npu, jp, jr, tile, lane,
                                              sim)
                elif two_nt and nsl > 8:
                    acc, nit, st = seg_s2(acc, nkm, last, nit, st, wr, sr, sl, s2, a,
                                          xa0, xa1, m0, m1, t, nku, npu, jp, jr, tile, lane, sim)
                else:
                    acc, nit, st = seg_s1(acc, nkm, last, nit, st, wr, sr, sl, s2, a,
                                          xa0, xa1, m0, m1, t, nku, npu, jp, jr, tile, lane, sim)
                # split-K partials meet in red[seg % 2]; one barrier a segment (the
                # buffer is written again two segments later, after the next one)
                rb = red_off + (seg % 2) * (W * red_w)
                base = rb + warp * red_w + lane * (ent * rg)
                for h in range(rg):
                    for v in range(ent):
                        red[base + ent * h + v] = acc[8 * h + v]
                cuda.syncthreads()
                seg += 1
                # the stores: units (h, j, u) = row tile h of the group, fragment
                # entries of n-tile j and column u (route p + 8 j + 2 t + u, rows g
                # and g + 8: gate and up when gated); warp w takes units w, w + W, ..
                for un in range(warp, rg * NT * 2, W):
                    h = un // (2 * NT)
                    jj = (un // 2) % NT
                    uu = un % 2
                    ih = i + h
                    q = p + 8 * jj + 2 * t + uu
                    if q < ne:
                        bw = rb + lane * (ent * rg) + ent * h + 4 * jj + uu
                        hg = red[bw]
                        hu = red[bw + 2]
                        for ww in range(1, W):                        # fixed order
                            hg += red[bw + ww * red_w]
                            hu += red[bw + ww * red_w + 2]
                        hg *= post
                        hu *= post
                        r = int64(rl[q])
                        if fc1:
                            if gated:
                                n = ih * half + g
                                if n < ncols:
                                    store(out, r * ncols + n, epi1(hg, hu, e, n, gsc, bias))
                            else:
                                n = ih * V2_TILE_ROWS + g
                                if n < ncols:
                                    store(out, r * ncols + n,
                                          epi1(hg, float32(0.0), e, n, gsc, bias))
                                if n + half < ncols:
                                    store(out, r * ncols + n + half,
                                          epi1(hu, float32(0.0), e, n + half, gsc, bias))
                        else:
                            n = ih * V2_TILE_ROWS + g
                            if n < ncols:
                                out[r * ncols + n] = epi2(hg, e, n, r, tw, gsc, bias)
                            if n + half < ncols:
                                out[r * ncols + n + half] = epi2(hu, e, n + half, r, tw, gsc, bias)

    c = act_code(key.dtype)
    return KernelSpec(kernel, (c, "i4[]", "i8", "i8", "i4[]", "i8", "i8", "i8", "f4[]", "u4[]",
                               "u4[]", "f4[]", "f4[]", c if fc1 else "f4[]", "i8"),
                      THREADS, max_regs=conf.max_regs, dyn_smem=dyn_bytes)


def build_fc1(key: LaunchKey) -> KernelSpec:
    return _build(key, "w13")


def build_fc2(key: LaunchKey) -> KernelSpec:
    return _build(key, "w2")
