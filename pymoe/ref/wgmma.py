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
    d_unpack(raw, n)            uint32 / float32 [128, n / 2] accumulators -> D
                                [64, n]: acc 4 j + v of thread t is row
                                16 w + g + 8 (v // 2), column 8 j + 2 q + v % 2
"""
from __future__ import annotations

import numpy as np

__all__ = ["a_fragments", "b_image", "descriptor", "d_unpack", "bits16"]


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


def b_image(B, dtype: str, lbo: int = 128, sbo: int = 256) -> np.ndarray:
    B = np.asarray(B)
    if B.ndim != 2 or B.shape[0] % 16 or B.shape[1] % 8:
        raise ValueError(f"B: shape {B.shape}, expected [16 * k-steps, n] with n % 8 == 0")
    ks, n = B.shape[0] // 16, B.shape[1]
    kk, nn = np.meshgrid(np.arange(16), np.arange(n), indexing="ij")
    off = (nn // 8) * sbo + (kk // 8) * lbo + (nn % 8) * 16 + (kk % 8) * 2
    size = int(off.max()) + 2
    if size > 32 * n or len(np.unique(off)) != off.size:
        raise ValueError(f"b_image: lbo={lbo}, sbo={sbo} do not tile a {16 * n}-value image")
    img = np.zeros((ks, 16 * n), np.uint16)
    h = bits16(B, dtype)
    for s in range(ks):
        img[s, (off // 2).ravel()] = h[16 * s:16 * s + 16].ravel()
    return img


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
