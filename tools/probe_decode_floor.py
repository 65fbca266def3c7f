"""Probe: what the decode regime's T = 1 layer could cost at best, in the
bench's own terms (CUDA-graph replays, L2 flushed before each, medians): the
graph's entry, a launch boundary, and streaming the layer's expert bytes in one
kernel or in two (fc1's, then fc2's), with no math at all.

docs/performance.md step 30 fits main's decode times over T = 1, 2, 4 as
t = a + b x floor: a = 15 us (qwen3-30b-a3b) / 22 us (gpt-oss-120b) that do not
scale with the bytes, b = 2.1 - 2.7.  This probe splits that into what the
graph and the launches cost and what streaming the bytes costs with each CTA's
share in flight through a cp.async ring, for the two shapes a T = 1 layer can
take:
    split   two launches like today's decode_fc1 / decode_fc2 (the second one a
            programmatic dependent that copies its first ring stages before
            griddepcontrol.wait), then a one-CTA "combine" launch (dependent);
    fused   one launch of CTAs (expert, I-slice of 64; "half": of 32, each CTA
            4 w13 row tiles and 8 bytes a lane of each w2 tile): each reads its slice's
            gate / up rows of w13 (8 row tiles x H / 64 k-tiles, contiguous in
            layout v2) and then the slice's k-tile of every w2 row tile (512
            bytes strided by I / 64 tiles), the shape of a kernel that computes
            its slice of the intermediate and multiplies it into fc2 at once,
            leaving fp32 partials a (dependent) combine sums in a fixed order;
    empty   one launch of one CTA: the graph's entry and exit alone;
    one     the one-CTA launch twice and three times: what a boundary costs.
Scales are modelled as 1/16 more bytes (MXFP4: one E8M0 a 32 values), read
contiguously.  Each warp of 8 copies 512-byte tiles w, w + 8, ... of its CTA's
list into a ring of DEPTH slots (16 bytes a lane, cp.async.cg), waits for the
oldest and XORs one word of it (so the copies must land), and writes one word
at the end; DEPTH 8 / 16 / 24 (32 / 64 / 96 KB of dynamic shared memory a CTA).

    python tools/probe_decode_floor.py --compile   # no GPU: PTX, local ptxas
    python tools/probe_decode_floor.py             # GPU: the table (about 1 min)
"""
from __future__ import annotations

import os
import sys

import numpy as np
from numba import cuda, uint32, uint64

import probe_common

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pymoe.cuda.kernels.intrinsics import SIM  # noqa: E402
from pymoe.cuda.kernels.ptx import (cp_async8_g, cp_async16_g, cp_commit, gaddr, make_cp_wait,  # noqa: E402
                                    lds1, pdl_trigger, pdl_wait, smem_u32)
from pymoe.cuda.launch import KernelSpec  # noqa: E402

WARPS = 8
THREADS = 32 * WARPS
TILE_WORDS = 128                  # 512 bytes: a v2 tile (16 rows x 64 k of FP4)
SLICE_TILES = 8                   # w13 row tiles a 64-column I-slice (gate + up)
DEPTHS = (8, 16, 24)
# (name, experts E, active experts at T = 1 (top-k), H, I)
LAYERS = (("qwen3-30b-a3b", 128, 8, 2048, 768),
          ("gpt-oss-120b", 128, 4, 2880, 2880),
          ("deepseek-v3", 256, 8, 7168, 2048))
REPS = 60


def _make(depth: int):
    wait_old = make_cp_wait(depth - 1)
    # the ring: dynamic shared memory on the GPU; a static array in the simulator,
    # whose fake shared addresses (ptx.smem_u32) are keyed by the array object
    # (there a copy lands in the thread's own table, which lds1 reads)
    ring_n = WARPS * depth * 128 if SIM else 0
    wait0 = make_cp_wait(0)

    @cuda.jit(device=True, inline=True)
    def tile_word(j, n1, n1s, n2, n2s, e, s, h, sub, kt1, ntr1, ntr2, kt2, w1_scale0,
                  w2_scale0):
        """(word offset, which buffer) of the CTA's j-th tile: its n1 w13 slice
        tiles, their n1s scale tiles (w1), its n2 w2 tiles, their n2s scale tiles
        (w2); the scales of expert e's slice (s, h) sit past every expert's
        weights.  A w2 tile of a half slice (sub 2) is its half h of the words."""
        if j < n1:                                   # w13: the slice's row tiles, all k
            return uint64(((e * ntr1 + s * SLICE_TILES + h * (SLICE_TILES // sub)) * kt1
                           + j) * TILE_WORDS), 0
        j -= n1
        q = (e * kt2 + s) * sub + h
        if j < n1s:
            return uint64(w1_scale0 + (q * n1s + j) * TILE_WORDS), 0
        j -= n1s
        if j < n2:                                   # w2: k-tile s of row tile j
            return uint64(((e * ntr2 + j) * kt2 + s) * TILE_WORDS + h * (4 // sub)), sub
        j -= n2
        return uint64(w2_scale0 + (q * n2s + j) * TILE_WORDS), 1

    def kernel(w1, w2, ex, nexp, nsl, sub, kt1, ntr1, ntr2, kt2, parts, dep, out):
        """parts: 1 = w13 share, 2 = w2 share, 3 = both, 0 = nothing (a one-CTA
        launch); dep: a programmatic dependent (waits after its first copies);
        sub: 1 = a CTA an I-slice of 64, 2 = a CTA a half slice (4 w13 row tiles,
        8 bytes a lane of each w2 tile)."""
        pdl_trigger()
        tid = cuda.threadIdx.x
        warp = tid // 32
        lane = tid % 32
        c = cuda.blockIdx.x
        e = int(ex[c // (nsl * sub)])
        s = (c // sub) % nsl
        h = c % sub
        ring = cuda.shared.array(ring_n, uint32)
        base = smem_u32(ring) + uint32((warp * depth * 32 + lane) * 16)
        n1 = SLICE_TILES // sub * kt1 if parts & 1 else 0
        n1s = (n1 + 15) // 16
        n2 = ntr2 if parts & 2 else 0
        n2s = (n2 + 16 * sub - 1) // (16 * sub)
        total = n1 + n1s + n2 + n2s
        w1_scale0 = nexp * ntr1 * kt1 * TILE_WORDS          # past every expert's w13
        w2_scale0 = nexp * ntr2 * kt2 * TILE_WORDS
        acc = uint32(0)
        mine = (total - warp + WARPS - 1) // WARPS if warp < total else 0
        waited = dep == 0
        for i in range(mine + depth - 1):
            if i < mine:
                j = warp + i * WARPS
                off, which = tile_word(j, n1, n1s, n2, n2s, e, s, h, sub, kt1, ntr1, ntr2,
                                       kt2, w1_scale0, w2_scale0)
                slot = base + uint32((i % depth) * 32 * 16)
                if which == 0:
                    cp_async16_g(slot, gaddr(w1, off + lane * 4))
                elif which == 1:
                    cp_async16_g(slot, gaddr(w2, off + lane * 4))
                else:
                    cp_async8_g(slot, gaddr(w2, off + lane * 4))
            cp_commit()
            if i >= depth - 1:
                if not waited:
                    pdl_wait()
                    waited = True
                wait_old()
                q = i - (depth - 1)
                acc ^= lds1(base + uint32((q % depth) * 32 * 16))
        wait0()
        if not waited:
            pdl_wait()
        out[c * THREADS + tid] = acc

    return KernelSpec(kernel, ("u4[]", "u4[]", "i4[]", "i8", "i8", "i8", "i8", "i8", "i8",
                               "i8", "i8", "i8", "u4[]"), THREADS,
                      dyn_smem=0 if SIM else WARPS * depth * 512)


SPECS = {f"decode_floor_d{d}": _make(d) for d in DEPTHS}


def compile_only() -> int:
    import re
    for name, _ptx, sass in probe_common.compiled(SPECS):
        print(f"  {name}: LDGSTS {len(re.findall('LDGSTS', sass))} (static)")
    return 0


def run_gpu() -> int:
    import cupy as cp
    from pymoe.bench import L2_FLUSH_BYTES, device_copy_bandwidth
    from pymoe.cuda.launch import load_spec
    ks = {d: load_spec(SPECS[f"decode_floor_d{d}"]) for d in DEPTHS}
    bw = device_copy_bandwidth()
    rng = np.random.default_rng(0)
    s = cp.cuda.Stream(non_blocking=True)
    flush = cp.empty(L2_FLUSH_BYTES, cp.uint8)
    out = cp.empty(1 << 20, cp.uint32)
    print(f"copy bandwidth {bw / 1e12:.2f} TB/s (read + write)")
    print(f"{'layer':16s} {'what':32s} {'us':>8s} {'floor us':>9s}", flush=True)

    def row(name, what, us, floor):
        """Print a row as soon as it is measured (a fault then shows where it struck)."""
        print(f"{name:16s} {what:32s} {us:8.1f} {floor:9.1f}", flush=True)

    def refill(r):
        with s:
            flush.fill(r & 0xFF)

    def timed(launches):
        """Median us of graph replays of ``launches`` (callables taking the stream)."""
        return probe_common.graph_median_us(s, launches, refill, REPS)

    k8 = ks[DEPTHS[0]]
    one = cp.zeros(1, cp.int32)

    def tiny(dep):
        def f(st):
            k8.prepare((1,), (out, out, one, 1, 1, 1, 1, 1, 1, 1, 0, int(dep), out),
                       dependent=dep)(st)
        return f
    row("-", "empty (1 launch)", timed([tiny(False)]), float("nan"))
    row("-", "2 launches", timed([tiny(False), tiny(False)]), float("nan"))
    row("-", "3 launches", timed([tiny(False)] * 3), float("nan"))
    row("-", "3 launches, 2 dependent", timed([tiny(False), tiny(True), tiny(True)]),
        float("nan"))
    for name, E, act, H, I in LAYERS:
        kt1, ntr1, ntr2, kt2 = H // 64, 2 * I // 16, H // 16, I // 64
        # every expert's weights and scale tiles (4 GB + 2 GB for deepseek-v3), made
        # on the device: distinct words (a multiplicative hash of the index)
        w1 = cp.arange(ntr1 * kt1 * TILE_WORDS * (E + E // 16 + 2), dtype=cp.uint32)
        w1 *= cp.uint32(2654435761)
        w2 = cp.arange(ntr2 * kt2 * TILE_WORDS * (E + E // 16 + 2), dtype=cp.uint32)
        w2 *= cp.uint32(2246822519)
        ex = cp.asarray(rng.choice(E, act, replace=False).astype(np.int32))
        nbytes = act * (ntr1 * kt1 + ntr2 * kt2) * 512 * 17 / 16
        floor = nbytes / bw * 1e6                 # as the bench: bytes over the copy rate
        grid = act * kt2
        for d in DEPTHS:
            k = ks[d]

            def launch(parts, dep, sub=1, k=k):
                def f(st):
                    k.prepare((grid * sub,), (w1, w2, ex, E, kt2, sub, kt1, ntr1, ntr2, kt2,
                                              parts, int(dep), out), dependent=dep)(st)
                return f
            row(name, f"fused d{d} ({grid} CTAs)",
                timed([launch(3, False)]), floor)
            row(name, f"fused d{d} + combine",
                timed([launch(3, False), tiny(True)]), floor)
            row(name, f"fused half d{d} ({2 * grid} CTAs)",
                timed([launch(3, False, 2)]), floor)
            row(name, f"fused half d{d} + combine",
                timed([launch(3, False, 2), tiny(True)]), floor)
            row(name, f"split d{d} + combine",
                timed([launch(1, False), launch(2, True), tiny(True)]), floor)
            row(name, f"split d{d}, no PDL",
                timed([launch(1, False), launch(2, False), tiny(False)]), floor)
        del w1, w2
    return 0


if __name__ == "__main__":
    sys.exit(probe_common.main(__doc__, compile_only, run_gpu))
