"""FP4 weight formats: E2M1 codes, E8M0 / E4M3 scales, MXFP4 and NVFP4 blocks.

NumPy only (no torch, no ml_dtypes): the planner, the reference twin and the
checkpoint importers all decode weights through this module.

Shape legend: `...` leading dims (e.g. E experts), N output rows, K reduction
length (columns of one row), G scale groups per row.

    E2M1 code (4 bits)   s e e m    value = (-1)^s * {0, .5, 1, 1.5, 2, 3, 4, 6}[eem]
    packed byte j        [ hi nibble: element 2j+1 | lo nibble: element 2j ]
    MXFP4   w[..., N, K] = fp4 * 2^(scales[..., N, k // 32] - 127)      E8M0, 255 = NaN
    NVFP4   w[..., N, K] = (fp4 * e4m3(scales[..., N, k // 16])) * global_scale[...]

Lifecycle: quantize once (tests, synthetic models), store the bytes, dequantize
for debugging and for the reference twin:

    >>> import numpy as np
    >>> from pymoe import formats
    >>> w = np.random.default_rng(0).standard_normal((4, 64), dtype=np.float32)
    >>> packed, scales = formats.quantize_mxfp4(w)      # uint8 [4, 32], [4, 2]
    >>> w_hat = formats.dequantize_mxfp4(packed, scales)  # float32 [4, 64]
    >>> bool(np.all(formats.dequantize_mxfp4(*formats.quantize_mxfp4(w_hat)) == w_hat))
    True

Conventions (where the sources differ, the choice made here):
- Rounding to E2M1 and E4M3 is round-to-nearest-even and saturating
  (|x| > 6 -> +-6, |x| > 448 -> +-448, inf included). Float64 inputs are
  rounded exactly (no detour through float32); everything else goes via float32.
- MXFP4 scale (OCP MX v1.0): X = 2^(floor(log2(amax)) - 2), exponent clamped to
  [-127, 127]. An all-zero group gets byte 0 (the clamp of log2(0) = -inf; also
  what triton_kernels and microxcaling store). A group holding NaN gets byte 255
  (decodes to NaN). A group holding +-inf gets exponent 127 (byte 254): the inf
  saturates to code 7 and decodes to +-inf again (6 * 2^127 overflows float32).
  Values in [7X, 8X) saturate to 6X: spec behaviour (triton_kernels' default
  rounds the scale up instead, which never saturates but loses one bit).
- NVFP4 (ModelOpt recipe, float32 throughout): global = amax / (6 * 448) over
  the finite |w| of each [N, K] matrix (1.0 when that is 0); block scale
  s = (amax_g / 6) / global rounded to E4M3; an all-zero group gets s = 1.0
  (byte 0x38) as in ModelOpt, and so does a group whose s rounds to 0 (its codes
  are then +-0: ModelOpt would store byte 0 and saturated codes, which decode to
  0 as well); a NaN group gets 0x7F (NaN). Re-quantizing dequantized weights
  with the same global gives the same bytes, except for groups whose block
  scale is an E4M3 subnormal (s < 2^-6): there the recipe itself is not stable.
- encode_fp4(NaN) gives +-6 (code 7 / 15): E2M1 has no NaN; quantizers carry NaN
  in the scale instead.
"""

from __future__ import annotations

import functools

import numpy as np

from .geometry import FORMATS

__all__ = ["FP4_VALUES", "E8M0_NAN", "FORMATS", "decode_fp4", "encode_fp4", "pack_fp4",
           "unpack_fp4", "fp4_pair_lut", "decode_e8m0", "encode_e8m0", "decode_e4m3",
           "encode_e4m3", "mxfp4_num_groups", "quantize_mxfp4", "dequantize_mxfp4",
           "quantize_nvfp4", "dequantize_nvfp4", "quantize", "dequantize"]

MXFP4_GROUP = 32
NVFP4_GROUP = 16
E8M0_NAN = 255
E4M3_NAN = 0x7F
E4M3_MAX = 448.0
_E4M3_ONE = 0x38
FP4_MAX = 6.0

FP4_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                       -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float32)
FP4_VALUES.setflags(write=False)

# Rows per chunk are chosen so one chunk holds about this many elements: the
# temporaries then stay in cache and peak memory stays at a few MiB.
_CHUNK_ELEMS = 1 << 18


# ----------------------------------------------------------------------------- tables

def _e4m3_table() -> np.ndarray:
    b = np.arange(256)
    exp, man = (b >> 3) & 0xF, (b & 7).astype(np.float64)
    mag = np.where(exp == 0, np.ldexp(man, -9), np.ldexp(1.0 + man / 8.0, exp - 7))
    table = np.where(b & 0x80, -mag, mag).astype(np.float32)
    table[(b & 0x7F) == 0x7F] = np.nan  # no inf in e4m3fn
    return table


_E8M0_VALUES = np.where(np.arange(256) == E8M0_NAN, np.nan,  # exact: 2^-127 is a
                        np.ldexp(1.0, np.arange(256) - 127)).astype(np.float32)  # subnormal
_E4M3_VALUES = _e4m3_table()
_E4M3_POSITIVE = _E4M3_VALUES[:0x7F].astype(np.float64)  # codes 0..126, ascending
for _t in (_E8M0_VALUES, _E4M3_VALUES, _E4M3_POSITIVE):
    _t.setflags(write=False)


@functools.lru_cache(maxsize=None)
def fp4_pair_lut() -> np.ndarray:
    """float32[256, 2]: packed byte -> (low-nibble value, high-nibble value). Read-only."""
    b = np.arange(256)
    lut = np.stack([FP4_VALUES[b & 0xF], FP4_VALUES[b >> 4]], axis=1)
    lut.setflags(write=False)
    return lut


@functools.lru_cache(maxsize=None)
def _pair_lut_u64() -> np.ndarray:
    # Both floats of a pair as one 8-byte item: one gather per byte, then a view.
    return np.ascontiguousarray(fp4_pair_lut()).view(np.uint64).reshape(256)


def _fp4_round_by_thresholds(x: np.ndarray) -> np.ndarray:
    """Readable definition of E2M1 RNE (float64 in, codes out): count midpoints passed.

    A tie goes to the even code: the midpoint above an even code (0.25, 1.25,
    2.5, 5) is passed only when exceeded, the one above an odd code (0.75, 1.75,
    3.5) already when reached. NaN -> 7 (saturates like inf).
    """
    a = np.abs(x)
    mag = ((a > 0.25).astype(np.uint8) + (a >= 0.75) + (a > 1.25) + (a >= 1.75)
           + (a > 2.5) + (a >= 3.5) + (a > 5.0))
    mag[np.isnan(a)] = 7
    return (mag | (np.signbit(x).astype(np.uint8) << 3)).astype(np.uint8)


@functools.lru_cache(maxsize=None)
def _fp4_encode_lut(float_char: str):
    """(uint dtype, shift, mask, lut) for encoding float32 ('f') or float64 ('d').

    Every E2M1 midpoint has at most 2 significant bits, so the rounding of x is
    fixed by its sign, exponent and top 2 mantissa bits (key = bits >> shift)
    plus whether any lower bit is set (sticky): lut[2 * key + sticky].
    """
    ftype = np.dtype(float_char)
    utype = np.dtype(f"u{ftype.itemsize}")
    shift = np.finfo(ftype).nmant - 2
    low = np.arange(1 << (ftype.itemsize * 8 - shift), dtype=utype) << utype.type(shift)
    reps = np.stack([low, low | utype.type(1)], axis=1)   # [key, sticky] representatives
    with np.errstate(invalid="ignore"):  # signalling-NaN representatives
        lut = _fp4_round_by_thresholds(reps.view(ftype).astype(np.float64)).reshape(-1)
    return utype, utype.type(shift), utype.type((1 << shift) - 1), lut


# ----------------------------------------------------------------------------- E2M1 codes

def _work_dtype(dtype: np.dtype, name: str) -> np.dtype:
    if dtype == np.float64 or dtype == np.longdouble or dtype.kind in "iub":
        return np.dtype(np.float64)
    if dtype.kind in "cOSUM":
        raise TypeError(f"{name} must hold real numbers, got dtype {dtype}")
    return np.dtype(np.float32)


def _encode_fp4_fast(y: np.ndarray) -> np.ndarray:
    """Codes of a contiguous float32/float64 array (same shape, uint8)."""
    utype, shift, mask, lut = _fp4_encode_lut(y.dtype.char)
    bits = y.view(utype)
    idx = bits >> shift
    idx <<= utype.type(1)
    idx |= (bits & mask) != 0
    # idx < 2^(bits - shift + 1): its signed view is the same number, and numpy
    # < 2.1 refuses to take() with unsigned 64-bit indices (no safe cast to intp)
    return lut.take(idx.view(np.dtype(f"i{idx.itemsize}")))


def encode_fp4(x) -> np.ndarray:
    """E2M1 codes (uint8, 0..15) of x: round to nearest, ties to even, saturating at +-6."""
    x = np.asarray(x)
    work = _work_dtype(x.dtype, "x")
    return _encode_fp4_fast(np.ascontiguousarray(x, dtype=work))


def _as_codes(codes, name: str, limit: int) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.dtype == np.uint8 and limit == 256:
        return codes
    if codes.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer (uint8) array, got dtype {codes.dtype}")
    if codes.size and (codes.min() < 0 or codes.max() >= limit):
        raise ValueError(f"{name} must lie in [0, {limit}), got range "
                         f"[{codes.min()}, {codes.max()}]")
    return codes.astype(np.uint8, copy=False)


def decode_fp4(codes) -> np.ndarray:
    """float32 values of E2M1 codes (0..15; code 8 is -0.0)."""
    return FP4_VALUES[_as_codes(codes, "codes", 16)]


def pack_fp4(codes) -> np.ndarray:
    """uint8[..., K] codes -> uint8[..., K/2]: element 2j in the low nibble of byte j."""
    codes = _as_codes(codes, "codes", 16)
    if codes.ndim == 0 or codes.shape[-1] % 2:
        raise ValueError(f"codes must have an even last dim, got shape {codes.shape}")
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def unpack_fp4(packed) -> np.ndarray:
    """uint8[..., K/2] -> uint8[..., K] codes (inverse of pack_fp4)."""
    packed = _check_bytes(packed, "packed", min_ndim=1)
    codes = np.empty(packed.shape[:-1] + (2 * packed.shape[-1],), dtype=np.uint8)
    codes[..., 0::2] = packed & 0xF
    codes[..., 1::2] = packed >> 4
    return codes


# ----------------------------------------------------------------------------- scale bytes

def decode_e8m0(b) -> np.ndarray:
    """float32 2^(b - 127); byte 255 -> NaN; byte 0 -> 2^-127 (a float32 subnormal)."""
    return _E8M0_VALUES[_as_codes(b, "b", 256)]


def encode_e8m0(x) -> np.ndarray:
    """E8M0 bytes of powers of two in [2^-127, 2^127], NaN -> 255; else ValueError."""
    x = np.asarray(x, dtype=np.float64)
    nan = np.isnan(x)
    mant, exp = np.frexp(np.where(nan, 1.0, x))
    byte = exp.astype(np.int64) + 126
    bad = ~nan & ((mant != 0.5) | (byte < 0) | (byte > 254))
    if np.any(bad):
        raise ValueError(f"x must be powers of two in [2^-127, 2^127] (or NaN), got "
                         f"{x[bad].ravel()[:4].tolist()}")
    return np.where(nan, E8M0_NAN, byte).astype(np.uint8)


def decode_e4m3(b) -> np.ndarray:
    """float32 values of float8_e4m3fn bytes (bias 7, subnormals, 0x7F/0xFF NaN, max 448)."""
    return _E4M3_VALUES[_as_codes(b, "b", 256)]


def encode_e4m3(x) -> np.ndarray:
    """float8_e4m3fn bytes of x: RNE, saturating to +-448 (inf too); NaN -> 0x7F."""
    x = np.asarray(x)
    x = x.astype(_work_dtype(x.dtype, "x")).astype(np.float64)
    a = np.abs(x)
    # Step between e4m3 neighbours around a: 2^(e - 3) for normals (e = floor(log2 a)),
    # 2^-9 below the smallest normal 2^-6. Scaling by a power of two is exact.
    _, e = np.frexp(a)
    step = np.ldexp(1.0, np.maximum(e.astype(np.int64) - 1, -6) - 3)
    with np.errstate(invalid="ignore"):
        q = np.minimum(np.rint(a / step) * step, E4M3_MAX)
    q = np.where(np.isnan(q), 0.0, q)
    code = np.searchsorted(_E4M3_POSITIVE, q).astype(np.uint8)
    code |= np.signbit(x).astype(np.uint8) << 7
    return np.where(np.isnan(x), np.uint8(E4M3_NAN), code).astype(np.uint8)


# ----------------------------------------------------------------------------- validation

def _check_bytes(arr, name: str, *, min_ndim: int = 2) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype != np.uint8:
        raise TypeError(f"{name} must be uint8, got dtype {arr.dtype}")
    if arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dims, got shape {arr.shape}")
    return arr


def _check_weights(w, group: int, multiple: int) -> np.ndarray:
    w = np.asarray(w)
    _work_dtype(w.dtype, "w")
    if w.ndim < 2:
        raise ValueError(f"w must be [..., N, K] (at least 2 dims), got shape {w.shape}")
    if w.shape[-1] % multiple:
        raise ValueError(f"w has K={w.shape[-1]} (shape {w.shape}); K must be a multiple "
                         f"of {multiple} for {'MXFP4' if group == MXFP4_GROUP else 'NVFP4'}")
    return w


def _check_scales(scales, expected: tuple, lo: int | None = None) -> None:
    """scales.shape must be `expected` (or, with lo, end in lo..expected[-1] groups)."""
    ok = scales.shape[:-1] == expected[:-1] if scales.ndim == len(expected) else False
    ok = ok and (expected[-1] if lo is None else lo) <= scales.shape[-1] <= expected[-1]
    if not ok:
        want = f"{expected}" if lo is None else f"{expected[:-1]} + ({lo}..{expected[-1]},)"
        raise ValueError(f"scales has shape {scales.shape}, expected {want} "
                         f"(packed.shape[:-1] + (groups,))")


def _row_chunks(rows: int, k: int):
    """Slices of about _CHUNK_ELEMS elements over `rows` rows of k elements."""
    step = max(1, _CHUNK_ELEMS // max(k, 1))
    for r0 in range(0, rows, step):
        yield slice(r0, min(rows, r0 + step))


# ----------------------------------------------------------------------------- MXFP4

def mxfp4_num_groups(K: int) -> int:
    """Scale bytes per row of K values: ceil(K / 32)."""
    return -(-int(K) // MXFP4_GROUP)


def _group_absmax(x: np.ndarray) -> np.ndarray:
    """max |x| over the last axis of float32/float64 x, NaN if any is NaN.

    Done on the bit patterns with the sign cleared: for those, integer order is
    float order and every NaN sorts above inf. About 2x faster than np.abs().max().
    """
    itype = np.dtype(f"i{x.dtype.itemsize}")
    mag = x.view(itype) & itype.type(np.iinfo(itype).max)
    return mag.max(axis=-1).view(x.dtype)


def _mx_exponents(amax: np.ndarray):
    """(shared exponent int64, scale byte uint8) per group from its max |w|."""
    _, e = np.frexp(amax)                    # amax = m * 2^e, m in [0.5, 1)
    exp = e.astype(np.int64) - 3             # floor(log2(amax)) - emax(E2M1)=2
    exp[amax == 0] = -127                    # log2(0) = -inf, clamped
    exp[np.isinf(amax)] = 127
    np.clip(exp, -127, 127, out=exp)
    byte = (exp + 127).astype(np.uint8)
    byte[np.isnan(amax)] = E8M0_NAN
    return exp, byte


def _pack_into(out: np.ndarray, codes: np.ndarray) -> None:
    np.bitwise_or(codes[:, 0::2], codes[:, 1::2] << 4, out=out)


def quantize_mxfp4(w) -> tuple[np.ndarray, np.ndarray]:
    """Quantize w[..., N, K] (float, K % 8 == 0) to MXFP4, groups of 32 along K.

    Returns (packed uint8[..., N, K/2], scales uint8[..., N, ceil(K/32)]); the
    last group is partial when K % 32 != 0. See the module docstring for the
    scale rule and NaN / inf / zero handling. Deterministic, vectorised, chunked.
    """
    w = _check_weights(w, MXFP4_GROUP, 8)
    work = _work_dtype(w.dtype, "w")
    K, G = w.shape[-1], mxfp4_num_groups(w.shape[-1])
    rows = w.reshape(-1, K)
    packed = np.empty((rows.shape[0], K // 2), dtype=np.uint8)
    scales = np.empty((rows.shape[0], G), dtype=np.uint8)
    alloc = np.empty if K == G * MXFP4_GROUP else np.zeros  # zeros pad a partial group
    for sl in _row_chunks(rows.shape[0], K):
        r = sl.stop - sl.start
        x = alloc((r, G, MXFP4_GROUP), dtype=work)            # [r, G, 32]
        x.reshape(r, -1)[:, :K] = rows[sl]
        exp, scales[sl] = _mx_exponents(_group_absmax(x))     # [r, G]
        x *= np.ldexp(work.type(1), -exp).astype(work)[..., None]  # exact: power of two
        _pack_into(packed[sl], _encode_fp4_fast(x).reshape(r, -1)[:, :K])
    return packed.reshape(w.shape[:-1] + (K // 2,)), scales.reshape(w.shape[:-1] + (G,))


def _scale_groups(values: np.ndarray, factors: np.ndarray, group: int) -> None:
    """values[r, K] *= factors[r, k // group], in place (last group may be partial)."""
    K, full = values.shape[-1], values.shape[-1] // group
    if full:
        head = values[:, :full * group].reshape(values.shape[0], full, group)
        head *= factors[:, :full, None]      # a view: splitting the last axis never copies
    if K > full * group:
        values[:, full * group:] *= factors[:, full:full + 1]


def _dequant_rows(packed, factors, group, row_scale=None) -> np.ndarray:
    """float32[R, 2*kb]: pair-LUT gather of packed[R, kb], times factors[R, G] per group,
    then times row_scale[R]. One chunk of rows at a time, so each output byte is
    written once while the chunk is in cache."""
    lut, (R, kb) = _pair_lut_u64(), packed.shape
    out = np.empty((R, 2 * kb), dtype=np.float32)
    with np.errstate(over="ignore"):          # IEEE overflow to inf is the defined result
        for sl in _row_chunks(R, 2 * kb):
            v = out[sl]
            v.view(np.uint64)[...] = lut.take(packed[sl].astype(np.intp))
            _scale_groups(v, factors[sl], group)
            if row_scale is not None:
                v *= row_scale[sl, None]
    return out


def dequantize_mxfp4(packed, scales, *, k: int | None = None) -> np.ndarray:
    """float32[..., N, K] = fp4 * 2^(scale - 127), exact (NaN where the byte is 255).

    packed: uint8[..., N, K/2]; scales: uint8[..., N, ceil(K/32)].
    k: logical K when packed rows carry padding (even, <= 2 * packed.shape[-1]);
    the output then has k columns and scales may hold ceil(k/32) groups or the
    padded count. Products overflow to +-inf only for bytes >= 253, which
    quantize_mxfp4 never writes for finite input.
    """
    packed = _check_bytes(packed, "packed")
    scales = _check_bytes(scales, "scales", min_ndim=1)
    stored = 2 * packed.shape[-1]
    k = stored if k is None else int(k)
    if not (0 <= k <= stored and k % 2 == 0):
        raise ValueError(f"k={k} must be even and in [0, {stored}] (2 * packed.shape[-1])")
    groups = mxfp4_num_groups(k)
    _check_scales(scales, packed.shape[:-1] + (mxfp4_num_groups(stored),),
                  lo=None if k == stored else groups)
    factors = _E8M0_VALUES[scales[..., :groups]].reshape(-1, groups)
    out = _dequant_rows(packed[..., :k // 2].reshape(-1, k // 2), factors, MXFP4_GROUP)
    return out.reshape(packed.shape[:-1] + (k,))


# ----------------------------------------------------------------------------- NVFP4

def _check_global(global_scale, lead: tuple) -> np.ndarray:
    g = np.asarray(global_scale, dtype=np.float32)
    g = g.reshape(()) if g.size == 1 else g
    if g.ndim > len(lead) or any(n not in (1, m) for n, m in zip(g.shape[::-1], lead[::-1])):
        raise ValueError(f"global_scale has shape {g.shape}, expected one per leading "
                         f"index: broadcastable to {lead}")
    return np.broadcast_to(g, lead)


def _nvfp4_global(rows: np.ndarray, lead: tuple, N: int) -> np.ndarray:
    """float32[lead]: amax of the finite |w| of each [N, K] matrix / (6 * 448), 0 -> 1."""
    row_amax = np.zeros(rows.shape[0], dtype=np.float32)
    finite_max = np.float32(np.finfo(np.float32).max)
    for sl in _row_chunks(rows.shape[0], rows.shape[1]):
        a = np.abs(rows[sl].astype(np.float32))
        row_amax[sl] = np.where(a <= finite_max, a, 0).max(axis=-1, initial=0)
    g = row_amax.reshape(lead + (N,)).max(axis=-1, initial=0) / np.float32(FP4_MAX * E4M3_MAX)
    return np.where(g == 0, np.float32(1), g).astype(np.float32).reshape(lead)


def quantize_nvfp4(w, global_scale=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quantize w[..., N, K] (K % 16 == 0) to NVFP4 with NVIDIA ModelOpt's recipe.

    Returns (packed uint8[..., N, K/2], scales uint8[..., N, K/16] (e4m3 bits),
    global_scale float32[...] = w.shape[:-2], 0-d for a 2-D w). global_scale,
    when given, is used as is (broadcastable to w.shape[:-2], finite, > 0).
    """
    w = _check_weights(w, NVFP4_GROUP, NVFP4_GROUP)
    (N, K), lead, G = w.shape[-2:], w.shape[:-2], w.shape[-1] // NVFP4_GROUP
    rows = w.reshape(-1, K)
    R = rows.shape[0]
    if global_scale is None:
        g = _nvfp4_global(rows, lead, N)
    else:
        g = np.array(_check_global(global_scale, lead), dtype=np.float32)
        if not np.all(np.isfinite(g) & (g > 0)):
            raise ValueError(f"global_scale must be finite and > 0, got {g.ravel()[:4].tolist()}")
    g_rows = np.repeat(g.reshape(-1), N)                 # [R]: one global per row
    packed = np.empty((R, K // 2), dtype=np.uint8)
    scales = np.empty((R, G), dtype=np.uint8)
    for sl in _row_chunks(R, K):
        x = rows[sl].astype(np.float32).reshape(-1, G, NVFP4_GROUP)  # [r, G, 16], a copy
        amax = _group_absmax(x)                          # [r, G], NaN propagates
        s = amax / np.float32(FP4_MAX) / g_rows[sl, None]
        s[amax == 0] = 1.0                               # ModelOpt: zero group -> scale 1
        sb = encode_e4m3(s)
        under = sb == 0                                  # s underflows e4m3: store a zero
        sb[under] = _E4M3_ONE                            # group (scale 1, codes +-0)
        scales[sl] = sb
        eff = _E4M3_VALUES[sb] * g_rows[sl, None]        # float32, as the recipe divides
        eff[under | (eff == 0)] = np.inf
        with np.errstate(invalid="ignore"):
            x /= eff[..., None]
        _pack_into(packed[sl], _encode_fp4_fast(x).reshape(x.shape[0], K))
    return (packed.reshape(w.shape[:-1] + (K // 2,)), scales.reshape(w.shape[:-1] + (G,)), g)


def dequantize_nvfp4(packed, scales, global_scale) -> np.ndarray:
    """float32[..., N, K] = (fp4 * e4m3) * global_scale, each product in float32.

    packed: uint8[..., N, K/2] (K % 16 == 0); scales: uint8[..., N, K/16] e4m3
    bits; global_scale: float32 broadcastable to packed.shape[:-2] (or size 1).
    fp4 * e4m3 is exact in float32; only the global product rounds.
    """
    packed = _check_bytes(packed, "packed")
    scales = _check_bytes(scales, "scales", min_ndim=1)
    K = 2 * packed.shape[-1]
    if K % NVFP4_GROUP:
        raise ValueError(f"packed has shape {packed.shape}: K = {K} must be a multiple of 16")
    _check_scales(scales, packed.shape[:-1] + (K // NVFP4_GROUP,))
    g = _check_global(global_scale, packed.shape[:-2])
    g_rows = np.repeat(g.reshape(-1), packed.shape[-2])
    factors = _E4M3_VALUES[scales].reshape(-1, K // NVFP4_GROUP)
    out = _dequant_rows(packed.reshape(-1, K // 2), factors, NVFP4_GROUP, g_rows)
    return out.reshape(packed.shape[:-1] + (K,))


# ----------------------------------------------------------------------------- dispatch

def _check_format(format: str) -> str:
    if format not in FORMATS:
        raise ValueError(f"format={format!r} is not one of {FORMATS}")
    return format


def quantize(w, *, format: str):
    """(packed, scales, global_scale) for either format; global_scale is None for MXFP4.

    One tuple shape for both keeps round trips generic:
    `p, s, g = quantize(w, format=f); dequantize(p, s, format=f, global_scale=g)`.
    """
    if _check_format(format) == "mxfp4":
        return (*quantize_mxfp4(w), None)
    return quantize_nvfp4(w)


def dequantize(packed, scales, *, format: str, global_scale=None) -> np.ndarray:
    """float32 weights of either format (global_scale: required for NVFP4, None for MXFP4)."""
    if _check_format(format) == "mxfp4":
        if global_scale is not None:
            raise ValueError("global_scale must be None for format='mxfp4'")
        return dequantize_mxfp4(packed, scales)
    if global_scale is None:
        raise ValueError("global_scale is required for format='nvfp4'")
    return dequantize_nvfp4(packed, scales, global_scale)
