"""Route packing contract (docs/design.md section 3), checked against a dumb oracle."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pymoe import geometry as geo
from pymoe.ref.route_pack import route_pack

KEY = geo.LaunchKey("route_pack", format="mxfp4", activation="silu", dtype="bfloat16",
                    hidden_size=64, intermediate_size=64)


def pack(ids, emap, E, B):
    R = ids.size
    S = geo.packed_slots(R, E, B)
    off = np.full(E + 1, -7, np.int32)
    pri = np.full(S, -7, np.int32)
    beid = np.full(geo.num_blocks(S, B), -7, np.int32)
    cnt = np.full(1, -7, np.int32)
    route_pack(ids, emap, E, B, off, pri, beid, cnt, key=KEY)
    return off, pri, beid, cnt


def check_contract(ids, emap, E, B):
    off, pri, beid, cnt = pack(ids, emap, E, B)
    R = ids.size
    flat = ids.reshape(-1).astype(np.int64)
    want_pos = 0
    assert off[0] == 0
    for e in range(E):
        if emap is None:
            routes = [r for r in range(R) if flat[r] == e]
        else:
            routes = [r for r in range(R) if 0 <= flat[r] < len(emap) and emap[flat[r]] == e]
        padded = -(-len(routes) // B) * B
        assert off[e] == want_pos
        assert list(pri[off[e]:off[e] + len(routes)]) == routes      # stable, increasing r
        assert (pri[off[e] + len(routes):off[e] + padded] == R).all()  # sentinel padding
        blocks = beid[off[e] // B:(off[e] + padded) // B]
        assert (blocks == e).all()
        want_pos += padded
    assert off[E] == want_pos == cnt[0]
    assert (pri[want_pos:] == R).all()
    assert (beid[want_pos // B:] == -1).all()
    assert want_pos <= pri.size


@pytest.mark.parametrize("B", geo.BLOCK_SIZES)
@pytest.mark.parametrize("R_shape", [(1, 1), (3, 2), (7, 4), (64, 8), (250, 4)])
def test_contract_every_block(B, R_shape):
    rng = np.random.default_rng(B * 1000 + R_shape[0])
    E = 13
    ids = rng.integers(-2, E + 2, size=R_shape).astype(np.int32)
    check_contract(ids, None, E, B)
    emap = np.full(E + 5, -1, np.int32)
    emap[rng.permutation(E + 5)[:E]] = np.arange(E)
    check_contract(ids, emap, E, B)


@settings(max_examples=60)
@given(st.integers(1, 300), st.integers(1, 8), st.integers(1, 40),
       st.sampled_from(geo.BLOCK_SIZES), st.integers(0, 2**31 - 1), st.booleans())
def test_contract_property(T, k, E, B, seed, use_map):
    rng = np.random.default_rng(seed)
    hi = 2 * E if use_map else E
    ids = rng.integers(-1, hi + 2, size=(T, k)).astype(np.int64)
    emap = None
    if use_map:
        emap = np.full(hi, -1, np.int32)
        emap[rng.permutation(hi)[:E]] = np.arange(E)
    check_contract(ids, emap, E, B)


@pytest.mark.parametrize("R", [1, 10, 1000, 100_000])
def test_large_route_counts(R):
    """T*k up to 1e5: contract checked vectorised (the loop oracle is too slow)."""
    rng = np.random.default_rng(R)
    E, B, k = 64, 16, 4 if R >= 4 else 1
    ids = rng.integers(-1, E + 1, size=(max(1, R // k), k)).astype(np.int32)
    off, pri, beid, cnt = pack(ids, None, E, B)
    flat = ids.reshape(-1)
    Rr = flat.size
    valid = (flat >= 0) & (flat < E)
    counts = np.bincount(flat[valid], minlength=E)
    np.testing.assert_array_equal(np.diff(off), -(-counts // B) * B)
    used = pri[pri < Rr]
    assert used.size == valid.sum() and np.unique(used).size == used.size
    slot_expert = np.repeat(np.arange(E), np.diff(off))
    np.testing.assert_array_equal(flat[pri[:off[E]][pri[:off[E]] < Rr]],
                                  slot_expert[pri[:off[E]] < Rr])
    for e in range(E):                                   # increasing within an expert
        seg = pri[off[e]:off[e + 1]]
        seg = seg[seg < Rr]
        assert (np.diff(seg) > 0).all()
    assert cnt[0] == off[E]
