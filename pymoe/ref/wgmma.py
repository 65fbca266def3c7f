"""The operand layouts of Hopper's wgmma m64nNk16 (bf16 / f16 in, fp32 out) in
NumPy: the twin of pymoe/cuda/kernels/wgmma.py, and the only code that knows
where a value sits in a thread's registers or in a shared-memory B image.

Shape legend: a warpgroup of 128 threads t = 32 w + l (warp w, lane l, g = l // 4,
q = l % 4); A is 64 x 16 per k-step, B 16 x n, D 64 x n; KS k-steps.

    a_fragments(A, dtype)       [64, 16 KS] -> uint32 [KS, 128, 4]: thread t's four
                                A registers of k-step s (lo half = the lower k):
                                  r0 = (row 16w + g,     k 2q, 2q+1)
                                  r1 = (row 16w + g + 8, k 2q, 2q+1)
                                  r2 = (row 16w + g,     k 2q+8, 2q+9)
                                  r3 = (row 16w + g + 8, k 2q+8, 2q+9)
    b_image(B, dtype, lbo, sbo) [16 KS, n] -> uint16 [KS, 16 n]: each k-step's
                                no-swizzle K-major image, 8 x 8 core matrices of
                                128 contiguous bytes: byte(n, k) =
                                (n // 8) sbo + (k // 8) lbo + (n % 8) 16 + (k % 8) 2
    descriptor(saddr, lbo, sbo) the 64-bit matrix descriptor of such an image
    sw32_offsets(n, sbo)        int [16, n]: byte(k, n) of a k-step's image in
                                the 32-byte swizzle (below)
    b_image_sw32(B, dtype, sbo) [16 KS, n] -> uint16 [KS, 16 n] (sbo 256): each k-step's
                                K-major image in the 32-byte swizzle (256-byte
                                aligned): a route's 16 values one 32-byte row,
                                byte(n, k) = o ^ ((o >> 3) & 16) with
                                o = (n // 8) sbo + (n % 8) 32 + 2 k
                                (16-byte unit bit 4 XOR address bit 7)
    descriptor_sw32(saddr, sbo) its descriptor (layout 3 in bits 62-63, lbo 1)
    v2_k_order(ks)              the real K column of each logical k of a chain
                                whose A fragments are layout-v2 words (below)
    v2_b_image(X, dtype, ...)   b_image of real activations X [16 KS, n] in that
                                order: what the v2 GEMM's stagers must write
    v2_a_fragments(words, scales, fmt, dtype)
                                the A registers of one CTA's 4 v2 row tiles (one a
                                warp), scales folded: decode_pairs of word s IS
                                k-step s's (r0, r1, r2, r3)
    d_unpack(raw, n)            uint32 / float32 [128, n / 2] accumulators -> D
                                [64, n]: acc 4 j + v of thread t is row
                                16 w + g + 8 (v // 2), column 8 j + 2 q + v % 2
"""
from __future__ import annotations

import numpy as np

__all__ = ["a_fragments", "b_image", "descriptor", "sw32_offsets", "b_image_sw32",
           "descriptor_sw32", "d_unpack", "bits16", "v2_k_order", "v2_b_image",
           "v2_a_fragments"]


def bits16(x, dtype: str) -> np.ndarray:
    """float values -> their 16-bit patterns (round to nearest even)."""
    x = np.asarray(x, np.float32)
    if dtype == "float16":
        return x.astype(np.float16).view(np.uint16)
    if dtype != "bfloat16":
        raise ValueError(f"dtype {dtype!r}, expected 'bfloat16' or 'float16'")
    b = x.view(np.uint32).astype(np.uint64)
    r = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    nan = np.isnan(x)
    return np.where(nan, 0x7FC0, r).astype(np.uint16)


def a_fragments(A, dtype: str) -> np.ndarray:
    A = np.asarray(A)
    if A.ndim != 2 or A.shape[0] != 64 or A.shape[1] % 16:
        raise ValueError(f"A: shape {A.shape}, expected [64, 16 * k-steps]")
    ks = A.shape[1] // 16
    h = bits16(A, dtype).astype(np.uint32)
    t = np.arange(128)
    w, g, q = t // 32, (t % 32) // 4, t % 4
    out = np.zeros((ks, 128, 4), np.uint32)
    for s in range(ks):
        for r, (dr, dk) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
            row = 16 * w + g + dr
            k = 16 * s + 2 * q + dk
            out[s, :, r] = h[row, k] | (h[row, k + 1] << 16)
    return out


def _k_step_shape(B) -> tuple:
    """(B as an array, k-steps, n) of a [16 KS, n] B operand, n % 8 == 0."""
    B = np.asarray(B)
    if B.ndim != 2 or B.shape[0] % 16 or B.shape[1] % 8:
        raise ValueError(f"B: shape {B.shape}, expected [16 * k-steps, n] with n % 8 == 0")
    return B, B.shape[0] // 16, B.shape[1]


def _image(B, dtype: str, ks: int, off, values: int) -> np.ndarray:
    """uint16 [KS, values]: k-step s's 16 x n values of B at byte offsets off."""
    img = np.zeros((ks, values), np.uint16)
    h = bits16(B, dtype)
    for s in range(ks):
        img[s, (off // 2).ravel()] = h[16 * s:16 * s + 16].ravel()
    return img


def b_image(B, dtype: str, lbo: int = 128, sbo: int = 256) -> np.ndarray:
    B, ks, n = _k_step_shape(B)
    kk, nn = np.meshgrid(np.arange(16), np.arange(n), indexing="ij")
    off = (nn // 8) * sbo + (kk // 8) * lbo + (nn % 8) * 16 + (kk % 8) * 2
    size = int(off.max()) + 2
    if size > 32 * n or len(np.unique(off)) != off.size:
        raise ValueError(f"b_image: lbo={lbo}, sbo={sbo} do not tile a {16 * n}-value image")
    return _image(B, dtype, ks, off, 16 * n)


def descriptor(saddr: int, lbo: int, sbo: int) -> int:
    """Start address, leading and stride byte offsets in 16-byte units (14 bits
    each, at bits 0, 16 and 32); base offset 0, no swizzle (bits 62-63 zero)."""
    return (((saddr >> 4) & 0x3FFF) | (((lbo >> 4) & 0x3FFF) << 16)
            | (((sbo >> 4) & 0x3FFF) << 32))


def d_unpack(raw, n: int) -> np.ndarray:
    raw = np.asarray(raw).reshape(128, n // 2)
    D = np.full((64, n), np.nan, np.float64)
    t = np.arange(128)
    w, g, q = t // 32, (t % 32) // 4, t % 4
    for i in range(n // 2):
        j, v = divmod(i, 4)
        D[16 * w + g + 8 * (v // 2), 8 * j + 2 * q + v % 2] = raw[:, i]
    return D


# ---- wgmma over weight layout v2 (pymoe/ref/layout.py): the data path of a block
# GEMM that reads v2 tiles.  A v2 tile is 16 rows x 64 K, lane (g, q) owning word s
# = its mma A fragment of k-step s in the fragment's own K order:
#     slot 2q + u      -> real 16 s + 2 q + u        (registers r0, r1)
#     slot 2q + 8 + u  -> real 16 s + 2 q + 8 + u    (registers r2, r3)
# wgmma's A fragment of warp w is that of an m16n8k16 mma on rows 16w..16w+15, so
# decode_pairs(word s) gives k-step s's four A registers as they are, and B holds
# the activations in their natural order: with a route's 16 values of k-step s as
# 8 words x0..x7 (pairs of consecutive values), core row 0 is (x0 .. x3) and core
# row 1 (x4 .. x7), each one contiguous 16-byte run of the route's row.


def sw32_offsets(n: int, sbo: int = 256) -> np.ndarray:
    """int [16, n]: byte(k, n) of one k-step's 32-byte-swizzle image."""
    if n % 8 or sbo % 256 or sbo <= 0:
        raise ValueError(f"sw32: n={n} (a multiple of 8), sbo={sbo} (a multiple of 256)")
    kk, nn = np.meshgrid(np.arange(16), np.arange(n), indexing="ij")
    o = (nn // 8) * sbo + (nn % 8) * 32 + kk * 2
    return o ^ ((o >> 3) & 16)


def b_image_sw32(B, dtype: str, sbo: int = 256) -> np.ndarray:
    B, ks, n = _k_step_shape(B)
    return _image(B, dtype, ks, sw32_offsets(n, sbo), (n // 8) * sbo // 2)


def descriptor_sw32(saddr: int, sbo: int) -> int:
    """descriptor's fields with leading byte offset 1 (16 bytes: unused by a
    K-major swizzled image), base offset 0, layout 3 (32-byte swizzle) in bits
    62-63."""
    return descriptor(saddr, 16, sbo) | (3 << 62)


def v2_k_order(ks: int) -> np.ndarray:
    """int [16 ks]: the real K column of logical k (the chain's k index): the
    identity, since layout v2 holds each k-step in the fragment's own K order
    (pymoe/ref/layout.py)."""
    return np.arange(16 * ks)


def v2_b_image(X, dtype: str, lbo: int = 128, sbo: int = 256) -> np.ndarray:
    """b_image of the real activations X [16 KS, n] in the v2 chain's K order."""
    X = np.asarray(X)
    return b_image(X[v2_k_order(X.shape[0] // 16)], dtype, lbo, sbo)


def v2_a_fragments(words, scales, fmt: str, dtype: str, lut=None) -> np.ndarray:
    """uint32 [KT * 4, 128, 4]: the A registers of a CTA's 64 weight rows = 4
    consecutive v2 row tiles (warp w takes tile w), for every k-step of the KT
    k-tiles, each register's pair decoded (decode_pairs) and multiplied by its
    row's scale in float64, then rounded to the dtype (exact where the scale
    folds: geometry.wgmma_scale_fold_ok).
    words: uint32 [4, KT, 32, 4] (layout.pack's [E, NT, KT, 32, 4] sliced);
    scales: uint8 [4, KT, 16 * 64 / g]; lut: scale byte -> value (default: the
    format's E8M0 / E4M3 values)."""
    from .. import formats
    from .layout import decode_pairs
    words = np.asarray(words, np.uint32)
    scales = np.asarray(scales, np.uint8)
    if lut is None:
        b = np.arange(256, dtype=np.uint8)
        lut = formats.decode_e8m0(b) if fmt == "mxfp4" else formats.decode_e4m3(b)
    lut = np.asarray(lut, np.float64)
    nv = fmt == "nvfp4"
    kt = words.shape[1]
    bias = 2.0 ** 126 if dtype == "bfloat16" else 2.0 ** 14

    def val(h):
        h = np.uint32(h) & 0xFFFF
        if dtype == "bfloat16":
            return float(np.array([h << 16], np.uint32).view(np.float32)[0])
        return float(np.array([h], np.uint16).view(np.float16)[0])

    out = np.zeros((kt * 4, 128, 4), np.uint32)
    for t in range(128):
        w, lane = divmod(t, 32)
        g = lane // 4
        for c in range(kt):
            for s in range(4):
                pairs = decode_pairs(int(words[w, c, lane, s]), dtype)
                regs = []
                for r, p in enumerate(pairs):
                    h = r % 2                               # r0, r2: row g; r1, r3: g + 8
                    if nv:                                  # byte 8g + 4h + 16-group
                        sb = scales[w, c, 8 * g + 4 * h + s]
                    else:                                   # byte 4g + 2h + 32-group
                        sb = scales[w, c, 4 * g + 2 * h + s // 2]
                    f = lut[sb] * bias
                    b16 = bits16(np.array([val(p) * f, val(p >> 16) * f], np.float32), dtype)
                    regs.append(int(b16[0]) | (int(b16[1]) << 16))
                out[4 * c + s, t] = regs
    return out
