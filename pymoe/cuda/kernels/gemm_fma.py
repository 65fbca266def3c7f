"""The block GEMM on CUDA cores (fp32 FMA, FP4 decoded into shared memory): the
plain twin of gemm_mma, and the one Numba's simulator runs (no inline PTX).

Shape legend: E experts, N weight rows, K reduction dim, B block (routes).
"""
from __future__ import annotations

from numba import cuda, float32, int64

from ...geometry import LaunchKey
from .common import SROW, THREADS, TILE_ROWS, Shape, make_fill_tables, tile_roles
from .intrinsics import make_act_io

__all__ = ["make_tile_gemm"]


def make_tile_gemm(key: LaunchKey, sh: Shape, block: int, gather_tokens: bool):
    """gemm(acc_tile, blk, e, n0, a, w, s, pri, n_routes, top_k, tw)

    One CTA: the B activation rows of block ``blk`` (gather_tokens: x rows of
    the routes in packed_route_indices; else the block's own slot rows of the
    intermediate) times TILE_ROWS weight rows of expert e starting at output n0
    (gated w13: 32 gate rows n0.. and 32 up rows I+n0..), fp32, into
    acc_tile[B * TILE_ROWS] (shared).  Rows past the logical extent are 0."""
    load, _, round_ = make_act_io(key.dtype)
    fill_tables = make_fill_tables(key.format)
    nv = sh.nv
    on_input, row_of, nout = tile_roles(key, gather_tokens)
    kdim, rows, words, chunks, sgroups = sh.k, sh.rows, sh.words, sh.chunks, sh.sgroups
    b = block
    mt = b // 8                                    # rows of the block per thread
    nt = TILE_ROWS // 16                           # weight rows per thread
    hid = key.hidden_size
    inter = key.intermediate_size
    acc_n = mt * nt
    xa_n, wd_n = b * SROW, TILE_ROWS * SROW

    @cuda.jit(device=True, inline=True)
    def gemm(acc_tile, blk, e, n0, a, w, s, pri, n_routes, top_k, tw):
        tid = cuda.threadIdx.x
        xa = cuda.shared.array(xa_n, float32)            # activations [B, 32] (stride 33)
        wd = cuda.shared.array(wd_n, float32)            # decoded weights [64, 32]
        f4 = cuda.shared.array(16, float32)
        sl = cuda.shared.array(256, float32)
        fill_tables(f4, sl, THREADS)
        cuda.syncthreads()
        mg = tid // 16
        ng = tid % 16
        acc = cuda.local.array(acc_n, float32)
        for i in range(acc_n):
            acc[i] = float32(0.0)
        for c in range(chunks):
            k0 = c * 32
            for idx in range(tid, b * 32, THREADS):          # activations -> xa[B, 32]
                m = idx // 32
                kk = idx % 32
                v = float32(0.0)
                slot = blk * b + m
                if k0 + kk < kdim:
                    if gather_tokens:
                        r = int64(pri[slot])
                        if r < n_routes:
                            v = load(a, (r // top_k) * hid + k0 + kk)
                            if on_input:
                                v = round_(v * tw[r])
                    else:
                        v = load(a, slot * inter + k0 + kk)
                xa[m * SROW + kk] = v
            if tid < TILE_ROWS:                               # weights -> wd[64, 32]
                lr = tid
                n, row = row_of(n0, lr)
                if n < nout:
                    wb = (e * rows + row) * words + c * 4
                    sb = (e * rows + row) * sgroups
                    for q in range(4):
                        word = int64(w[wb + q])
                        if nv:
                            sc = sl[s[sb + 2 * c + (q >> 1)]]
                        else:
                            sc = sl[s[sb + c]]
                        for i in range(8):
                            wd[lr * SROW + q * 8 + i] = f4[(word >> (4 * i)) & 15] * sc
                else:
                    for i in range(32):
                        wd[lr * SROW + i] = float32(0.0)
            cuda.syncthreads()
            for kk in range(32):                              # thread: rows mg*mt+i, ng+16j
                for i in range(mt):
                    av = xa[(mg * mt + i) * SROW + kk]
                    for j in range(nt):
                        acc[i * nt + j] += av * wd[(ng + 16 * j) * SROW + kk]
            cuda.syncthreads()
        for i in range(mt):
            for j in range(nt):
                acc_tile[(mg * mt + i) * TILE_ROWS + ng + 16 * j] = acc[i * nt + j]
        cuda.syncthreads()

    return gemm
