"""Probe: what the bench's L2 flush adds to the time it measures.

`pymoe bench` (and the peers' harness, triton's do_bench) clear the L2 before
each timed replay by WRITING a 256 MB buffer (`flush.fill`), which leaves the
L2 full of dirty lines (50 MB on the H100, 60 MB on the H200).  A layer that
then reads its weights must write those lines back to make room, so up to one
L2 of writes can share DRAM with its reads: at T = 1 that could add about as
much as the floor itself (qwen3-30b-a3b reads 20 MB).  And docs/performance.md
step 32 measured an empty one-kernel graph at 11.1 us in these terms (H100).

This probe times, in the bench's own terms (CUDA-graph replays, events on the
stream, medians), one kernel that streams S bytes with 16-byte `.nc` loads
(XOR of every word, so every load must land; 4 loads a thread in flight, 8
CTAs of 256 threads an SM), and the empty graph (the same kernel, one CTA, no
bytes), after each of four flushes:
    fill        the bench's: a 256 MB write (dirty lines left in L2)
    read        one launch of the stream kernel over another 256 MB: the L2
                then holds clean lines of unrelated data
    fill+read   the write, then the read (the dirty lines drained before timing)
    none        nothing (a buffer smaller than the L2 is then read from it)
S in 8, 20, 60, 150, 400 MB (each its own buffer, none of them the flush's).
Per row: us, and S over us in TB/s.  fill minus fill+read is what the dirty
lines cost a read of S; a small S near the floor only without them would
say the bench's small-T rows carry a write-back the floor does not count.

    python tools/probe_flush.py --compile   # no GPU: PTX, local ptxas
    python tools/probe_flush.py             # GPU: the table (under a minute)
"""
from __future__ import annotations

import os
import sys

import numpy as np
from numba import cuda, uint32

import probe_common

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pymoe.cuda.kernels.intrinsics import SIM  # noqa: E402
from pymoe.cuda.kernels.ptx import ld_g4, ld_nc4  # noqa: E402
from pymoe.cuda.launch import KernelSpec  # noqa: E402

ld4 = ld_g4 if SIM else ld_nc4    # the simulator models the coherent load only

THREADS = 256
CTAS_PER_SM = 8
UNROLL = 4                        # 16-byte loads a thread issues before it uses one
SIZES_MB = (8, 20, 60, 150, 400)
FLUSH_BYTES = 256 << 20
REPS = 40


def _stream(buf, nvec, out):
    """XOR of every word of buf's first nvec 16-byte vectors, a thread taking
    vectors tid, tid + stride, ... UNROLL at a time; thread tid's XOR to out[tid]."""
    tid = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    stride = cuda.gridDim.x * cuda.blockDim.x
    acc = uint32(0)
    i = tid
    while i + (UNROLL - 1) * stride < nvec:
        a0, a1, a2, a3 = ld4(buf, 4 * i)
        b0, b1, b2, b3 = ld4(buf, 4 * (i + stride))
        c0, c1, c2, c3 = ld4(buf, 4 * (i + 2 * stride))
        d0, d1, d2, d3 = ld4(buf, 4 * (i + 3 * stride))
        acc ^= (a0 ^ a1 ^ a2 ^ a3) ^ (b0 ^ b1 ^ b2 ^ b3) ^ (c0 ^ c1 ^ c2 ^ c3) \
            ^ (d0 ^ d1 ^ d2 ^ d3)
        i += UNROLL * stride
    while i < nvec:
        a0, a1, a2, a3 = ld4(buf, 4 * i)
        acc ^= a0 ^ a1 ^ a2 ^ a3
        i += stride
    out[tid] = acc


SPECS = {"flush_stream": KernelSpec(_stream, ("u4[]", "i8", "u4[]"), THREADS)}


def compile_only() -> int:
    import re
    for name, _ptx, sass in probe_common.compiled(SPECS):
        print(f"  {name}: LDG.E.128.CONSTANT {len(re.findall(r'LDG.E.128.CONSTANT', sass))}"
              f" (static)")
    return 0


def run_gpu() -> int:
    import cupy as cp
    from pymoe.bench import device_copy_bandwidth
    from pymoe.cuda.launch import load_spec
    k = load_spec(SPECS["flush_stream"])
    bw = device_copy_bandwidth()
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grid = sms * CTAS_PER_SM
    s = cp.cuda.Stream(non_blocking=True)
    fill_buf = cp.empty(FLUSH_BYTES, cp.uint8)
    read_buf = cp.arange(FLUSH_BYTES // 4, dtype=cp.uint32)
    out = cp.empty(grid * THREADS, cp.uint32)
    print(f"copy bandwidth {bw / 1e12:.2f} TB/s (read + write); {sms} SMs, grid {grid}")

    def stream(buf, nbytes, g=grid):
        return k.prepare((g,), (buf, nbytes // 16, out))

    read_flush = stream(read_buf, FLUSH_BYTES)

    def flush(kind, r):
        if kind in ("fill", "fill+read"):
            with s:
                fill_buf.fill(r & 0xFF)
        if kind in ("read", "fill+read"):
            read_flush(s)

    def timed(launch, kind):
        """Median us of graph replays of ``launch`` after flush ``kind``."""
        return probe_common.graph_median_us(s, [launch], lambda r: flush(kind, r), REPS)

    kinds = ("fill", "read", "fill+read", "none")
    print(f"{'what':18s} " + " ".join(f"{x:>15s}" for x in kinds), flush=True)
    empty = stream(out, 0, 1)
    print(f"{'empty graph':18s} " + " ".join(f"{timed(empty, x):12.1f} us" for x in kinds),
          flush=True)
    for mb in SIZES_MB:
        nbytes = mb << 20
        buf = cp.arange(nbytes // 4, dtype=cp.uint32) * cp.uint32(2654435761)
        launch = stream(buf, nbytes)
        cp.cuda.Device().synchronize()    # buf was made on the default stream, not s
        launch(s)
        s.synchronize()
        want = int(np.bitwise_xor.reduce(cp.asnumpy(buf)))    # on the host: plain NumPy
        got = int(np.bitwise_xor.reduce(cp.asnumpy(out)))
        assert got == want, f"{mb} MB: the stream's XOR {got:#x}, expected {want:#x}"
        cells = []
        for x in kinds:
            us = timed(launch, x)
            cells.append(f"{us:7.1f} {nbytes / us / 1e6:4.2f}")
        print(f"{f'{mb} MB (floor {nbytes / bw * 1e6:.1f})':18s} " + " ".join(cells),
              flush=True)
        del buf
    return 0


if __name__ == "__main__":
    sys.exit(probe_common.main(__doc__, compile_only, run_gpu))
