"""Probe: a per-warp ring fed by ONE lane's bulk copies (cp.async.bulk + mbarrier
complete_tx) against today's per-lane cp.async ring (kernels/decode.py), from
Numba, through pymoe's own launch path.

Why: in the decode kernels a warp spends ~28 of its ~150 instructions a k-tile
feeding its ring (two cp.async, 64-bit address updates, the stream's counters;
docs/performance.md, Speed I step 2).  Instructions are per warp, so a bulk copy
of one tile would cost about as much; the gain comes from copying CH tiles at
once, which needs each warp's k-tiles contiguous (a contiguous split of K instead
of k-tiles w, w + 4, ...): one elected lane then moves CH x 512 bytes per bulk
copy and the producer costs ~1/CH as much a tile.  Nothing in pymoe relies on
bulk copies or mbarriers before this probe passes on the H200.

    python tools/probe_bulk_ring.py            # GPU: check both rings, time them
    python tools/probe_bulk_ring.py --compile  # no GPU: PTX, local ptxas, SASS mix

Both kernels stream 512-byte tiles per warp (4 warps a CTA): warp g = 4b + w
takes the contiguous tiles g n .. g n + n - 1 (n a multiple of CH); lane l XORs
its 16 bytes of every tile into 4 words, written to out[g * 32 + l][0..4].  The
bulk ring has RING / CH slots of CH tiles (RING / CH - 1 copies in flight); the
per-lane ring has RING slots of one tile (RING - 1 in flight), as decode has.  The
host checks every word against NumPy, on a small odd grid and on 1 GiB, then
times the 1 GiB stream (CuPy events, median of 10) against a device copy.
"""
from __future__ import annotations

import os
import sys

import numpy as np
from llvmlite import ir
from numba import cuda, types, uint32
from numba.cuda.extending import intrinsic

import probe_common

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pymoe.cuda.kernels.ptx import (_asm, _u32, cp_async16_g, cp_commit, gaddr,  # noqa: E402
                                    lds4, make_cp_wait, smem_u32)
from pymoe.cuda.kernels.wgmma import (fence_mbar_init, mbar_expect_tx, mbar_init,  # noqa: E402
                                      mbar_try_wait)
from pymoe.cuda.launch import KernelSpec  # noqa: E402

RING = 16                                    # tiles of ring a warp (8 KB)
CH = 4                                       # tiles a bulk copy
SLOTS = RING // CH
TILE = 512                                   # bytes: 32 lanes x 16
WARPS = 4
RING_WORDS = WARPS * RING * TILE // 4 + 4    # + 16 bytes to align up
BAR_WORDS = WARPS * SLOTS * 2 + 2            # 8-byte mbarriers, + alignment


@intrinsic
def bulk_g2s(typingctx, dst, src, nbytes, mbar):
    """cp.async.bulk global -> shared (dst, src 16-byte aligned, nbytes % 16 == 0);
    completion is counted on mbar as transaction bytes."""
    sig = types.void(dst, src, nbytes, mbar)

    def codegen(context, builder, signature, args):
        d = _u32(context, builder, signature.args[0], args[0])
        g = context.cast(builder, args[1], signature.args[1], types.int64)
        n = _u32(context, builder, signature.args[2], args[2])
        m = _u32(context, builder, signature.args[3], args[3])
        _asm(builder, ir.VoidType(),
             "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
             "[$0], [$1], $2, [$3];", "r,l,r,r,~{memory}", [d, g, n, m])
        return context.get_dummy_value()
    return sig, codegen


def bulk_kernel(src, n, out):
    """Lane 0 of each warp keeps SLOTS - 1 chunks of CH tiles in flight with bulk
    copies; every lane waits on the chunk's mbarrier phase, then reads its 16
    bytes of each tile."""
    tid = cuda.threadIdx.x
    warp = tid // 32
    lane = tid % 32
    ring = cuda.shared.array(RING_WORDS, uint32)
    bars = cuda.shared.array(BAR_WORDS, uint32)
    base = (smem_u32(ring) + uint32(15)) & uint32(0xFFFFFFF0)
    mb = (smem_u32(bars) + uint32(7)) & uint32(0xFFFFFFF8)
    wbase = base + uint32(warp * RING * TILE)
    wbar = mb + uint32(warp * SLOTS * 8)
    if lane == 0:
        for q in range(SLOTS):
            mbar_init(wbar + uint32(8 * q), 1)
        fence_mbar_init()
    cuda.syncthreads()
    wg = cuda.blockIdx.x * WARPS + warp
    nch = uint32(n // CH)
    first = gaddr(src, wg * n * (TILE // 4))          # the warp's first tile
    if lane == 0:
        for q in range(SLOTS - 1):
            if uint32(q) < nch:
                mbar_expect_tx(wbar + uint32(8 * q), CH * TILE)
                bulk_g2s(wbase + uint32(q * CH * TILE), first + q * (CH * TILE), CH * TILE,
                         wbar + uint32(8 * q))
    x0 = x1 = x2 = x3 = uint32(0)
    i = uint32(0)
    while i < nch:
        ahead = uint32(i + uint32(SLOTS - 1))
        if lane == 0 and ahead < nch:            # the slot of chunk i - 1, read already
            sa = ahead & uint32(SLOTS - 1)
            mbar_expect_tx(wbar + uint32(8) * sa, CH * TILE)
            bulk_g2s(wbase + sa * uint32(CH * TILE), first + int(ahead) * (CH * TILE),
                     CH * TILE, wbar + uint32(8) * sa)
        s = i & uint32(SLOTS - 1)
        par = (i // uint32(SLOTS)) & uint32(1)
        spins = 0
        while mbar_try_wait(wbar + uint32(8) * s, par) == uint32(0):
            spins += 1
            if spins > (1 << 22):                # a lost phase: fail, do not hang
                x0 ^= uint32(0xDEADBEEF)
                break
        for c in range(CH):
            w0, w1, w2, w3 = lds4(wbase + s * uint32(CH * TILE) + uint32(c * TILE + lane * 16))
            x0 ^= w0
            x1 ^= w1
            x2 ^= w2
            x3 ^= w3
        cuda.syncwarp()                          # every lane has read slot s
        i = uint32(i + uint32(1))
    o = (wg * 32 + lane) * 4
    out[o] = x0
    out[o + 1] = x1
    out[o + 2] = x2
    out[o + 3] = x3


LRING = 8                                    # the decode kernels' ring
LRING_WORDS = WARPS * LRING * TILE // 4 + 4
_wait7 = make_cp_wait(LRING - 1)


def lane_kernel(src, n, out):
    """Today's ring: every lane copies its own 16 bytes a tile (cp.async.cg)."""
    tid = cuda.threadIdx.x
    warp = tid // 32
    lane = tid % 32
    ring = cuda.shared.array(LRING_WORDS, uint32)
    base = (smem_u32(ring) + uint32(15)) & uint32(0xFFFFFFF0)
    mine = base + uint32(warp * LRING * TILE + lane * 16)
    wg = cuda.blockIdx.x * WARPS + warp
    g = gaddr(src, wg * n * (TILE // 4) + lane * 4)   # the lane's 16 bytes of tile 0
    for q in range(LRING - 1):
        if q < n:
            cp_async16_g(mine + uint32(q * TILE), g + q * TILE)
        cp_commit()
    x0 = x1 = x2 = x3 = uint32(0)
    for i in range(n):
        ahead = i + LRING - 1
        if ahead < n:
            cp_async16_g(mine + uint32((ahead % LRING) * TILE), g + ahead * TILE)
        cp_commit()
        _wait7()
        w0, w1, w2, w3 = lds4(mine + uint32((i % LRING) * TILE))
        x0 ^= w0
        x1 ^= w1
        x2 ^= w2
        x3 ^= w3
    o = (wg * 32 + lane) * 4
    out[o] = x0
    out[o + 1] = x1
    out[o + 2] = x2
    out[o + 3] = x3


SPECS = {"bulk": KernelSpec(bulk_kernel, ("u4[]", "i8", "u4[]"), 32 * WARPS),
         "lane": KernelSpec(lane_kernel, ("u4[]", "i8", "u4[]"), 32 * WARPS)}


def expected(words: np.ndarray, grid: int, n: int) -> np.ndarray:
    """XOR over the warp's n tiles, per (warp, lane, word)."""
    t = words[:n * grid * WARPS * TILE // 4].reshape(grid * WARPS, n, 32, 4)
    return np.bitwise_xor.reduce(t, axis=1).reshape(-1)


def compile_only() -> int:
    import sass_report as sr
    from collections import Counter
    for name, _, sass in probe_common.compiled(SPECS):
        ins = sr.instructions(sass)
        loop = sr.hottest_loop(ins)
        ops = Counter(op for _, op, _, _ in ins)
        print(f"  SASS: {len(ins)} instructions; " + ", ".join(
            f"{k} {ops[k]}" for k in ("UBLKCP", "SYNCS", "LDGSTS", "LDGDEPBAR", "DEPBAR", "LDS")
            if ops.get(k)))
        if loop:
            body = [i for i in ins if loop[0] <= i[0] <= loop[1]]
            print(f"  a loop of {len(body)} instructions: " + ", ".join(
                f"{k} {v}" for k, v in Counter(o for _, o, _, _ in body).most_common(12)))
    return 0


def run_gpu() -> int:
    import cupy as cp
    from pymoe.cuda.launch import load_spec
    kern = {k: load_spec(s) for k, s in SPECS.items()}
    ok = True
    rng = np.random.default_rng(0)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    big = (1 << 30) // (5 * sms * WARPS * TILE) // CH * CH
    for grid, n in ((7, 3 * CH), (3, CH), (5 * sms, big)):
        words = rng.integers(0, 2**32, n * grid * WARPS * TILE // 4 + 64,
                             dtype=np.uint64).astype(np.uint32)
        src = cp.asarray(words)
        want = expected(words, grid, n)
        for name, k in kern.items():
            out = cp.full(grid * WARPS * 32 * 4, 0xFFFFFFFF, cp.uint32)
            k.launch((grid, 1, 1), (src, n, out))
            got = cp.asnumpy(out)
            good = np.array_equal(got, want)
            ok &= good
            print(f"[{'PASS' if good else 'FAIL'}] {name}: grid {grid}, {n} tiles a warp, "
                  f"{(got != want).sum()} words differ")
    nbytes = n * grid * WARPS * TILE
    res = {}
    for name, k in kern.items():
        out = cp.empty(grid * WARPS * 32 * 4, cp.uint32)
        ms = probe_common.median_ms(lambda: k.launch((grid, 1, 1), (src, n, out)), 10,
                                    warm=3)
        res[name] = nbytes / (ms * 1e-3) / 1e12
    dst = cp.empty_like(src)

    def copy():
        dst[...] = src
    cp_bw = 2 * src.nbytes / (probe_common.median_ms(copy, 1) * 1e-3) / 1e12
    print(f"read TB/s over {nbytes / 2**30:.2f} GiB: " +
          ", ".join(f"{k} {v:.2f}" for k, v in res.items()) + f"; copy (r+w) {cp_bw:.2f}")
    return 0 if ok else 1


def main() -> int:
    return probe_common.main(__doc__, compile_only, run_gpu, "no GPU: PTX, ptxas and SASS")


if __name__ == "__main__":
    sys.exit(main())
