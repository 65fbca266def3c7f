"""Weight layout v2: prepared FP4 weights in the order the decode kernels' lanes
consume them.  ``pack`` / ``unpack`` are a bijection (on the real rows and K; the
padding is zero codes and neutral scales), and this module is the only code that
knows the order; geometry.py names the sizes.

Shape legend: E experts, N rows of a projection (F for w13, H for w2), K its
reduction dim, I intermediate, NT row tiles, KT = ceil(K/64) k-tiles, g the
scale group (32 MXFP4, 16 NVFP4).

    words  uint32 [E, NT, KT, 32, 4]   tile (e, i, c): 512 bytes, lane l = 4g + t
                                       (g = l // 4, t = l % 4) owns 16 bytes
    scales uint8  [E, NT, KT, 16 * 64/g]

Rows: a gated w13 tile i holds gate rows 8i..8i+7 as local rows 0..7 and the up
rows I + 8i.. as local rows 8..15 (so one mma's accumulator holds gate and up of
the same intermediate column); relu2 w13 and w2 tile i holds rows 16i..16i+15.
Rows past the end are zero.

Word s (k-step s) of lane (g, t) holds the 8 values of the mma.sync m16n8k16 A
fragment for that k-step (the wgmma m64nNk16 A fragment of the lane's warp is
the same), in the fragment's own K order:  k0 = 64c + 16s + 2t,
    pair 0 = (row g,   k0, k0+1)        A register a0
    pair 1 = (row g+8, k0, k0+1)        a1
    pair 2 = (row g,   k0+8, k0+9)      a2
    pair 3 = (row g+8, k0+8, k0+9)      a3
(lo value = the lower K).  So the activations of a k-step are in their natural
order wherever the kernels stage or load them: a 16-byte run of a route's row
is one core-matrix row of the wgmma B image (a cp.async copies it as it is).  The 4 bits of a code (sign, e1, e0, m) are spread so
a bf16 decoder gets each pair with shifts and masks, bf16 bits m@6, e0@7, e1@8,
sign@15 (+16 for hi): BITS[p] lists the positions of (m, e0, e1, sign) of pair
p's lo value (hi = +16).  Decoded that way a pair is the FP4 values x 2^-126 (the
zero and 0.5 codes included); the kernel multiplies by 2^126.

Scales of tile (e, i, c): MXFP4 byte 4g + 2h + q = row g + 8h, 32-group 2c + q;
NVFP4 byte 8g + 4h + s = row g + 8h, 16-group 4c + s: one aligned 4- or 8-byte
load per lane.  Groups past the prepared ones hold the scale 1.0.
"""
from __future__ import annotations

import numpy as np

from ..geometry import (V2_LANE_WORDS, V2_TILE_K, V2_TILE_ROWS, is_gated, scale_group,
                        v2_k_tiles)

__all__ = ["BITS", "pack", "unpack", "decode_pairs", "tile_rows", "NEUTRAL_SCALE"]

# (m, e0, e1, sign) bit positions of the lo value of pairs 0..3 in a word
BITS = ((6, 7, 8, 15), (3, 4, 5, 10), (0, 1, 2, 9), (12, 13, 14, 11))
NEUTRAL_SCALE = {"mxfp4": 127, "nvfp4": 0x38}        # 1.0 in E8M0 / E4M3


def tile_rows(which: str, activation: str, n_rows: int, intermediate_size: int):
    """int64 [NT, 16]: the projection row of each local row of each tile (-1 past
    the end)."""
    if which == "w13" and is_gated(activation):
        i = intermediate_size
        nt = -(-i // 8)
        col = np.arange(nt)[:, None] * 8 + np.arange(8)[None, :]
        rows = np.concatenate([np.where(col < i, col, -1),
                               np.where(col < i, col + i, -1)], axis=1)
        return rows.astype(np.int64)
    nt = -(-n_rows // V2_TILE_ROWS)
    r = np.arange(nt)[:, None] * V2_TILE_ROWS + np.arange(V2_TILE_ROWS)[None, :]
    return np.where(r < n_rows, r, -1).astype(np.int64)


def _lane_index():
    """(g, t, s, p, q) grids [32, 4, 4, 2] -> local row and tile column of each
    value of a tile's words: row [32,4,4,2], col [32,4,4,2] (lane, word, pair, lo/hi)."""
    lane = np.arange(32)[:, None, None, None]
    s = np.arange(V2_LANE_WORDS)[None, :, None, None]
    p = np.arange(4)[None, None, :, None]
    q = np.arange(2)[None, None, None, :]
    g, t = lane // 4, lane % 4
    row = g + 8 * (p % 2)
    col = 16 * s + 2 * t + 8 * (p // 2) + q
    return np.broadcast_arrays(row, col)


def _xp(a):
    """The array module of ``a``: NumPy, or CuPy for a CuPy array (so the upload
    packs on the device; nothing here imports cupy otherwise)."""
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy
        return cupy
    return np


def _codes(w):
    """uint8 [E, N, Kp/2] FP4 pairs -> uint8 [E, N, Kp] codes."""
    xp = _xp(w)
    out = xp.empty(w.shape[:-1] + (w.shape[-1] * 2,), np.uint8)
    out[..., 0::2] = w & 15
    out[..., 1::2] = w >> 4
    return out


def pack(w: np.ndarray, scales: np.ndarray, *, fmt: str, which: str, activation: str,
         k_dim: int, intermediate_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Prepared (w uint8 [E, N, Kp/2], scales uint8 [E, N, Kp/g]) -> v2 (words, scales).
    NumPy arrays in, NumPy out; CuPy in, CuPy out (the same code on the device)."""
    xp = _xp(w)
    e_n, n_rows = w.shape[0], w.shape[1]
    grp = scale_group(fmt)
    rows = tile_rows(which, activation, n_rows, intermediate_size)       # [NT, 16]
    nt, kt = rows.shape[0], v2_k_tiles(k_dim)
    rows = xp.asarray(rows)
    kv = kt * V2_TILE_K
    codes = xp.zeros((e_n, n_rows + 1, kv), np.uint8)                     # row -1: zeros
    c = _codes(w)
    codes[:, :n_rows, :c.shape[2]] = c[:, :, :kv]
    sc = xp.full((e_n, n_rows + 1, kv // grp), NEUTRAL_SCALE[fmt], np.uint8)
    sc[:, :n_rows, :scales.shape[2]] = scales[:, :, :kv // grp]
    # tile codes [E, NT, KT, 16 rows, 64 cols]
    tc = codes[:, rows, :].reshape(e_n, nt, V2_TILE_ROWS, kt, V2_TILE_K).transpose(0, 1, 3, 2, 4)
    row, col = (xp.asarray(a) for a in _lane_index())
    v = tc[:, :, :, row, col].astype(np.uint32)                          # [E,NT,KT,32,4,4,2]
    words = xp.zeros((e_n, nt, kt, 32, V2_LANE_WORDS), np.uint32)
    for p, (bm, b0, b1, bs) in enumerate(BITS):
        for q in range(2):
            x = v[..., p, q]
            sh = 16 * q
            words |= ((x & 1) << (bm + sh)) | (((x >> 1) & 1) << (b0 + sh)) \
                | (((x >> 2) & 1) << (b1 + sh)) | (((x >> 3) & 1) << (bs + sh))
    # scales [E, NT, KT, 16 rows, 64/grp groups] -> lane order
    ng = V2_TILE_K // grp
    ts = sc[:, rows, :].reshape(e_n, nt, V2_TILE_ROWS, kt, ng).transpose(0, 1, 3, 2, 4)
    # byte (g, h, q) = row g + 8h, group q
    ts = ts.reshape(e_n, nt, kt, 2, 8, ng).transpose(0, 1, 2, 4, 3, 5)
    return words, xp.ascontiguousarray(ts.reshape(e_n, nt, kt, V2_TILE_ROWS * ng))


def unpack(words: np.ndarray, scales: np.ndarray, *, fmt: str, which: str, activation: str,
           k_dim: int, n_rows: int, intermediate_size: int, kp: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of ``pack``: v2 -> prepared (w [E, N, kp/2], scales [E, N, kp/g])."""
    e_n, nt, kt = words.shape[:3]
    grp = scale_group(fmt)
    rows = tile_rows(which, activation, n_rows, intermediate_size)
    row, col = _lane_index()
    v = np.zeros(words.shape[:3] + (32, V2_LANE_WORDS, 4, 2), np.uint8)
    for p, (bm, b0, b1, bs) in enumerate(BITS):
        for q in range(2):
            sh = 16 * q
            x = (((words >> (bm + sh)) & 1) | (((words >> (b0 + sh)) & 1) << 1)
                 | (((words >> (b1 + sh)) & 1) << 2) | (((words >> (bs + sh)) & 1) << 3))
            v[..., p, q] = x
    tc = np.zeros((e_n, nt, kt, V2_TILE_ROWS, V2_TILE_K), np.uint8)
    tc[:, :, :, row, col] = v
    codes = np.zeros((e_n, n_rows + 1, kt * V2_TILE_K), np.uint8)
    codes[:, rows.reshape(-1), :] = tc.transpose(0, 1, 3, 2, 4).reshape(
        e_n, nt * V2_TILE_ROWS, kt * V2_TILE_K)
    codes = codes[:, :n_rows, :kp]
    if codes.shape[2] < kp:
        codes = np.pad(codes, ((0, 0), (0, 0), (0, kp - codes.shape[2])))
    w = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    ng = V2_TILE_K // grp
    ts = scales.reshape(e_n, nt, kt, 8, 2, ng).transpose(0, 1, 2, 4, 3, 5).reshape(
        e_n, nt, kt, V2_TILE_ROWS, ng)
    sc = np.full((e_n, n_rows + 1, kt * ng), NEUTRAL_SCALE[fmt], np.uint8)
    sc[:, rows.reshape(-1), :] = ts.transpose(0, 1, 3, 2, 4).reshape(
        e_n, nt * V2_TILE_ROWS, kt * ng)
    sc = sc[:, :n_rows, :kp // grp]
    if sc.shape[2] < kp // grp:
        sc = np.pad(sc, ((0, 0), (0, 0), (0, kp // grp - sc.shape[2])),
                    constant_values=NEUTRAL_SCALE[fmt])
    return w, sc


def decode_pairs(word: int, dtype: str = "bfloat16") -> tuple[int, ...]:
    """The kernel's decoder in Python (its twin, for tests): word -> the four
    16-bit pairs (uint32), FP4 x 2^-126 in bf16 or x 2^-14 in fp16."""
    w = int(word) & 0xFFFFFFFF
    if dtype == "bfloat16":
        return (w & 0x81C081C0,
                ((w << 3) & 0x01C001C0) | ((w << 5) & 0x80008000),
                (w << 6) & 0x81C081C0,
                ((w >> 6) & 0x01C001C0) | ((w << 4) & 0x80008000))
    return (((w << 3) & 0x0E000E00) | (w & 0x80008000),
            ((w << 6) & 0x0E000E00) | ((w << 5) & 0x80008000),
            ((w << 9) & 0x0E000E00) | ((w << 6) & 0x80008000),
            ((w >> 3) & 0x0E000E00) | ((w << 4) & 0x80008000))
