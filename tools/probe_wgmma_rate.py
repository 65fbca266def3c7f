"""Probe: how fast can the v2 prefill loop's skeleton run wgmma at all?  The
tensor-core rate of m64nNk16 with A from registers (RS) for N = 64 / 128 / 256,
alone and with each piece of the loop's per-k-tile bookkeeping added, so the
cost of each piece is a measured number, not a guess.

    python tools/probe_wgmma_rate.py            # GPU: time every variant
    python tools/probe_wgmma_rate.py --compile  # no GPU: PTX, local ptxas

A CTA is WGS warpgroups; each runs KT k-tiles of 4 wgmma (k16 each) on its
accumulators (N / 2 fp32 a thread), B a 4-k-step image in shared memory that
never changes (its content does not matter for time).  Modes add, in order:
  mma    wgmma.fence, 4 x mma, commit, wait_group 0 every k-tile (as the v2 loop)
  sync   + fence.proxy.async and a CTA barrier at each k-tile's top, one 16-byte
         st.shared a thread into the image (the loop's activation staging)
  load   + a 16-byte ld.global.nc of weights a thread a k-tile, issued after the
         barrier and consumed one k-tile later (the loop's weight stream: the
         proxy fence then waits for it)
  dec    + those words decoded to bf16 and scaled (the v2 decoder, 4 words a
         k-tile, one packed multiply a pair): the A registers of the 4 wgmma
  nosync dec without the proxy fence and barrier (the fence's cost beside dec)
  full   dec with the v2 loop's other per-k-tile work: the scale word loaded and
         looked up in a shared table (the packed multiplier), and activations
         staged as the loop does (two 16-byte loads a thread and half, stored a
         k-tile later as two core rows), read from a 64 KB window a CTA, so
         they hit L2 as the GEMM's activations mostly do
  cpa    full with every global read a cp.async into a 4-slot ring in dynamic
         shared memory (weights and scale read back with ld.shared; the
         activation images copied in 16-byte pieces, as a natural-K image would
         allow): the proxy fence then has no load of its own in flight
  ws     warp-specialized: a third warpgroup (the producer) issues every
         cp.async of cpa's ring and signals each slot full on an mbarrier
         (cp.async.mbarrier.arrive.noinc); the two consumer warpgroups wait on
         it (no CTA barrier), decode, issue the k-tile's wgmma, then wait for
         the PREVIOUS k-tile's wgmma only (wait_group 1: the decode of k-tile
         c + 1 overlaps k-tile c's wgmma) and release its slot on an "empty"
         mbarrier the producer waits on before refilling it.  Optionally
         setmaxnreg moves registers from the producer to the consumers.
halves: one decoded A fragment feeds 1, 2 or 4 m64n64k16 wgmma on as many
accumulator sets and B images (64, 128 or 256 routes a warpgroup for one decode).
The weights are streamed from a 1 GiB buffer (each CTA its own run), so loads
come from DRAM as in the GEMM's first pass over each tile.  Time: the median
of 20 launches; TFLOP/s = 2 x 64 x N x 16 x 4 x KT x warpgroups / time; a cell reads
"TFLOP/s xCTAs-an-SM rREGISTERS" ("!": the output was not all finite).
"""
from __future__ import annotations

import os
import sys
from multiprocessing import get_context

import numpy as np
from numba import cuda, float32, uint32

import probe_common
import sass_report

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pymoe.cuda.kernels.common import M126, make_decoder  # noqa: E402
from pymoe.cuda.kernels.ptx import (cp_async4_g, cp_async16_g, cp_commit, gaddr,  # noqa: E402
                                    ld_nc1, ld_nc4, lds1, lds4, make_cp_wait, mul2_bf16,
                                    smem_u32, sts4)
from pymoe.cuda.kernels.wgmma import (cp_mbar_arrive, fence_mbar_init,  # noqa: E402
                                      fence_proxy_async, make_acc_fill, make_setmaxnreg,
                                      make_wgmma_rs, make_wgmma_wait, mbar_arrive, mbar_init,
                                      mbar_try_wait, wgmma_commit, wgmma_desc, wgmma_fence)
from pymoe.cuda.launch import KernelSpec  # noqa: E402

MODES = ("mma", "sync", "load", "dec", "nosync")
NS = (64, 128, 256)
WGS = 2
KT = 512
XWIN = 1 << 14          # activation words a CTA cycles through (64 KB: L2 hits)
PER = 1 << 18           # words a CTA streams (1 MiB), wrapped by a mask: until
PMASK = PER - 1         # 2026-12-01 a runtime `% per` put a 64-bit division (a CALL)
                        # in every global address of the loop (see run_gpu)


def make_tile_ops(n: int, halves: int):
    """Device functions both kernels share: frags(w0..w3, fg, fu, hg, hu) -> the 16
    A registers of a k-tile (the v2 decoder, one packed multiply a pair by the
    scale pairs fg / fu of k-steps 0-1 and hg / hu of 2-3); issue(acc, acc1, acc2,
    acc3, r, d) -> the accumulators after the 4 k-steps' wgmma on each half
    (fence, commit); total(acc, acc1, acc2, acc3) -> their sum (the output)."""
    step16 = 32 * n // 16                    # a k-step's image in 16-byte units
    half16 = 4 * step16                      # a half's image
    mma = make_wgmma_rs(n, "bfloat16")
    decode = make_decoder("bfloat16")

    @cuda.jit(device=True, inline=True)
    def frags(w0, w1, w2, w3, fg, fu, hg, hu):
        a0, a1, a2, a3 = decode(w0)
        b0, b1, b2, b3 = decode(w1)
        c0, c1, c2, c3 = decode(w2)
        e0, e1, e2, e3 = decode(w3)
        return (mul2_bf16(a0, fg), mul2_bf16(a1, fu), mul2_bf16(a2, fg), mul2_bf16(a3, fu),
                mul2_bf16(b0, fg), mul2_bf16(b1, fu), mul2_bf16(b2, fg), mul2_bf16(b3, fu),
                mul2_bf16(c0, hg), mul2_bf16(c1, hu), mul2_bf16(c2, hg), mul2_bf16(c3, hu),
                mul2_bf16(e0, hg), mul2_bf16(e1, hu), mul2_bf16(e2, hg), mul2_bf16(e3, hu))

    @cuda.jit(device=True, inline=True)
    def kstep(acc, acc1, acc2, acc3, x0, x1, x2, x3, ds):
        """One k-step's wgmma on every half, A registers x0..x3."""
        acc = mma(acc, x0, x1, x2, x3, ds, 1)
        if halves > 1:
            acc1 = mma(acc1, x0, x1, x2, x3, ds + half16, 1)
        if halves > 2:
            acc2 = mma(acc2, x0, x1, x2, x3, ds + 2 * half16, 1)
            acc3 = mma(acc3, x0, x1, x2, x3, ds + 3 * half16, 1)
        return acc, acc1, acc2, acc3

    @cuda.jit(device=True, inline=True)
    def issue(acc, acc1, acc2, acc3, r, d):
        wgmma_fence()
        acc, acc1, acc2, acc3 = kstep(acc, acc1, acc2, acc3, r[0], r[1], r[2], r[3], d)
        acc, acc1, acc2, acc3 = kstep(acc, acc1, acc2, acc3, r[4], r[5], r[6], r[7],
                                      d + step16)
        acc, acc1, acc2, acc3 = kstep(acc, acc1, acc2, acc3, r[8], r[9], r[10], r[11],
                                      d + 2 * step16)
        acc, acc1, acc2, acc3 = kstep(acc, acc1, acc2, acc3, r[12], r[13], r[14], r[15],
                                      d + 3 * step16)
        wgmma_commit()
        return acc, acc1, acc2, acc3

    @cuda.jit(device=True, inline=True)
    def total(acc, acc1, acc2, acc3):
        s = float32(0.0)
        for v in acc:
            s += v
        if halves > 1:
            for v in acc1:
                s += v
        if halves > 2:
            for v in acc2:
                s += v
            for v in acc3:
                s += v
        return s

    return frags, issue, total


def build(n: int, mode: str, halves: int = 1, cap: int | None = None,
          wgs: int = WGS) -> KernelSpec:
    threads = 128 * wgs
    full = mode == "full"
    sync = mode in ("sync", "load", "dec", "full")
    load = mode in ("load", "dec", "nosync", "full")
    dec = mode in ("dec", "nosync", "full")
    assert halves in (1, 2, 4) and (halves == 1 or n == 64)
    img_words = 32 * n * halves + 32         # 4 k-steps x n rows x 32 bytes a half
    half16 = 8 * n                           # a half's image in 16-byte units
    fill = make_acc_fill(n)
    wait0 = make_wgmma_wait(0)
    frags, issue, total = make_tile_ops(n, halves)
    bias = uint32(M126)

    def kernel(w, per, kt, out):
        tid = cuda.threadIdx.x
        img = cuda.shared.array(img_words, uint32)
        s2 = cuda.shared.array(256, uint32)
        for i in range(tid, img_words, threads):
            img[i] = uint32((i * 2654435761) & 0x3C7F3C7F)     # modest bf16 values
        for i in range(tid, 256, threads):
            s2[i] = uint32(0x3F803F80) + uint32(i & 3)
        fence_proxy_async()
        cuda.syncthreads()
        base = (smem_u32(img) + uint32(127)) & uint32(0xFFFFFF80)
        d = wgmma_desc(base, 128, 256)
        mine = base + uint32((tid * 32) % (128 * n))        # this thread's staging rows
        acc = fill(float32(0.0))
        acc1 = acc
        acc2 = acc
        acc3 = acc
        wb = cuda.blockIdx.x * per + ((tid * 4) & PMASK)
        xb = cuda.blockIdx.x * per + per // 2 + tid * 8 * halves
        w0 = w1 = w2 = w3 = uint32(tid * 0x3F803F80 + 0x3F803F80) & uint32(0x3FFF3FFF)
        sa = uint32(tid)
        z = uint32(0x3C003C00)
        x0 = x1 = x2 = x3 = x4 = x5 = x6 = x7 = z
        y0 = y1 = y2 = y3 = y4 = y5 = y6 = y7 = z
        if load:
            w0, w1, w2, w3 = ld_nc4(w, wb)
        c = 0
        while c < kt:
            if sync:
                fence_proxy_async()
                cuda.syncthreads()
                if full:                  # the staged activations: two core rows a route
                    sts4(mine, x0, x2, x4, x6)
                    sts4(mine + uint32(16), x1, x3, x5, x7)
                    if halves > 1:
                        sts4(mine + uint32(half16 * 16), y0, y2, y4, y6)
                        sts4(mine + uint32(half16 * 16 + 16), y1, y3, y5, y7)
                else:
                    sts4(mine, w0, w1, w2, w3)
            n0, n1, n2, n3 = w0, w1, w2, w3
            sn = sa
            if load:
                n0, n1, n2, n3 = ld_nc4(w, wb + (((c + 1) * threads * 4) & PMASK))
            if full:
                sn = ld_nc1(w, wb + (((c + 1) * threads * 4 + 1) & PMASK))
                xo = xb + (((c + 1) * threads * 8 * halves) & (XWIN - 1))
                x0, x1, x2, x3 = ld_nc4(w, xo)
                x4, x5, x6, x7 = ld_nc4(w, xo + 4)
                if halves > 1:
                    y0, y1, y2, y3 = ld_nc4(w, xo + 8)
                    y4, y5, y6, y7 = ld_nc4(w, xo + 12)
            wait0()
            if dec:
                fg = fu = hg = hu = bias
                if full:                  # the scale table, as the v2 GEMM reads it
                    fg = s2[sa & uint32(255)]
                    fu = s2[(sa >> uint32(16)) & uint32(255)]
                    hg = s2[(sa >> uint32(8)) & uint32(255)]
                    hu = s2[(sa >> uint32(24)) & uint32(255)]
                r = frags(w0, w1, w2, w3, fg, fu, hg, hu)
            else:
                r = (w0, w1, w2, w3, w1, w2, w3, w0, w2, w3, w0, w1, w3, w0, w1, w2)
            acc, acc1, acc2, acc3 = issue(acc, acc1, acc2, acc3, r, d)
            w0, w1, w2, w3 = n0, n1, n2, n3
            sa = sn
            c += 1
        wait0()
        out[cuda.blockIdx.x * threads + tid] = total(acc, acc1, acc2, acc3)

    return KernelSpec(kernel, ("u4[]", "i8", "i8", "f4[]"), threads, arch_specific=True,
                      max_regs=cap)


RING = 4                 # cpa: ring slots (k-tiles); copies run 2 k-tiles ahead


def slot_parts(halves: int) -> tuple:
    """Bytes of a cpa / ws ring slot's parts: 256 consumer threads' 16 weight
    bytes, their 4-byte scale words, the halves' activation images."""
    return 4096, 1024, halves * 8192


def cpa_bytes(halves: int) -> int:
    """cpa's dynamic shared memory: the ring (weights, scales, activation images
    of each k-tile) + 128 bytes to align."""
    return RING * sum(slot_parts(halves)) + 128


def build_cpa(halves: int, cap: int | None = None, piece: int = 16) -> KernelSpec:
    """mode cpa (n64, ``halves`` halves): everything a k-tile needs comes by
    cp.async into a RING-slot ring in dynamic shared memory: each consumer
    thread's 16 weight bytes and scale word, and the activation images (16-byte
    copies, as if the image were in natural K order); no global load into
    registers, so the proxy fence has no load of its own to wait for.  Iteration
    c: cp.async.wait_group 1 (k-tile c's copies landed), proxy fence, barrier;
    copies of k-tile c + 2 into the slot k-tile c - 2 used; weights and scale
    from shared memory; wait_group 0 of wgmma; decode; 4 x halves wgmma.
    piece 4: the activations in 4-byte copies instead (what v2's permuted K order
    within a k-step allows: a 16-byte run of a row is not contiguous in the
    image), four times as many cp.async."""
    threads = 128 * WGS
    n = 64
    wslot, sslot, xslot = slot_parts(halves)      # weights, scales, images
    slot_b = wslot + sslot + xslot
    fill = make_acc_fill(n)
    wait0 = make_wgmma_wait(0)
    cp_wait1 = make_cp_wait(1)
    frags, issue, total = make_tile_ops(n, halves)

    @cuda.jit(device=True, inline=True)
    def copy_ktile(c, sb, w, wb, xb, tid):
        """k-tile c's copies into the ring slot at shared address sb: this
        thread's 16 weight bytes and scale word, then its pieces of the images."""
        cp_async16_g(sb + uint32(tid * 16), gaddr(w, wb + ((c * threads * 4) & PMASK)))
        cp_async4_g(sb + uint32(wslot + tid * 4), gaddr(w, wb + ((c * threads * 4 + 1) & PMASK)))
        if piece == 16:
            for q in range(2 * halves):              # 16-byte pieces of the images
                cp_async16_g(sb + uint32(wslot + sslot + (q * threads + tid) * 16),
                             gaddr(w, xb + (((c * 2 * halves + q) * threads * 4
                                             + tid * 4) & (XWIN - 1))))
        else:
            for q in range(8 * halves):              # 4-byte pieces
                cp_async4_g(sb + uint32(wslot + sslot + (q * threads + tid) * 4),
                            gaddr(w, xb + (((c * 8 * halves + q) * threads + tid)
                                          & (XWIN - 1))))

    def kernel(w, per, kt, out):
        tid = cuda.threadIdx.x
        dyn = cuda.shared.array(0, uint32)
        s2 = cuda.shared.array(256, uint32)
        for i in range(tid, 256, threads):
            s2[i] = uint32(0x3F803F80) + uint32(i & 3)
        ring = (smem_u32(dyn) + uint32(127)) & uint32(0xFFFFFF80)
        wb = cuda.blockIdx.x * per + ((tid * 4) & PMASK)
        xb = cuda.blockIdx.x * per + per // 2
        acc = fill(float32(0.0))
        acc1 = acc
        acc2 = acc
        acc3 = acc
        # prologue: k-tiles 0 and 1 in flight
        for c0 in range(2):
            copy_ktile(c0, ring + uint32(c0 * slot_b), w, wb, xb, tid)
            cp_commit()
        c = 0
        while c < kt:
            cp_wait1()
            fence_proxy_async()
            cuda.syncthreads()
            c2 = c + 2                           # into the slot k-tile c - 2 read
            copy_ktile(c2, ring + uint32((c2 % RING) * slot_b), w, wb, xb, tid)
            cp_commit()
            cur = ring + uint32((c % RING) * slot_b)
            w0, w1, w2, w3 = lds4(cur + uint32(tid * 16))
            sa = lds1(cur + uint32(wslot + tid * 4))
            d = wgmma_desc(cur + uint32(wslot + sslot), 128, 256)
            wait0()
            r = frags(w0, w1, w2, w3, s2[sa & uint32(255)], s2[(sa >> uint32(16)) & uint32(255)],
                      s2[(sa >> uint32(8)) & uint32(255)], s2[(sa >> uint32(24)) & uint32(255)])
            acc, acc1, acc2, acc3 = issue(acc, acc1, acc2, acc3, r, d)
            c += 1
        wait0()
        out[cuda.blockIdx.x * threads + tid] = total(acc, acc1, acc2, acc3)

    return KernelSpec(kernel, ("u4[]", "i8", "i8", "f4[]"), threads, arch_specific=True,
                      max_regs=cap)


WS_RING = 4
WS_OPTS = {"wsnf": dict(fence=False), "ws8": dict(ring_n=8), "ws8nf": dict(ring_n=8, fence=False),
           "ws0": dict(lag=0)}


def ws_bytes(halves: int, ring: int = WS_RING) -> int:
    """ws's dynamic shared memory: cpa's ring + 2 x ring mbarriers."""
    return ring * sum(slot_parts(halves)) + 128 + 16 * ring


def build_ws(halves: int, cap: int | None = None, regs: tuple | None = None,
             ring_n: int = WS_RING, fence: bool = True, lag: int = 1) -> KernelSpec:
    """mode ws (n64, ``halves`` halves; see the module doc): warpgroup 0 produces,
    warpgroups 1 and 2 consume; ``regs`` = (producer, consumer) for setmaxnreg;
    ring_n slots; fence: the consumers' proxy fence after each full wait (wsnf
    drops it: timing only); lag: wgmma groups left pending (0: no overlap)."""
    threads = 128 * (WGS + 1)
    n = 64
    wslot, sslot, xslot = slot_parts(halves)      # the consumers' weights, scales
    slot_b = wslot + sslot + xslot
    ring_b = ring_n * slot_b
    fill = make_acc_fill(n)
    wait0 = make_wgmma_wait(0)
    wait1 = make_wgmma_wait(lag)
    frags, issue, total = make_tile_ops(n, halves)
    dec_p = make_setmaxnreg(False, regs[0]) if regs else None
    inc_c = make_setmaxnreg(True, regs[1]) if regs else None
    nq = 2 * halves * 2                # 16-byte image pieces a producer thread a k-tile
    cp_wait0 = make_cp_wait(0)

    def kernel(w, per, kt, out):
        tid = cuda.threadIdx.x
        dyn = cuda.shared.array(0, uint32)
        s2 = cuda.shared.array(256, uint32)
        for i in range(tid, 256, threads):
            s2[i] = uint32(0x3F803F80) + uint32(i & 3)
        ring = (smem_u32(dyn) + uint32(127)) & uint32(0xFFFFFF80)
        full = ring + uint32(ring_b)                 # ring_n mbarriers, then ring_n
        empty = full + uint32(8 * ring_n)
        if tid == 0:
            for q in range(ring_n):
                mbar_init(full + uint32(8 * q), 128)     # the producer's 128 threads
                mbar_init(empty + uint32(8 * q), 256)    # every consumer thread
            fence_mbar_init()
        cuda.syncthreads()
        if tid < 128:                                # ---- producer
            if regs:
                dec_p()
            c = 0
            while c < kt:
                q = c % ring_n
                if c >= ring_n:
                    par = uint32(((c // ring_n) - 1) & 1)
                    while mbar_try_wait(empty + uint32(8 * q), par) == uint32(0):
                        pass
                sb = ring + uint32(q * slot_b)
                for h in range(2):                   # consumer threads tid, tid + 128
                    j = tid + 128 * h
                    wb = cuda.blockIdx.x * per + ((j * 4 + c * 256 * 4) & PMASK)
                    cp_async16_g(sb + uint32(j * 16), gaddr(w, wb))
                    cp_async4_g(sb + uint32(wslot + j * 4), gaddr(w, wb + 1))
                xb = cuda.blockIdx.x * per + per // 2
                for qq in range(nq):
                    cp_async16_g(sb + uint32(wslot + sslot + (qq * 128 + tid) * 16),
                                 gaddr(w, xb + (((c * nq + qq) * 128 * 4 + tid * 4) & (XWIN - 1))))
                cp_mbar_arrive(full + uint32(8 * q))
                c += 1
            cp_commit()
            cp_wait0()
            out[cuda.blockIdx.x * threads + tid] = float32(0.0)
        else:                                        # ---- consumers
            if regs:
                inc_c()
            ct = tid - 128
            acc = fill(float32(0.0))
            acc1 = acc
            acc2 = acc
            acc3 = acc
            c = 0
            while c < kt:
                q = c % ring_n
                while mbar_try_wait(full + uint32(8 * q), uint32((c // ring_n) & 1)) == \
                        uint32(0):
                    pass
                if fence:
                    fence_proxy_async()
                cur = ring + uint32(q * slot_b)
                w0, w1, w2, w3 = lds4(cur + uint32(ct * 16))
                sa = lds1(cur + uint32(wslot + ct * 4))
                d = wgmma_desc(cur + uint32(wslot + sslot), 128, 256)
                r = frags(w0, w1, w2, w3, s2[sa & uint32(255)],
                          s2[(sa >> uint32(16)) & uint32(255)],
                          s2[(sa >> uint32(8)) & uint32(255)], s2[(sa >> uint32(24)) & uint32(255)])
                acc, acc1, acc2, acc3 = issue(acc, acc1, acc2, acc3, r, d)
                wait1()                              # k-tile c - 1's wgmma done
                if c >= lag:
                    mbar_arrive(empty + uint32(8 * ((c - lag) % ring_n)))
                c += 1
            wait0()
            out[cuda.blockIdx.x * threads + tid] = total(acc, acc1, acc2, acc3)

    return KernelSpec(kernel, ("u4[]", "i8", "i8", "f4[]"), threads, arch_specific=True,
                      max_regs=cap)


def spec_of(n, mode, halves, cap) -> KernelSpec:
    if mode.startswith("cpa"):
        return build_cpa(halves, cap, 4 if mode == "cpa4" else 16)
    if mode.startswith("ws"):
        regs = {"wsr": (40, 104), "wsr2": (40, 160)}.get(mode)
        return build_ws(halves, cap, regs, **WS_OPTS.get(mode, {}))
    return build(n, mode, halves, cap)


def _ptx(args):
    from pymoe.cuda import launch
    return launch._compile(spec_of(*args), (9, 0))


def variants():
    """(n, mode, halves): the table's grid, then the v2 loop's shapes (full) at one,
    two and four n64 halves a warpgroup beside n128 / n256.  PROBE_MODES (a comma
    list, e.g. "cpa,ws,wsr,wsr2") keeps only those modes."""
    only = os.environ.get("PROBE_MODES")
    vs = ([(n, m, 1, None) for n in NS for m in MODES]
            + [(64, "full", 1, None), (64, "full", 1, 80), (64, "full", 2, None),
               (64, "full", 4, None), (128, "full", 1, None), (256, "full", 1, None),
               (64, "dec", 2, None), (64, "dec", 4, None),
               (64, "cpa", 1, None), (64, "cpa", 1, 80), (64, "cpa", 2, None),
               (64, "cpa", 4, None), (64, "cpa4", 1, 80), (64, "cpa4", 2, None),
               (64, "cpa4", 2, 128),
               (64, "ws", 1, None), (64, "ws", 2, None), (64, "ws", 1, 80),
               (64, "wsr", 1, 88), (64, "wsr2", 2, 128),
               (64, "wsnf", 1, None), (64, "ws8", 1, None), (64, "ws8nf", 1, None),
               (64, "ws8", 2, None), (64, "ws0", 1, None)])
    return [v for v in vs if not only or v[1] in only.split(",")]


def compile_only() -> int:
    specs = {f"n{n}x{h}-{m}-c{c}": spec_of(n, m, h, c) for n, m, h, c in variants()
             if m in ("dec", "full", "cpa", "cpa4") or m.startswith("ws")}
    for name, ptx, sass in probe_common.compiled(specs):
        print(f"  {name}: HGMMA {sass.count('HGMMA')}, MEMBAR {sass.count('MEMBAR')}")
    return 0


def run_gpu() -> int:
    import cupy as cp
    from pymoe.cuda import launch
    from pymoe.cuda.launch import Kernel
    vs = variants()
    with get_context("fork").Pool(min(16, len(vs))) as pool:     # Numba compiles in parallel
        ptxs = pool.map(_ptx, vs)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    per = PER                                      # words a CTA streams (1 MiB), wrapped
    w = cp.arange(3 * sms * per, dtype=cp.uint32) * cp.uint32(2654435761)
    rows = []
    for (n, mode, halves, cap), ptx in zip(vs, ptxs):
        spec = spec_of(n, mode, halves, cap)
        mod = cp.cuda.function.Module()
        mod.load(ptx.encode())
        fn = mod.get_function(launch._entry(ptx))
        k = Kernel(None, spec, fn, "compiled")
        k.module = mod
        dyn = (cpa_bytes(halves) if mode.startswith("cpa")
               else ws_bytes(halves, WS_OPTS.get(mode, {}).get("ring_n", WS_RING))
               if mode.startswith("ws") else 0)
        if dyn:
            from cupy.cuda import driver as drv
            drv.funcSetAttribute(fn.ptr, drv.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 dyn)
        regs = sass_report.func_attrs(fn)[0]
        best = None
        for per_sm in (1, 2, 3):
            ctas = sms * per_sm
            out = cp.full(ctas * spec.threads, np.nan, cp.float32)
            p = k.prepare((ctas,), (w, per, KT, out))

            def go():
                launch._launch_kernel(p._fn, ctas, 1, 1, spec.threads, 1, 1, dyn,
                                      cp.cuda.get_current_stream().ptr, p._params_ptr, 0)
            try:
                ms = probe_common.median_ms(go, 20, warm=2)
            except Exception as e:                   # too many CTAs for the registers
                print(f"n{n} {mode} x{per_sm}: {type(e).__name__}")
                continue
            ok = bool(cp.isfinite(out).all())
            tf = 2 * 64 * n * halves * 16 * 4 * KT * WGS * ctas / (ms * 1e-3) / 1e12
            if best is None or tf > best[0]:
                best = (tf, per_sm, ms, ok)
        rows.append((n, mode, halves, regs, best, cap))
        print(f"  measured n{n} x{halves} {mode} cap {cap}: {best}", flush=True)
    print(f"wgmma RS m64nNk16 bf16, {WGS} warpgroups a CTA, {KT} k-tiles of 4 wgmma, "
          "best of 1-3 CTAs an SM (TFLOP/s):")
    print(f"{'N':>4} " + " ".join(f"{m:>14}" for m in MODES))
    def cell(r):
        b = r[4]
        return (f"{b[0]:5.0f}{'' if b[3] else '!'} x{b[1]} r{r[3]:<3}" if b
                else f"{'-':>14}")
    for n in NS:
        got = [[x for x in rows if x[:3] == (n, mode, 1) and x[5] is None] for mode in MODES]
        if all(got):
            print(f"{n:>4} " + " ".join(f"{cell(g[0]):>14}" for g in got))
    print("the v2 loop's shapes (full: + scale table, two staged activation rows a "
          "thread a half), routes a warpgroup = N x halves:")
    for r in rows:
        if r[1] in ("full", "cpa", "cpa4") or r[1].startswith("ws") or r[2] > 1:
            print(f"  n{r[0]} x{r[2]} {r[1]:>5} cap {r[5] or '-':>4}: {cell(r)}")
    return 0


if __name__ == "__main__":
    sys.exit(probe_common.main(__doc__, compile_only, run_gpu))
