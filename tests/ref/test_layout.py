"""Layout v2 (pymoe/ref/layout.py): pack / unpack round trip on random and
extreme codes, both formats, every row role, K and row tails; the bit decoder
(the kernel's twin) gives every code pair exactly."""
import ml_dtypes
import numpy as np
import pytest

from pymoe import formats
from pymoe.geometry import padded_k, scale_group
from pymoe.ref import layout


@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
@pytest.mark.parametrize("which,activation,rows_of,k", [
    ("w13", "silu", lambda i, h: 2 * i, 64), ("w13", "silu", lambda i, h: 2 * i, 200),
    ("w13", "relu2", lambda i, h: i, 96), ("w2", "silu", lambda i, h: h, 40),
    ("w2", "swigluoai", lambda i, h: h, 128)])
@pytest.mark.parametrize("inter,hid", [(8, 16), (13, 35), (24, 48)])
@pytest.mark.parametrize("codes", ["random", "extreme"])
def test_pack_unpack_round_trip(fmt, which, activation, rows_of, k, inter, hid, codes):
    rng = np.random.default_rng(k + inter)
    n = rows_of(inter, hid)
    kp = padded_k(k)
    e = 3
    if codes == "random":
        w = rng.integers(0, 256, (e, n, kp // 2), dtype=np.uint8)
        sc = rng.integers(0, 256, (e, n, kp // scale_group(fmt)), dtype=np.uint8)
    else:
        w = rng.choice(np.array([0x00, 0xFF, 0x88, 0x77, 0x80, 0x08, 0xF0], np.uint8),
                       (e, n, kp // 2))
        sc = rng.choice(np.array([0, 255, 127, 0x7F, 0xFE], np.uint8),
                        (e, n, kp // scale_group(fmt)))
    words, s2 = layout.pack(w, sc, fmt=fmt, which=which, activation=activation, k_dim=k,
                            intermediate_size=inter)
    assert words.dtype == np.uint32 and words.shape[3:] == (32, 4)
    assert s2.shape[3] == 16 * 64 // scale_group(fmt)
    w2, sc2 = layout.unpack(words, s2, fmt=fmt, which=which, activation=activation,
                            k_dim=k, n_rows=n, intermediate_size=inter, kp=kp)
    kk = -(-k // 64) * 64                      # v2 covers K rounded to 64; kp may exceed it
    cover = min(kp, kk)
    np.testing.assert_array_equal(w2[..., :cover // 2], w[..., :cover // 2])
    np.testing.assert_array_equal(sc2[..., :cover // scale_group(fmt)],
                                  sc[..., :cover // scale_group(fmt)])


def test_pack_is_a_bijection_on_words():
    """Every bit of every word is one code bit: packing distinct random tiles never
    collides and repacking the unpacked weights gives the same words."""
    rng = np.random.default_rng(5)
    w = rng.integers(0, 256, (2, 32, 64), dtype=np.uint8)          # K = 128, 2 k-tiles
    sc = rng.integers(0, 256, (2, 32, 4), dtype=np.uint8)
    kw = dict(fmt="mxfp4", which="w2", activation="silu", k_dim=128, intermediate_size=128)
    words, s2 = layout.pack(w, sc, **kw)
    w2, sc2 = layout.unpack(words, s2, n_rows=32, kp=128, **kw)
    words2, s3 = layout.pack(w2, sc2, **kw)
    np.testing.assert_array_equal(words2, words)
    np.testing.assert_array_equal(s3, s2)
    bits = np.unpackbits(words.view(np.uint8)).reshape(-1)
    assert 0.45 < bits.mean() < 0.55                                # all 32 bits carry data


def test_gated_tile_rows_pair_gate_and_up():
    rows = layout.tile_rows("w13", "silu", 26, 13)
    assert rows.shape == (2, 16)
    assert list(rows[0]) == list(range(8)) + list(range(13, 21))
    assert list(rows[1]) == [8, 9, 10, 11, 12, -1, -1, -1, 21, 22, 23, 24, 25, -1, -1, -1]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_decoder_gives_every_code_exactly(dtype):
    """All 256 (lo, hi) code pairs in each of the 4 pair slots decode to the FP4
    values x 2^-126 (bf16) or x 2^-14 (fp16), exactly, the 0.5 code included."""
    vals = formats.decode_fp4(np.arange(16, dtype=np.uint8)).astype(np.float64)
    bias = 2.0 ** -126 if dtype == "bfloat16" else 2.0 ** -14
    np_dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    for p, (bm, b0, b1, bs) in enumerate(layout.BITS):
        for lo in range(16):
            for hi in range(16):
                word = 0
                for q, c in ((0, lo), (1, hi)):
                    sh = 16 * q
                    word |= ((c & 1) << (bm + sh)) | (((c >> 1) & 1) << (b0 + sh)) \
                        | (((c >> 2) & 1) << (b1 + sh)) | (((c >> 3) & 1) << (bs + sh))
                pair = layout.decode_pairs(word, dtype)[p]
                got = np.array([pair & 0xFFFF, pair >> 16], np.uint16).view(np_dt)
                got = got.astype(np.float64)
                want = np.array([vals[lo], vals[hi]]) * bias
                assert np.array_equal(got, want) and \
                    np.array_equal(np.signbit(got), np.signbit(want)), (p, lo, hi, got, want)
