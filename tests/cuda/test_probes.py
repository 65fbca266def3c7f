"""The GPU probes (tools/probe_*.py) under Numba's simulator, tiny shapes: a
probe that reads the wrong bytes would time the wrong thing on the device."""
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.cudasim

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def floor_probe():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import probe_decode_floor
        yield probe_decode_floor
    finally:
        sys.path.pop(0)


def _expected(p, w1, w2, ex, E, kt1, ntr1, ntr2, kt2, parts, sub, c):
    """Per (warp, lane): the XOR of word lane*4 of the CTA's tiles w, w + 8, ...
    (of a half slice's w2 tiles, the first word of its half)"""
    tw = p.TILE_WORDS
    e, s, h = int(ex[c // (kt2 * sub)]), (c // sub) % kt2, c % sub
    rt = p.SLICE_TILES // sub
    n1 = rt * kt1 if parts & 1 else 0
    n2 = ntr2 if parts & 2 else 0
    n1s, n2s = -(-n1 // 16), -(-n2 // (16 * sub))
    q = (e * kt2 + s) * sub + h
    tiles = ([(w1, ((e * ntr1 + s * p.SLICE_TILES + h * rt) * kt1 + j) * tw) for j in range(n1)]
             + [(w1, E * ntr1 * kt1 * tw + (q * n1s + j) * tw) for j in range(n1s)]
             + [(w2, ((e * ntr2 + j) * kt2 + s) * tw + h * (4 // sub)) for j in range(n2)]
             + [(w2, E * ntr2 * kt2 * tw + (q * n2s + j) * tw) for j in range(n2s)])
    want = np.zeros(p.THREADS, np.uint32)
    for w in range(p.WARPS):
        for b, off in tiles[w::p.WARPS]:
            want[w * 32:(w + 1) * 32] ^= b[off + np.arange(32) * 4]
    return want


@pytest.mark.parametrize("parts,dep,sub", [(3, 0, 1), (1, 0, 1), (2, 1, 1), (3, 0, 2)])
def test_decode_floor_probe_reads_each_ctas_slice(floor_probe, parts, dep, sub):
    from pymoe.cuda.launch import load_spec
    p = floor_probe
    k = load_spec(p.SPECS[f"decode_floor_d{p.DEPTHS[0]}"])
    E, H, I = 4, 128, 192                       # w13 2 k-tiles, w2 3 (the slices)
    kt1, ntr1, ntr2, kt2 = H // 64, 2 * I // 16, H // 16, I // 64
    rng = np.random.default_rng(parts)
    w1 = rng.integers(0, 2 ** 32, ntr1 * kt1 * p.TILE_WORDS * (E + E // 16 + 2), dtype=np.uint32)
    w2 = rng.integers(0, 2 ** 32, ntr2 * kt2 * p.TILE_WORDS * (E + E // 16 + 2), dtype=np.uint32)
    ex = np.array([3, 0], np.int32)
    grid = len(ex) * kt2 * sub
    out = np.full(grid * p.THREADS, 0xDEADBEEF, np.uint32)
    k.launch((grid,), (w1, w2, ex, E, kt2, sub, kt1, ntr1, ntr2, kt2, parts, dep, out))
    for c in range(grid):
        want = _expected(p, w1, w2, ex, E, kt1, ntr1, ntr2, kt2, parts, sub, c)
        np.testing.assert_array_equal(out[c * p.THREADS:(c + 1) * p.THREADS], want)


def test_flush_probe_streams_every_word():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import probe_flush as p
    finally:
        sys.path.pop(0)
    from pymoe.cuda.launch import load_spec
    k = load_spec(p.SPECS["flush_stream"])
    grid = 2
    nthr = grid * p.THREADS
    rng = np.random.default_rng(7)
    # both loops: two unrolled rounds of every thread, then a tail of 37 vectors
    nvec = 2 * p.UNROLL * nthr + 37
    buf = rng.integers(0, 2 ** 32, 4 * nvec + 8, dtype=np.uint32)   # + words past the end
    out = np.full(nthr, 0xDEADBEEF, np.uint32)
    k.launch((grid,), (buf, nvec, out))
    want = np.zeros(nthr, np.uint32)
    for v in range(nvec):
        want[v % nthr] ^= np.bitwise_xor.reduce(buf[4 * v:4 * v + 4])
    np.testing.assert_array_equal(out, want)
