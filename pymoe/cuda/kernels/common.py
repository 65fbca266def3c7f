"""FP4 x 16-bit building blocks shared by the CUDA kernels: weight addressing
(Shape), scale tables, the block GEMM's row map, and the fc1 / fc2 epilogues.

Shape legend: E experts, N weight rows of a projection (F for w13, H for w2),
K its reduction dim (H for w13, I for w2), Kp = K padded to 32, g the scale
group (32 MXFP4, 16 NVFP4), R = T*k routes, B block size.

Prepared weights are read as uint32 words: row n of expert e starts at word
(e*N + n) * Kp/8 and its 16-byte chunk c (32 FP4 values, word q holding values
c*32 + q*8 .. +7, value i in bits 4i..4i+3) is scaled by scale byte
(e*N + n) * Kp/g + c (MXFP4) or + 2c + q//2 (NVFP4).  ``lut`` maps a scale byte
to its value / 4 (``fp4_quarters`` returns 4x the FP4 value, exactly).

Everything here uses only shared memory and __syncthreads, so the simulator
runs it.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, int64, uint32

from ...geometry import (GEMM_THREADS, GEMM_TILE_ROWS, LaunchKey, fc1_rows, gemm_block_ctas,
                         gemm_cta_block, is_gated, padded_k)
from .intrinsics import SIM, act_code, as_bits, as_float, f32_to_bf16, fp4_quarters, sigmoid
from .ptx import f2h, h2f, inf_nan_f16x2, lds4, min_u16x2, pack_bf16x2, pack_f16x2, prmt

# The epilogues read the accumulator tile 4 floats at a time (lds_f4): its
# shared array is 16-byte aligned (the simulator takes no alignment).
ACC_ALIGN = None if SIM else 16
# Columns a thread of an fc1 / fc2 epilogue takes at once (epilogue_vec): one
# 16-byte load of the tile a row, one 8-byte (fc1) / 16-byte (fc2) store.
EPI_VEC = 4

if SIM:
    def lds_f4(acc, base, i):
        """The 4 floats acc[i .. i + 3] (base: smem_u32(acc), unused here)."""
        return acc[i], acc[i + 1], acc[i + 2], acc[i + 3]
else:
    @cuda.jit(device=True, inline=True)
    def lds_f4(acc, base, i):
        """The 4 floats acc[i .. i + 3] of a shared float32 array whose shared
        address is base (i % 4 == 0, the array 16-byte aligned): one ld.shared.v4."""
        w0, w1, w2, w3 = lds4(base + uint32(4) * uint32(i))
        return as_float(w0), as_float(w1), as_float(w2), as_float(w3)


def epilogue_vec(cols: int, tn: int, nthr: int, *parts: int) -> int:
    """EPI_VEC when an epilogue can take EPI_VEC adjacent columns a thread: the
    output rows' length ``cols`` (aligned stores), the tile's columns tn and
    every part's column count (aligned tile loads) multiples of it, and the
    tile's column groups dividing the threads; else 1 (a column a thread)."""
    ok = all(v % EPI_VEC == 0 for v in (cols, tn) + parts) and nthr % (tn // EPI_VEC) == 0
    return EPI_VEC if ok else 1


def make_pack2(dtype: str):
    """pack2(lo, hi) -> uint32: two float32 rounded to ``dtype`` (nearest even),
    lo in the low half: one cvt for both."""
    return pack_bf16x2 if dtype == "bfloat16" else pack_f16x2

__all__ = ["make_scale_value", "Shape", "shape_of", "make_fill_tables",
           "make_fc1_epilogue", "make_fc1_epilogue_parts", "make_pair16", "make_round_pair",
           "make_fc2_epilogue", "make_fc2_epilogue_parts", "make_row_map", "tile_roles",
           "activation_code", "activation_arg", "SROW", "M126", "M14", "make_decoder",
           "make_cta_expert", "e8m0_rows", "f16_rows", "ACC_ALIGN", "EPI_VEC", "lds_f4",
           "epilogue_vec", "make_pack2"]

THREADS = GEMM_THREADS
TILE_ROWS = GEMM_TILE_ROWS
# Shared-memory row stride of the [rows, 32] chunk tiles: 33 words, so the 32
# threads writing one K column (or the 16 reading one) hit 32 different banks
# (a stride of 32 made every one of those accesses a 16-32-way bank conflict).
SROW = 33


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
        self.kp = padded_k(self.k)
        self.words = self.kp // 8                 # uint32 words per row
        self.chunks = self.kp // 32               # 16-byte chunks per row
        self.sgroups = self.kp // self.group      # scale bytes per row


def make_scale_value(fmt: str):
    """scale_value(i) -> float32: scale byte i's value (E8M0 for MXFP4, E4M3 for
    NVFP4), made from the byte with no memory access: bit for bit
    pymoe.formats.decode_e8m0 / decode_e4m3 of i, NaN as 0x7FC00000
    (tests/cuda/test_sim.py checks all 256 bytes).  Every kernel makes its
    scale values with it, so no CTA waits on a global load of a table."""
    if fmt == "mxfp4":
        @cuda.jit(device=True, inline=True)
        def scale_value(i):
            b = uint32(i) << uint32(23)               # 2^(i - 127), i = 1 .. 254
            if i == 0:
                b = uint32(0x00400000)                # 2^-127, subnormal
            elif i == 255:
                b = uint32(0x7FC00000)                # NaN
            return as_float(b)
    else:
        @cuda.jit(device=True, inline=True)
        def scale_value(i):
            m = uint32(i) & uint32(7)
            e = (uint32(i) >> uint32(3)) & uint32(15)
            if e == uint32(0):                        # subnormal: m x 2^-9
                v = float32(m) * float32(1.0 / 512.0)
            else:                                     # (1 + m/8) x 2^(e - 7)
                v = as_float(((e + uint32(120)) << uint32(23)) | (m << uint32(20)))
            if (uint32(i) & uint32(0x7F)) == uint32(0x7F):
                v = as_float(uint32(0x7FC00000))      # NaN (both signs)
            elif (uint32(i) & uint32(0x80)) != uint32(0):
                v = -v
            return v
    return scale_value


@cuda.jit(device=True, inline=True)
def e8m0_rows(w, j):
    """bf16 MXFP4, the scale folded into the weights' packed multiply (the v2
    GEMM, decode where geometry.decode_folds): the factors 2^(byte - 9) of
    group j for both rows in one bf16 pair, row g's (byte j of the scale word
    w) in the low half, row g + 8's (byte 2 + j) in the high; the multiplies
    take their half by operand selector (mul2_bf16_lo / _hi), and the
    accumulators take back 2^8.  Each half's exponent field is byte + 118 (the
    bytes placed by prmt, then x 128 + 118 x 128; no carry between the halves
    below byte 394).  Byte 255 (NaN) gives 0xBA80, which the unsigned 16-bit
    min turns into 0x7FC0 (NaN); the fold's bytes 3..136 (field <= 254,
    0x7F00) pass under it.  GPU only (inline PTX)."""
    p = prmt(w, uint32(0), uint32(0x4240 + 0x0101 * j))
    return min_u16x2(p * uint32(128) + uint32(0x3B003B00), uint32(0x7FC07FC0))


@cuda.jit(device=True, inline=True)
def f16_rows(w, j):
    """fp16 MXFP4, folded as e8m0_rows: the factors 2^(byte - 113) of group j
    for both rows in one fp16 pair (row g's, byte j of w, low; row g + 8's,
    byte 2 + j, high), the decoder's 2^-14 taken back in the same factor:
    exponent field byte - 98 in each half (the bytes placed by prmt, then x
    1024 - 98 x 1024 x 65537 mod 2^32, which leaves each half clean, and
    borrows nothing from the high one, for low bytes 98 .. 129).  Bytes past
    128 (255, NaN: the fold's bytes are 104 .. 128) are clamped to 129, +inf,
    which inf_nan_f16x2 turns into NaN.  GPU only (inline PTX)."""
    p = min_u16x2(prmt(w, uint32(0), uint32(0x4240 + 0x0101 * j)), uint32(0x00810081))
    return inf_nan_f16x2(p * uint32(1024) + uint32(0x77FE7800))


def shape_of(key: LaunchKey, which: str) -> Shape:
    return Shape(key, which)


def make_fill_tables(fmt: str):
    """fill_tables(f4, sl, threads): the shared tables of the plain GEMM, filled
    once per CTA (call before a __syncthreads): f4[16]: code -> 4x its E2M1
    value (16 entries in 16 banks: a warp's lookups never conflict); sl[256]:
    scale byte -> value / 4 (make_scale_value's value x 1/4, a power of two,
    so exact), made from the byte, so a CTA waits on no
    global load before its first lookup."""
    scale_value = make_scale_value(fmt)

    @cuda.jit(device=True, inline=True)
    def fill_tables(f4, sl, threads):
        tid = cuda.threadIdx.x
        if tid < 16:
            f4[tid] = fp4_quarters(tid)
        for i in range(tid, 256, threads):
            sl[i] = scale_value(i) * float32(0.25)

    return fill_tables


def make_pair16(dtype: str):
    """pair16(v) -> uint32: float32 v in ``dtype`` (bf16 by truncation: the scale
    tables' values are exact there) in both 16-bit halves, the packed multiplier
    of a scale-table entry.  GPU only (inline PTX for fp16)."""
    bf16 = dtype == "bfloat16"

    @cuda.jit(device=True, inline=True)
    def pair16(v):
        h = uint32(as_bits(v) >> 16) if bf16 else f2h(v)
        return h | (h << uint32(16))

    return pair16


def make_round_pair(dtype: str):
    """round_pair(v, mult) -> uint32: both 16-bit values of v times the fp32 mult,
    each rounded back to ``dtype`` (the router weight on the input, as the
    reference applies it).  GPU only (inline PTX for fp16)."""
    bf16 = dtype == "bfloat16"

    @cuda.jit(device=True, inline=True)
    def round_pair(v, mult):
        lo = v & uint32(0xFFFF)
        hi = v >> uint32(16)
        if bf16:
            flo = as_float(int64(lo) << 16) * mult
            fhi = as_float(int64(hi) << 16) * mult
            return uint32(f32_to_bf16(flo)) | (uint32(f32_to_bf16(fhi)) << uint32(16))
        return f2h(h2f(lo) * mult) | (f2h(h2f(hi) * mult) << uint32(16))

    return round_pair


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
    row_of = make_row_map(gather_tokens and is_gated(key.activation), GEMM_TILE_ROWS // 2,
                          key.intermediate_size)
    nout = key.intermediate_size if gather_tokens else key.hidden_size
    return on_input, row_of, nout


def make_fc2_epilogue_parts(key: LaunchKey):
    """(consts, apply): consts(e, n, g2, b2) -> (gs, gb), column n of expert e's
    global scale and bias (loaded once a column), and apply(h, gs, gb, wr) ->
    float32: the down projection's output with the scale, the bias and the
    router weight wr (unless it went on the input), in that order."""
    nv = key.format == "nvfp4"
    bias = key.has_bias
    on_input = key.router_on_input
    hid = key.hidden_size

    @cuda.jit(device=True, inline=True)
    def consts(e, n, g2, b2):
        gs = gb = float32(0.0)
        if nv:
            gs = g2[e]
        if bias:
            gb = b2[e * hid + n]
        return gs, gb

    @cuda.jit(device=True, inline=True)
    def apply(h, gs, gb, wr):
        if nv:
            h *= gs
        if bias:
            h += gb
        if not on_input:
            h *= wr
        return h

    return consts, apply


def make_fc2_epilogue(key: LaunchKey):
    """epilogue(h, e, n, r, tw, g2, b2) -> float32: the down projection's output
    column n of route r (expert e) with global scale, bias and the router weight
    tw[r] (unless it went on the input), as decode_fc2 finishes
    (make_fc2_epilogue_parts in one call)."""
    consts, apply = make_fc2_epilogue_parts(key)
    on_input = key.router_on_input

    @cuda.jit(device=True, inline=True)
    def epilogue(h, e, n, r, tw, g2, b2):
        gs, gb = consts(e, n, g2, b2)
        return apply(h, gs, gb, float32(1.0) if on_input else tw[r])

    return epilogue


def make_fc1_epilogue_parts(key: LaunchKey):
    """(consts, apply): consts(e, n, g13, b13) -> (gs, us, gb, ub), column n of
    expert e's global scales and biases (loaded once a column), and apply(gate,
    up, gs, us, gb, ub) -> act(gate, up) (or act(h) for relu2) in float32, with
    the scales and biases in the epilogue's order (scale, then bias)."""
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
    def consts(e, n, g13, b13):
        gs = us = gb = ub = float32(0.0)
        if nv:
            gs = g13[e * 2]
            if gated:
                us = g13[e * 2 + 1]
        if bias:
            gb = b13[e * f + n]
            if gated:
                ub = b13[e * f + inter + n]
        return gs, us, gb, ub

    @cuda.jit(device=True, inline=True)
    def apply(gate, up, gs, us, gb, ub):
        if nv:
            gate *= gs
            if gated:
                up *= us
        if bias:
            gate += gb
            if gated:
                up += ub
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

    return consts, apply


def make_fc1_epilogue(key: LaunchKey):
    """act(gate, up) (or act(h) for relu2) with global scale and bias: float32
    (make_fc1_epilogue_parts in one call)."""
    consts, apply = make_fc1_epilogue_parts(key)

    @cuda.jit(device=True, inline=True)
    def epilogue(gate, up, e, n, g13, b13):
        gs, us, gb, ub = consts(e, n, g13, b13)
        return apply(gate, up, gs, us, gb, ub)

    return epilogue


def activation_code(key: LaunchKey) -> str:
    """ABI code of the activations a block GEMM reads: uint32 words (two 16-bit
    values each) for the tensor-core GEMM, else the 16-bit array itself."""
    return "u4[]" if key.gemm in ("mma", "wgmma") else act_code(key.dtype)


def activation_arg(kernel, a):
    """``a`` as the kernel's first argument wants it (a uint32 view for 'u4[]')."""
    return a.reshape(-1).view(np.uint32) if kernel.spec.argtypes[0] == "u4[]" else a

# ---- weight layout v2's decoder (the decode kernels and the v2 wgmma GEMM)
M126 = 0x7E807E80                           # bf16x2 2^126
M14 = 0x74007400                            # f16x2 2^14
_v2_fn = (cuda.jit(device=True, inline=True) if SIM
          else cuda.jit(device=True, forceinline=True))


def make_decoder(dtype: str):
    """decode(w) -> (d0, d1, d2, d3): the 16-bit pairs of one v2 word, FP4 x 2^-126
    (bf16) or x 2^-14 (fp16); the twin of pymoe.ref.layout.decode_pairs."""
    if dtype == "bfloat16":
        @_v2_fn
        def decode(w):
            mag, sgn, both = uint32(0x01C001C0), uint32(0x80008000), uint32(0x81C081C0)
            return (w & both,
                    ((w << uint32(3)) & mag) | ((w << uint32(5)) & sgn),
                    (w << uint32(6)) & both,
                    ((w >> uint32(6)) & mag) | ((w << uint32(4)) & sgn))
    else:
        @_v2_fn
        def decode(w):
            mag, sgn = uint32(0x0E000E00), uint32(0x80008000)
            return (((w << uint32(3)) & mag) | (w & sgn),
                    ((w << uint32(6)) & mag) | ((w << uint32(5)) & sgn),
                    ((w << uint32(9)) & mag) | ((w << uint32(6)) & sgn),
                    ((w >> uint32(3)) & mag) | ((w << uint32(4)) & sgn))
    return decode


def make_cta_expert(key: LaunchKey):
    """cta_expert(beid, pri, c, n_routes) -> the expert of packed fc1 / fc2 CTA
    c's (sub-)block (grid y: geometry.gemm_block_ctas CTAs a block), or -1: the
    block is past the packed total (owner -1), or the sub-block is all padding
    (its first slot is: an expert's routes fill its blocks from the front)."""
    sub = gemm_cta_block(key.gemm, key.block)
    parts = gemm_block_ctas(key.gemm, key.block)

    @cuda.jit(device=True, inline=True)
    def cta_expert(beid, pri, c, n_routes):
        e = int64(beid[c // parts])
        if parts > 1 and int64(pri[c * sub]) >= n_routes:
            e = int64(-1)
        return e

    return cta_expert
