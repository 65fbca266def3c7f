"""Probe: how many L2 sectors and requests one warp's 16-byte-a-lane copy costs,
by access pattern: the question docs/performance.md Speed II step 18 left open
(fc1 issues 2.587 M warp copies of 512 bytes, 41.4 M sectors of data, and the
L2 serves 65.2 M sectors in 53.5 M requests for them).

One kernel, one pattern a launch (MODE), 4 warps a CTA, ITERS copies a warp, each
32 lanes x 16 bytes = 512 bytes (16 sectors):
    0 contig    cp.async.cg: the warp's 512 contiguous bytes (the weights' copies)
    1 halves    cp.async.cg: 8 gathered rows, 4 lanes a row, 64 bytes each: a
                k-tile's first half, then its second half (main's activation copies)
    2 lines     cp.async.cg: 4 gathered rows, 8 lanes a row, a whole 128-byte line
                each (step 17's line staging)
    3 ldg       ld.global.nc.v4 on mode 1's addresses (an LDG.128, not a copy)
    4 scatter   mode 1's copies into fc1's wgmma image layout (no swizzle): a row's
                chunks q = 0 .. 3 land at (q >> 1) STEP + (q & 1) LBO, so the two
                lanes that share a 32-byte global sector write 16 bytes each to
                shared addresses LBO apart
    5 paired    mode 1's copies, each row's chunks kept in 32-byte pairs in shared
                memory (chunk q at (q ^ (row & 3)) 16 in the row's 128 bytes, as a
                128-byte swizzle places them)
The rows are random rows of a 4096-row x 4096-byte matrix (qwen3's activations,
H = 2048 bf16: 16 MB, in L2 after the first touch); a warp keeps its rows and
walks their 32 k-tiles.

    python tools/probe_l2_copies.py --compile   # no GPU: PTX, local ptxas, SASS mix
    python tools/probe_l2_copies.py             # GPU: one launch a mode, timed
    ncu --metrics lts__t_sectors_srcunit_tex_op_read.sum,\\
        lts__t_requests_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,\\
        sm__sass_inst_executed_op_ldgsts_cache_bypass.sum python tools/probe_l2_copies.py
The run prints each mode's warp copies, so sectors / copy and requests / copy
follow from ncu's sums (one launch a mode, in mode order, after one warm-up
launch of each).
"""
from __future__ import annotations

import os
import sys

import numpy as np
from numba import cuda, uint32, uint64

import probe_common

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pymoe.cuda.kernels.ptx import (cp_async16_g, cp_commit, gaddr, ld_nc4,  # noqa: E402
                                    make_cp_wait, smem_u32)
from pymoe.cuda.launch import KernelSpec  # noqa: E402

WARPS = 4
ROW_BYTES = 4096                  # one activation row (H = 2048 bf16)
NROWS = 4096
KTILES = ROW_BYTES // 128         # 32 k-tiles of 128 bytes a row
ITERS = 2 * KTILES                # copies a warp (modes 1-3: two a k-tile)
RING = 8                          # 512-byte slots a warp
RING_WORDS = WARPS * RING * 128
GRID = 1056                       # 8 CTAs an SM of 132
MODES = ("contig", "halves", "lines", "ldg", "scatter", "paired")
LBO = 1024                        # mode 4: fc1's image strides (bytes, within a warp's
STEP = 2048                       # 4 KB of ring)
wait4 = make_cp_wait(4)
wait0 = make_cp_wait(0)


def probe_kernel(src, rows, mode, out):
    tid = cuda.threadIdx.x
    warp = tid // 32
    lane = uint64(tid % 32)
    gw = uint64(cuda.blockIdx.x * WARPS + warp)
    ring = cuda.shared.array(RING_WORDS, uint32)
    base = smem_u32(ring) + uint32(warp * RING * 512) + uint32(lane * 16)
    acc = uint32(0)
    ra = uint64(rows[gw * uint64(8) + (lane >> uint64(2))])          # the rows, loaded
    rb0 = uint64(rows[gw * uint64(8) + (lane >> uint64(3))])         # once (not counted
    rb1 = uint64(rows[gw * uint64(8) + uint64(4) + (lane >> uint64(3))])   # a copy)
    for it in range(ITERS):
        dst = base + uint32((it % RING) * 512)
        kt = uint64(it // 2)
        if mode == 0:
            off = ((gw * uint64(ITERS) + uint64(it)) * uint64(512)
                   % uint64(NROWS * ROW_BYTES)) + lane * uint64(16)
        elif mode == 2:                    # 8 lanes a row: rows 4h .. 4h + 3, h = it % 2
            row = rb1 if it % 2 else rb0
            off = row * uint64(ROW_BYTES) + kt * uint64(128) + (lane & uint64(7)) * uint64(16)
        else:                              # 4 lanes a row: half h = it % 2 of the k-tile
            off = (ra * uint64(ROW_BYTES) + kt * uint64(128) + uint64(64 * (it % 2))
                   + (lane & uint64(3)) * uint64(16))
        if mode == 4:
            q = uint32(lane & uint64(3))
            dst = (base - uint32(lane * 16) + (q >> uint32(1)) * uint32(STEP)
                   + (q & uint32(1)) * uint32(LBO) + uint32((lane >> uint64(2)) * uint64(16))
                   + uint32((it % 4) * 128))
        elif mode == 5:
            q = uint32(lane & uint64(3))
            rw = uint32(lane >> uint64(2))
            dst = (base - uint32(lane * 16) + rw * uint32(512) + uint32((it % 4) * 128)
                   + ((q ^ (rw & uint32(3))) * uint32(16)))
        if mode == 3:
            w0, w1, w2, w3 = ld_nc4(src, off // uint64(4))
            acc ^= w0 ^ w1 ^ w2 ^ w3
        else:
            cp_async16_g(dst, gaddr(src, off // uint64(4)))
            cp_commit()
            wait4()
    wait0()
    out[gw * uint64(32) + lane] = acc


SPECS = {"probe_l2_copies": KernelSpec(
    probe_kernel, ("u4[]", "i4[]", "i8", "u4[]"), WARPS * 32)}


def compile_only() -> int:
    import re
    for name, _ptx, sass in probe_common.compiled(SPECS):
        copies, loads = len(re.findall("LDGSTS", sass)), len(re.findall(r"LDG\.", sass))
        print(f"  {name}: LDGSTS {copies}, LDG {loads} (static)")
    return 0


def run_gpu() -> int:
    import cupy as cp
    from pymoe.cuda.launch import load_spec
    k = load_spec(SPECS["probe_l2_copies"])
    rng = np.random.default_rng(0)
    nw = GRID * WARPS
    src = cp.asarray(rng.integers(0, 2 ** 32, NROWS * ROW_BYTES // 4, dtype=np.uint32))
    rows = cp.asarray(rng.integers(0, NROWS, nw * 8).astype(np.int32))
    out = cp.zeros(nw * 32, cp.uint32)
    for m in range(len(MODES)):            # warm-up: every row in L2 once
        k.launch((GRID, 1, 1), (src, rows, m, out))
    cp.cuda.Device().synchronize()
    print(f"{'mode':8s} {'warp copies':>12s} {'bytes':>12s} {'us':>8s}")
    for m, name in enumerate(MODES):
        ms = probe_common.median_ms(lambda: k.launch((GRID, 1, 1), (src, rows, m, out)), 1)
        print(f"{name:8s} {nw * ITERS:12d} {nw * ITERS * 512:12d} {ms * 1e3:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(probe_common.main(__doc__, compile_only, run_gpu))
