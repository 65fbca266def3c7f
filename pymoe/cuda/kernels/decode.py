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

A CTA is DECODE_WARPS warps on ONE 16-row tile: warp w takes k-tiles w, w+4, ...
(split K; each step the CTA reads 2 KB of contiguous weights) and the partial
mma fragments meet in shared memory in a fixed order (deterministic).  The
routes of e ride on the mma's N side, DECODE_NTILES x 8 per pass over the tile.
Per k-tile a lane loads its 16 bytes of weights (one LDG.128, .nc, no L1
allocation), its scales (4 or 8 bytes) and its activations (8 bytes per route
and k-step, .nc, cached); the FP4 -> 16-bit decode is shifts and masks
(pymoe/ref/layout.py) and one packed multiply per pair:
  MXFP4: x 2^126 (bf16) / 2^14 (fp16), exact; each 32-group's two k-steps
         accumulate into a fresh fragment that is added times the fp32 scale.
  NVFP4: x (E4M3 scale x 2^116) (bf16) / x (E4M3 x 2^7) (fp16), exact; the
         missing 2^10 / 2^7 goes into the fp32 global scale in the epilogue.
Under Numba's simulator (no inline PTX) each lane computes its own fragment
entries from the same words with the same decoder, in plain code.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, int32, int64, uint32

from ...geometry import (DECODE_NTILES, DECODE_ROUTE_CAP, DECODE_WARPS, V2_LANE_WORDS,
                         V2_TILE_ROWS, LaunchKey, is_gated, v2_k_tiles, v2_row_tiles,
                         v2_scale_bytes)
from ...dtypes import round_to
from ...ref.layout import decode_pairs
from .common import make_fc1_epilogue, make_fc2_epilogue, make_round_pair
from .intrinsics import SIM, act_code, bf16_to_f32, f32_to_bf16, make_act_io
from .ptx import f2h, h2f, ld_nc1, ld_nc2, ld_stream4, mma_bf16, mma_f16, mul2_bf16, \
    mul2_f16
from .routes import local_expert
from .spec import KernelSpec

__all__ = ["build_fc1", "build_fc2", "make_decoder", "THREADS"]

THREADS = 32 * DECODE_WARPS
# Device helpers here are inlined by NVVM (forceinline), not copied into the
# caller's Numba IR: the unrolled k loop would make Numba's IR inlining take
# minutes (launch._compile lets them compile without a GPU).  The simulator
# takes no forceinline.
device_fn = cuda.jit(device=True, inline=True) if SIM else cuda.jit(device=True,
                                                                    forceinline=True)
assert DECODE_NTILES == 2, "the fragment code below is written out for 2 n-tiles"
SLOTS = 8 * DECODE_NTILES                   # routes per pass
M126 = 0x7E807E80                           # bf16x2 2^126
M14 = 0x74007400                            # f16x2 2^14


def make_decoder(dtype: str):
    """decode(w) -> (d0, d1, d2, d3): the 16-bit pairs of one v2 word, FP4 x 2^-126
    (bf16) or x 2^-14 (fp16); the twin of pymoe.ref.layout.decode_pairs."""
    if dtype == "bfloat16":
        @device_fn
        def decode(w):
            mag, sgn, both = uint32(0x01C001C0), uint32(0x80008000), uint32(0x81C081C0)
            return (w & both,
                    ((w << uint32(3)) & mag) | ((w << uint32(5)) & sgn),
                    (w << uint32(6)) & both,
                    ((w >> uint32(6)) & mag) | ((w << uint32(4)) & sgn))
    else:
        @device_fn
        def decode(w):
            mag, sgn = uint32(0x0E000E00), uint32(0x80008000)
            return (((w << uint32(3)) & mag) | (w & sgn),
                    ((w << uint32(6)) & mag) | ((w << uint32(5)) & sgn),
                    ((w << uint32(9)) & mag) | ((w << uint32(6)) & sgn),
                    ((w >> uint32(3)) & mag) | ((w << uint32(4)) & sgn))
    return decode


def _build(key: LaunchKey, which: str) -> KernelSpec:
    fc1 = which == "w13"
    bf16 = key.dtype == "bfloat16"
    nv = key.format == "nvfp4"
    gated = fc1 and is_gated(key.activation)
    on_input = fc1 and key.router_on_input
    hid, inter = key.hidden_size, key.intermediate_size
    kdim = hid if fc1 else inter
    kt_n = v2_k_tiles(kdim)
    ntr = v2_row_tiles(which, key.activation, hid, inter)
    sbytes = v2_scale_bytes(key.format)
    swords = sbytes // 4                                  # scale words per tile
    ncols = inter if fc1 else hid                         # output columns
    half = V2_TILE_ROWS // 2
    decode = make_decoder(key.dtype)
    mma = mma_bf16 if bf16 else mma_f16
    mul2 = mul2_bf16 if bf16 else mul2_f16
    load, store, _ = make_act_io(key.dtype)
    epi1 = make_fc1_epilogue(key)
    epi2 = make_fc2_epilogue(key)
    round_pair = make_round_pair(key.dtype)
    vec_k = kdim % 4 == 0
    # NVFP4 weights carry 2^-10 (bf16) / 2^-7 (fp16) less than their value
    post = float32(1.0)
    if nv:
        post = float32(1024.0) if bf16 else float32(128.0)
    bias16 = uint32(M126 if bf16 else M14)
    fbias = float32(2.0 ** 126) if bf16 else float32(2.0 ** 14)
    nvmul = float32(2.0 ** 116) if bf16 else float32(128.0)
    red_n = (DECODE_WARPS - 1) * DECODE_NTILES * 32 * 4

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

    def make_bfrag(vec):
        """bfrag(a, xo, xm, slot, k0): the mma B fragment (2 uint32) of pass slot
        ``slot`` at k0, zeros for an empty slot; ``vec``: one 8-byte load per
        fragment (K % 4 == 0 and an 8-byte aligned activation base), else four
        16-bit loads."""
        @device_fn
        def act_pair(a, off, k0):
            if k0 >= kdim:
                return uint32(0), uint32(0)
            if vec:
                return ld_nc2(a, off + k0)
            v0 = uint32(0)
            v1 = uint32(0)
            for q in range(4):
                if k0 + q < kdim:
                    h = uint32(pack16(load(a, off + k0 + q)))
                    if q == 0:
                        v0 |= h
                    elif q == 1:
                        v0 |= h << uint32(16)
                    elif q == 2:
                        v1 |= h
                    else:
                        v1 |= h << uint32(16)
            return v0, v1

        @device_fn
        def bfrag(a, xo, xm, slot, k0):
            off = xo[slot]
            if off < 0:
                return uint32(0), uint32(0)
            b0, b1 = act_pair(a, off, k0)
            if on_input:
                m = xm[slot]
                b0 = round_pair(b0, m)
                b1 = round_pair(b1, m)
            return b0, b1

        return bfrag

    # ---------------------------------------------------------------- GPU step
    def make_gpu_loop(vec):
        """kloop(acc, warp, lane, tbase, w, s, sl, s2, a, xo, xm, nsl) -> acc: this
        warp's k-tiles warp, warp+4, ... of one row tile, 4 at a time (``vec``;
        else one at a time): all their weights, scales and first-n-tile
        activations are loaded before any is used, so each warp has 4 x 512 bytes
        of weights in flight."""
        bfrag = make_bfrag(vec)

        @device_fn
        def load_tile(c, ok, tbase, w, s, a, xo, xm, lane):
            g = lane // 4
            t = lane % 4
            z = uint32(0)
            w0 = w1 = w2 = w3 = sa = sb = z
            b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = z
            if ok:
                wi = (tbase + c) * (32 * V2_LANE_WORDS) + lane * V2_LANE_WORDS
                w0, w1, w2, w3 = ld_stream4(w, wi)
                si = (tbase + c) * swords + g * (swords // 8)
                if nv:
                    sa, sb = ld_nc2(s, si)          # row g k-steps 0..3, row g+8
                else:
                    sa = ld_nc1(s, si)              # row g groups 0, 1, row g+8
                k0 = c * 64 + 4 * t
                b0, b1 = bfrag(a, xo, xm, g, k0)
                b2, b3 = bfrag(a, xo, xm, g, k0 + 16)
                b4, b5 = bfrag(a, xo, xm, g, k0 + 32)
                b6, b7 = bfrag(a, xo, xm, g, k0 + 48)
            return (w0, w1, w2, w3, sa, sb, b0, b1, b2, b3, b4, b5, b6, b7)

        @device_fn
        def weights16(ww, st, sa, sb, s2):
            """The A fragment of k-step st: 4 pairs in the dtype (see module doc)."""
            d0, d1, d2, d3 = decode(ww)
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
            group's fp32 scales (bytes grp of row g and 2 + grp of row g+8 in sa)."""
            if nv:
                a0, a1, a2, a3 = mma(x[0], x[1], x[2], x[3], b0, b1, a0, a1, a2, a3)
                return mma(y[0], y[1], y[2], y[3], b2, b3, a0, a1, a2, a3)
            z = float32(0.0)
            p0, p1, p2, p3 = mma(x[0], x[1], x[2], x[3], b0, b1, z, z, z, z)
            p0, p1, p2, p3 = mma(y[0], y[1], y[2], y[3], b2, b3, p0, p1, p2, p3)
            fg = sl[(sa >> uint32(8 * grp)) & uint32(255)]
            fu = sl[(sa >> uint32(16 + 8 * grp)) & uint32(255)]
            return a0 + p0 * fg, a1 + p1 * fg, a2 + p2 * fu, a3 + p3 * fu

        @device_fn
        def group(acc, wa, wb, ba0, ba1, bb0, bb1, grp, c, tl, sl, s2, a, xo, xm, two, g, t):
            """k-steps 2grp, 2grp+1 (one MXFP4 group) into acc."""
            a0, a1, a2, a3, a4, a5, a6, a7 = acc
            sa = tl[4]
            sb = tl[5]
            x = weights16(wa, 2 * grp, sa, sb, s2)
            y = weights16(wb, 2 * grp + 1, sa, sb, s2)
            a0, a1, a2, a3 = ntile(a0, a1, a2, a3, x, y, ba0, ba1, bb0, bb1, sl, sa, grp)
            if two:
                k0 = c * 64 + 32 * grp + 4 * t
                c0, c1 = bfrag(a, xo, xm, 8 + g, k0)
                c2, c3 = bfrag(a, xo, xm, 8 + g, k0 + 16)
                a4, a5, a6, a7 = ntile(a4, a5, a6, a7, x, y, c0, c1, c2, c3, sl, sa, grp)
            return (a0, a1, a2, a3, a4, a5, a6, a7)

        @device_fn
        def compute(acc, tl, c, sl, s2, a, xo, xm, two, lane):
            g = lane // 4
            t = lane % 4
            acc = group(acc, tl[0], tl[1], tl[6], tl[7], tl[8], tl[9], 0, c, tl, sl, s2, a,
                        xo, xm, two, g, t)
            return group(acc, tl[2], tl[3], tl[10], tl[11], tl[12], tl[13], 1, c, tl, sl, s2,
                         a, xo, xm, two, g, t)

        @device_fn
        def kloop1(acc, warp, lane, tbase, w, s, sl, s2, a, xo, xm, nsl):
            two = nsl > 8
            for c in range(warp, kt_n, DECODE_WARPS):
                t0 = load_tile(c, True, tbase, w, s, a, xo, xm, lane)
                acc = compute(acc, t0, c, sl, s2, a, xo, xm, two, lane)
            return acc

        @device_fn
        def kloop(acc, warp, lane, tbase, w, s, sl, s2, a, xo, xm, nsl):
            two = nsl > 8
            step = DECODE_WARPS
            for c0 in range(warp, kt_n, 4 * step):
                c1 = c0 + step
                c2 = c1 + step
                c3 = c2 + step
                t0 = load_tile(c0, True, tbase, w, s, a, xo, xm, lane)
                t1 = load_tile(c1, c1 < kt_n, tbase, w, s, a, xo, xm, lane)
                t2 = load_tile(c2, c2 < kt_n, tbase, w, s, a, xo, xm, lane)
                t3 = load_tile(c3, c3 < kt_n, tbase, w, s, a, xo, xm, lane)
                acc = compute(acc, t0, c0, sl, s2, a, xo, xm, two, lane)
                if c1 < kt_n:
                    acc = compute(acc, t1, c1, sl, s2, a, xo, xm, two, lane)
                if c2 < kt_n:
                    acc = compute(acc, t2, c2, sl, s2, a, xo, xm, two, lane)
                if c3 < kt_n:
                    acc = compute(acc, t3, c3, sl, s2, a, xo, xm, two, lane)
            return acc

        return kloop if vec else kloop1

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
                st, tt, q = k // 16, (k % 16) // 4, k % 2
                p = 2 * ((k % 4) // 2) + hh
                word = int(w[tile + (4 * g + tt) * V2_LANE_WORDS + st])
                h = (decode_pairs(word, key.dtype)[p] >> (16 * q)) & 0xFFFF
                v = f16(h, key.dtype)
                if nv:
                    cb = int(sb[8 * g + 4 * hh + st])
                    v *= f16(int(s2[cb]) & 0xFFFF, key.dtype)
                else:
                    v *= float(fbias)
                wdeq[hh, k] = v
        for j in range(2):
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

    if SIM:
        @device_fn
        def kloop_v(acc, warp, lane, tbase, w, s, sl, s2, a, xo, xm, nsl):
            for c in range(warp, kt_n, DECODE_WARPS):
                acc = ktile_sim(acc, c, tbase, w, s, sl, s2, a, xo, xm, nsl, lane)
            return acc
        kloop_s = kloop_v
    else:
        kloop_v = make_gpu_loop(vec_k)           # 8-byte activation loads (K % 4 == 0)
        kloop_s = make_gpu_loop(False)           # a misaligned activation base

    def kernel(a, ids, stride, top_k, emap, has_map, num_ids, n_routes, tw, w, s, lut, gsc,
               bias, out, avec):
        tid = cuda.threadIdx.x
        warp = tid // 32
        lane = tid % 32
        rank = cuda.blockIdx.y
        gy = cuda.gridDim.y
        bm = cuda.shared.array(32, uint32)
        cnt = cuda.shared.array(32, int32)
        info = cuda.shared.array(2, int32)              # [expert, routes]
        rl = cuda.shared.array(DECODE_ROUTE_CAP, int32)
        xo = cuda.shared.array(SLOTS, int64)
        xm = cuda.shared.array(SLOTS, float32)
        red = cuda.shared.array(red_n, float32)
        sl = cuda.shared.array(256, float32)
        s2 = cuda.shared.array(256, uint32)
        if tid < 32:
            bm[tid] = 0
        if tid == 0:
            info[0] = -1
            info[1] = 0
        for i in range(tid, 256, THREADS):
            v = lut[i] * float32(4.0)
            sl[i] = v
            if nv:
                h = pack16(v * nvmul)
                s2[i] = h | (h << uint32(16))
        cuda.syncthreads()
        # active experts as a bitmap; invalid routes zeroed (fc1) by CTA r % gy
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
            cnt[tid] = cuda.popc(bm[tid])
        cuda.syncthreads()
        if tid < 32:
            pre = 0
            for i in range(tid):
                pre += cnt[i]
            c = cnt[tid]
            if pre <= rank < pre + c:
                word = bm[tid]
                k = rank - pre
                for b in range(32):
                    if (word >> uint32(b)) & uint32(1):
                        if k == 0:
                            info[0] = tid * 32 + b
                        k -= 1
        cuda.syncthreads()
        e = info[0]
        if e < 0:
            return
        for r in range(tid, n_routes, THREADS):
            if local_expert(ids, stride, r, emap, has_map, num_ids) == e:
                pos = cuda.atomic.add(info, 1, 1)
                rl[pos] = r
        cuda.syncthreads()
        ne = info[1]
        for i in range(cuda.blockIdx.x, ntr, cuda.gridDim.x):
            tbase = (e * ntr + i) * kt_n
            for p in range(0, ne, SLOTS):
                if tid < SLOTS:
                    q = p + tid
                    off = int64(-1)
                    m = float32(1.0)
                    if q < ne:
                        r = int64(rl[q])
                        off = (r // top_k) * hid if fc1 else r * inter
                        if on_input:
                            m = tw[r]
                    xo[tid] = off
                    xm[tid] = m
                cuda.syncthreads()
                nsl = min(SLOTS, ne - p)
                z = float32(0.0)
                acc = (z, z, z, z, z, z, z, z)
                if avec != 0:
                    acc = kloop_v(acc, warp, lane, tbase, w, s, sl, s2, a, xo, xm, nsl)
                else:
                    acc = kloop_s(acc, warp, lane, tbase, w, s, sl, s2, a, xo, xm, nsl)
                if warp > 0:
                    base = (warp - 1) * (DECODE_NTILES * 32 * 4) + lane * 8
                    for v in range(8):
                        red[base + v] = acc[v]
                cuda.syncthreads()
                if warp == 0:
                    f = cuda.local.array(8, float32)
                    for v in range(8):
                        f[v] = acc[v]
                    for ww in range(1, DECODE_WARPS):
                        base = (ww - 1) * (DECODE_NTILES * 32 * 4) + lane * 8
                        for v in range(8):
                            f[v] += red[base + v]
                    g = lane // 4
                    t = lane % 4
                    for j in range(2):
                        for u in range(2):
                            q = p + 8 * j + 2 * t + u
                            if q < ne:
                                r = int64(rl[q])
                                hg = f[4 * j + u] * post
                                hu = f[4 * j + 2 + u] * post
                                if fc1:
                                    if gated:
                                        n = i * half + g
                                        if n < ncols:
                                            store(out, r * ncols + n,
                                                  epi1(hg, hu, e, n, gsc, bias))
                                    else:
                                        n = i * V2_TILE_ROWS + g
                                        if n < ncols:
                                            store(out, r * ncols + n,
                                                  epi1(hg, float32(0.0), e, n, gsc, bias))
                                        if n + half < ncols:
                                            store(out, r * ncols + n + half,
                                                  epi1(hu, float32(0.0), e, n + half, gsc, bias))
                                else:
                                    n = i * V2_TILE_ROWS + g
                                    if n < ncols:
                                        out[r * ncols + n] = epi2(hg, e, n, r, tw, gsc, bias)
                                    if n + half < ncols:
                                        out[r * ncols + n + half] = epi2(hu, e, n + half, r, tw,
                                                                         gsc, bias)
                cuda.syncthreads()

    c = act_code(key.dtype)
    return KernelSpec(kernel, (c, "i4[]", "i8", "i8", "i4[]", "i8", "i8", "i8", "f4[]", "u4[]",
                               "u4[]", "f4[]", "f4[]", "f4[]", c if fc1 else "f4[]", "i8"),
                      THREADS)


def build_fc1(key: LaunchKey) -> KernelSpec:
    return _build(key, "w13")


def build_fc2(key: LaunchKey) -> KernelSpec:
    return _build(key, "w2")
