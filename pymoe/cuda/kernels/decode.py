"""Decode kernels: small T, no route packing (launched by pymoe/cuda/decode.py).

Shape legend: T tokens, k top-k, R = T*k (r = t*k + j), E, H, I, F rows of w13,
TN1 / TN2 = the keys' tile_n (geometry.DECODE_FC1_TILE_N / DECODE_FC2_TILE_N).

    decode_fc1  grid (ceil(I/TN1), R): intermediate[r, n0:n0+TN1] from x[r // k]
                and expert topk_ids[r] (zeros for an invalid route)
    decode_fc2  grid (ceil(H/TN2), T): y[t, n0:n0+TN2] = round(sum over valid j,
                in j order, of w[r] * (W2[e_r] @ a_r * g2 + b2))
The activation row is staged in shared memory as fp32, KSTAGE values at a time.
CTA = ROWS weight rows x LANES K-lanes (8 x 16); each lane takes 16-byte chunks (32 FP4 values)
lane, lane+16, ...; partial sums meet in shared memory in a fixed order, so the
result is deterministic.
"""
from __future__ import annotations

from numba import cuda, float32

from ...geometry import (DECODE_KSTAGE, DECODE_LANES, DECODE_ROWS, DECODE_THREADS,
                         LaunchKey, is_gated)
from .common import (fill_tables, make_chunk_dot, make_fc1_epilogue, make_fc2_epilogue,
                     make_row_map, shape_of)
from .intrinsics import act_code, make_act_io
from .routes import local_expert
from .spec import KernelSpec

__all__ = ["build_fc1", "build_fc2"]

THREADS, ROWS, LANES, KSTAGE = DECODE_THREADS, DECODE_ROWS, DECODE_LANES, DECODE_KSTAGE


def _make_row_pass(key: LaunchKey, sh, on_input: bool):
    """row_pass(p, lr, base, live, a, abase, mult, w, s, sl, f4, xs, red, res):
    one pass of a decode CTA.  Stages the activation row a[abase : abase+K] in
    shared memory as fp32 (KSTAGE at a time; once for all passes when K fits,
    x*w rounded to the dtype first when the router weight goes on the input),
    lets the 16 K-lanes of each of the 8 row-slots take 16-byte chunks lane,
    lane+16, ... of weight row ``base`` (skipped unless ``live``), and sums the
    lanes in a fixed order into res[lr]."""
    dot = make_chunk_dot(key, sh)
    load, _, round_ = make_act_io(key.dtype)
    kdim, kp, words, chunks, sg = sh.k, sh.kp, sh.words, sh.chunks, sh.sgroups
    spc = 2 if sh.nv else 1
    stage_n = min(kp, KSTAGE)
    restage = kp > stage_n          # K beyond one stage: re-stage for every pass

    @cuda.jit(device=True, inline=True)
    def row_pass(p, lr, base, live, a, abase, mult, w, s, sl, f4, xs, red, res):
        tid = cuda.threadIdx.x
        slot = tid // LANES
        lane = tid % LANES
        acc = float32(0.0)
        for k0 in range(0, kp, stage_n):
            if restage or p == 0:
                cuda.syncthreads()
                for i in range(tid, stage_n, THREADS):
                    v = float32(0.0)
                    if k0 + i < kdim:
                        v = load(a, abase + k0 + i)
                        if on_input:
                            v = round_(v * mult)
                    xs[i] = v
                cuda.syncthreads()
            if live:
                c_end = min(chunks, (k0 + stage_n) // 32)
                for c in range(k0 // 32 + lane, c_end, 2 * LANES):
                    # two chunks per step, the second clamped in range, so both
                    # chunks' loads are unconditional and can be in flight together
                    c2 = min(c + LANES, c_end - 1)
                    v1 = dot(w, base * words + c * 4, s, base * sg + c * spc,
                             sl, f4, xs, c * 32 - k0)
                    v2 = dot(w, base * words + c2 * 4, s, base * sg + c2 * spc,
                             sl, f4, xs, c2 * 32 - k0)
                    acc += v1
                    if c + LANES < c_end:
                        acc += v2
        red[tid] = acc
        cuda.syncthreads()
        if lane == 0:
            v = float32(0.0)
            for i in range(LANES):
                v += red[slot * LANES + i]
            res[lr] = v
        cuda.syncthreads()

    return row_pass, stage_n


def build_fc1(key: LaunchKey) -> KernelSpec:
    sh = shape_of(key, "w13")
    TN1 = key.tile_n
    gated = is_gated(key.activation)
    nrows = 2 * TN1 if gated else TN1
    npass = nrows // ROWS
    row_pass, stage_n = _make_row_pass(key, sh, key.router_on_input)
    epi = make_fc1_epilogue(key)
    _, store, _ = make_act_io(key.dtype)
    hid, inter, rows = key.hidden_size, key.intermediate_size, sh.rows
    row_of = make_row_map(gated, TN1, inter)
    res_n = 2 * TN1

    def kernel(x, ids, stride, top_k, emap, has_map, num_ids, tw, w, s, lut, g13, b13,
               out):
        tid = cuda.threadIdx.x
        n0 = cuda.blockIdx.x * TN1
        r = cuda.blockIdx.y
        e = local_expert(ids, stride, r, emap, has_map, num_ids)
        if e < 0:
            if tid < TN1 and n0 + tid < inter:
                store(out, r * inter + n0 + tid, float32(0.0))
            return
        red = cuda.shared.array(THREADS, float32)
        res = cuda.shared.array(res_n, float32)
        xs = cuda.shared.array(stage_n, float32)
        f4 = cuda.shared.array(16, float32)
        sl = cuda.shared.array(256, float32)
        fill_tables(f4, sl, lut, THREADS)
        t = r // top_k
        slot = tid // LANES
        for p in range(npass):
            lr = p * ROWS + slot
            n, row = row_of(n0, lr)
            row_pass(p, lr, e * rows + row, n < inter, x, t * hid, tw[r], w, s, sl, f4, xs,
                     red, res)
        n = n0 + tid
        if tid < TN1 and n < inter:
            up = res[TN1 + tid] if gated else float32(0.0)
            store(out, r * inter + n, epi(res[tid], up, e, n, g13, b13))

    a = act_code(key.dtype)
    return KernelSpec(kernel, (a, "i4[]", "i8", "i8", "i4[]", "i8", "i8", "f4[]", "u4[]",
                               "u1[]", "f4[]", "f4[]", "f4[]", a), THREADS)


def build_fc2(key: LaunchKey) -> KernelSpec:
    sh = shape_of(key, "w2")
    TN2 = key.tile_n
    npass = TN2 // ROWS
    row_pass, stage_n = _make_row_pass(key, sh, False)
    _, store, _ = make_act_io(key.dtype)
    hid, inter = key.hidden_size, key.intermediate_size
    epi = make_fc2_epilogue(key)

    def kernel(a, ids, stride, top_k, emap, has_map, num_ids, tw, w, s, lut, g2, b2, out):
        tid = cuda.threadIdx.x
        n0 = cuda.blockIdx.x * TN2
        t = cuda.blockIdx.y
        red = cuda.shared.array(THREADS, float32)
        res = cuda.shared.array(TN2, float32)
        xs = cuda.shared.array(stage_n, float32)
        f4 = cuda.shared.array(16, float32)
        sl = cuda.shared.array(256, float32)
        fill_tables(f4, sl, lut, THREADS)
        slot = tid // LANES
        y = float32(0.0)
        for j in range(top_k):
            r = t * top_k + j
            e = local_expert(ids, stride, r, emap, has_map, num_ids)
            if e >= 0:
                for p in range(npass):
                    n = n0 + p * ROWS + slot
                    row_pass(p, p * ROWS + slot, e * hid + n, n < hid, a, r * inter,
                             float32(1.0), w, s, sl, f4, xs, red, res)
                n = n0 + tid
                if tid < TN2 and n < hid:
                    y += epi(res[tid], e, n, r, tw, g2, b2)
                cuda.syncthreads()
        n = n0 + tid
        if tid < TN2 and n < hid:
            store(out, t * hid + n, y)

    c = act_code(key.dtype)
    return KernelSpec(kernel, (c, "i4[]", "i8", "i8", "i4[]", "i8", "i8", "f4[]", "u4[]",
                               "u1[]", "f4[]", "f4[]", "f4[]", c), THREADS)
