"""FP4 x 16-bit building blocks shared by the CUDA kernels.

Shape legend: E experts, N weight rows of a projection (F for w13, H for w2),
K its reduction dim (H for w13, I for w2), Kp = K padded to 32, g the scale
group (32 MXFP4, 16 NVFP4), R = T*k routes, B block size.

Prepared weights are read as uint32 words: row n of expert e starts at word
(e*N + n) * Kp/8 and its 16-byte chunk c (32 FP4 values, word q holding values
c*32 + q*8 .. +7, value i in bits 4i..4i+3) is scaled by scale byte
(e*N + n) * Kp/g + c (MXFP4) or + 2c + q//2 (NVFP4).  ``lut`` maps a scale byte
to its value / 4 (``fp4_quarters`` returns 4x the FP4 value, exactly).

Everything here uses only shared memory and __syncthreads, so the simulator
runs it.  Speed is the next issue's: this is the correct, tiled baseline.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, int64

from .. import env, formats
from ..geometry import LaunchKey, fc1_rows, is_gated
from .intrinsics import SIM, act_code, fp4_quarters, make_act_io, sigmoid

__all__ = ["scale_lut", "Shape", "shape_of", "make_chunk_dot", "fill_tables",
           "make_fc1_epilogue", "make_fc2_epilogue", "make_row_map", "tile_roles",
           "gemm_variant", "activation_code", "activation_arg", "make_tile_gemm", "ROWS",
           "LANES", "THREADS", "TILE_ROWS", "SROW"]

THREADS = 128
ROWS, LANES = 8, 16          # GEMV kernels: 8 weight rows at a time x 16 K-lanes
TILE_ROWS = 64               # block GEMM: weight rows per CTA (gated: 32 gate + 32 up)
# Shared-memory row stride of the [rows, 32] chunk tiles: 33 words, so the 32
# threads writing one K column (or the 16 reading one) hit 32 different banks
# (a stride of 32 made every one of those accesses a 16-32-way bank conflict).
SROW = 33


def scale_lut(fmt: str) -> np.ndarray:
    """float32[256]: scale byte -> its value / 4 (the FP4 decode yields 4x)."""
    b = np.arange(256, dtype=np.uint8)
    v = formats.decode_e8m0(b) if fmt == "mxfp4" else formats.decode_e4m3(b)
    return (np.asarray(v, np.float64) / 4).astype(np.float32)


class Shape:
    """Compile-time sizes of one projection of a LaunchKey."""

    def __init__(self, key: LaunchKey, which: str):
        h, i = key.hidden_size, key.intermediate_size
        self.nv = key.format == "nvfp4"
        self.group = 16 if self.nv else 32
        if which == "w13":
            self.rows, self.k = fc1_rows(key.activation, i), h
        else:
            self.rows, self.k = h, i
        self.kp = -(-self.k // 32) * 32
        self.words = self.kp // 8                 # uint32 words per row
        self.chunks = self.kp // 32               # 16-byte chunks per row
        self.sgroups = self.kp // self.group      # scale bytes per row


def shape_of(key: LaunchKey, which: str) -> Shape:
    return Shape(key, which)


@cuda.jit(device=True, inline=True)
def fill_tables(f4, sl, lut):
    """Shared tables, filled once per CTA (call before a __syncthreads):
    f4[16]: code -> 4x its E2M1 value (16 entries in 16 banks: a warp's lookups
    never conflict); sl[256]: scale byte -> value/4, copied from the global
    ``lut`` so the scale lookup costs a shared-memory, not a global, latency."""
    tid = cuda.threadIdx.x
    if tid < 16:
        f4[tid] = fp4_quarters(tid)
    for i in range(tid, 256, THREADS):
        sl[i] = lut[i]


def make_chunk_dot(key: LaunchKey, sh: Shape):
    """dot(w, wbase, s, sbase, lut, f4, xs, xbase) -> float32: one 16-byte weight
    chunk (32 FP4 values) against 32 fp32 activations staged in shared memory
    at xs[xbase:] (zero past the logical K, so the padded tail adds 0)."""
    nv = sh.nv

    @cuda.jit(device=True, inline=True)
    def dot(w, wbase, s, sbase, lut, f4, xs, xbase):
        acc = float32(0.0)
        for q in range(4):
            word = int64(w[wbase + q])
            part = float32(0.0)
            for i in range(8):
                part += f4[(word >> (4 * i)) & 15] * xs[xbase + q * 8 + i]
            if nv:
                acc += part * lut[s[sbase + (q >> 1)]]
            else:
                acc += part
        if not nv:
            acc *= lut[s[sbase]]
        return acc

    return dot


def make_row_map(gated: bool, half: int, inter: int):
    """row_of(n0, lr) -> (n, row): local weight row lr of a tile whose outputs
    start at column n0 -> its output column n and its row in the expert's
    matrix.  A gated w13 tile holds ``half`` gate rows (row n), then ``half`` up
    rows (row I + n)."""
    @cuda.jit(device=True, inline=True)
    def row_of(n0, lr):
        if gated:
            n = n0 + (lr % half)
            return n, n + (lr // half) * inter
        n = n0 + lr
        return n, n

    return row_of


def tile_roles(key: LaunchKey, gather_tokens: bool) -> tuple:
    """(on_input, row_of, nout) of a block GEMM: fc1 (gather_tokens) may scale
    its inputs by the router weight and maps gated rows; its outputs are I
    columns, fc2's are H."""
    on_input = key.router_on_input and gather_tokens
    row_of = make_row_map(gather_tokens and is_gated(key.activation), TILE_ROWS // 2,
                          key.intermediate_size)
    nout = key.intermediate_size if gather_tokens else key.hidden_size
    return on_input, row_of, nout


def make_fc2_epilogue(key: LaunchKey):
    """epilogue(h, e, n, r, tw, g2, b2) -> float32: the down projection's output
    column n of route r (expert e) with global scale, bias and the router weight
    (unless it went on the input), as fc2 and decode_fc2 both finish."""
    nv = key.format == "nvfp4"
    bias = key.has_bias
    on_input = key.router_on_input
    hid = key.hidden_size

    @cuda.jit(device=True, inline=True)
    def epilogue(h, e, n, r, tw, g2, b2):
        if nv:
            h *= g2[e]
        if bias:
            h += b2[e * hid + n]
        if not on_input:
            h *= tw[r]
        return h

    return epilogue


def make_fc1_epilogue(key: LaunchKey):
    """act(gate, up) (or act(h) for relu2) with global scale and bias: float32."""
    gated = is_gated(key.activation)
    nv = key.format == "nvfp4"
    bias = key.has_bias
    inter = key.intermediate_size
    f = fc1_rows(key.activation, inter)
    act = key.activation
    lim = float32(0.0 if key.swiglu_limit is None else key.swiglu_limit)
    has_lim = key.swiglu_limit is not None
    alpha = float32(0.0 if key.swiglu_alpha is None else key.swiglu_alpha)

    @cuda.jit(device=True, inline=True)
    def epilogue(gate, up, e, n, g13, b13):
        if nv:
            gate *= g13[e * 2]
            if gated:
                up *= g13[e * 2 + 1]
        if bias:
            gate += b13[e * f + n]
            if gated:
                up += b13[e * f + inter + n]
        if not gated:
            v = gate if gate > 0 else float32(0.0)
            return v * v
        if has_lim:
            gate = gate if gate < lim else lim
            up = up if up < lim else lim
            up = up if up > -lim else -lim
        if act == "silu":
            return gate * sigmoid(gate) * up
        return gate * sigmoid(alpha * gate) * (up + float32(1.0))

    return epilogue


def gemm_variant() -> str:
    """'mma' (tensor cores, pymoe/cuda/mma.py) or 'fma' (the plain GEMM below).
    The simulator cannot run inline PTX, so it always runs 'fma'; on a GPU
    PYMOE_GEMM picks (default 'mma').  Part of every kernel cache key."""
    if SIM:
        return "fma"
    v = env.get_str("PYMOE_GEMM", "mma")
    if v not in ("mma", "fma"):
        raise ValueError(f"PYMOE_GEMM={v!r}: expected 'mma' or 'fma'")
    return v


def activation_code(dtype: str) -> str:
    """ABI code of the activations a block GEMM reads: uint32 words (two 16-bit
    values each) for the tensor-core GEMM, else the 16-bit array itself."""
    return "u4[]" if gemm_variant() == "mma" else act_code(dtype)


def activation_arg(kernel, a):
    """``a`` as the kernel's first argument wants it (a uint32 view for 'u4[]')."""
    return a.reshape(-1).view(np.uint32) if kernel.spec.argtypes[0] == "u4[]" else a


def make_tile_gemm(key: LaunchKey, sh: Shape, block: int, gather_tokens: bool):
    """gemm(acc_tile, blk, e, n0, a, w, s, lut, pri, n_routes, top_k, tw)

    One CTA: the B activation rows of block ``blk`` (gather_tokens: x rows of
    the routes in packed_route_indices; else the block's own slot rows of the
    intermediate) times TILE_ROWS weight rows of expert e starting at output n0
    (gated w13: 32 gate rows n0.. and 32 up rows I+n0..), fp32, into
    acc_tile[B * TILE_ROWS] (shared).  Rows past the logical extent are 0.
    With gemm_variant() 'mma' this is the tensor-core twin (pymoe/cuda/mma.py)."""
    if gemm_variant() == "mma":
        from .mma import make_mma_tile_gemm
        return make_mma_tile_gemm(key, sh, block, gather_tokens)
    load, _, round_ = make_act_io(key.dtype)
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
    def gemm(acc_tile, blk, e, n0, a, w, s, lut, pri, n_routes, top_k, tw):
        tid = cuda.threadIdx.x
        xa = cuda.shared.array(xa_n, float32)            # activations [B, 32] (stride 33)
        wd = cuda.shared.array(wd_n, float32)            # decoded weights [64, 32]
        f4 = cuda.shared.array(16, float32)
        sl = cuda.shared.array(256, float32)
        fill_tables(f4, sl, lut)
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
