"""The multi-CTA route packer (kernels/route_pack.py) against its reference twin:
every buffer equal, slot for slot, with the grid split into several tiles.
Under the simulator the tile is shrunk (geometry.ROUTE_PACK_TILE, a launch
argument) so a few hundred routes already take several CTAs; on a GPU the
real tile and up to T = 8192, k = 8."""
import numpy as np
import pytest

from pymoe import geometry as geo
from tests.gating import CUDASIM

pytestmark = [pytest.mark.cudasim] if CUDASIM else [pytest.mark.gpu]


def _routes(routing, T, k, E, rng):
    """topk_ids [T, k] (int32; int64 for "int64") and an expert map (or None)
    over G = E or 2E ids."""
    G = 2 * E if routing == "map" else E
    ids = np.stack([rng.permutation(G)[:k] for _ in range(T)]).astype(np.int32)
    emap = None
    if routing == "skewed":                       # expert 1 takes about half the routes
        ids[rng.random((T, k)) < 0.5] = 1
    elif routing == "one_expert":
        ids[:] = E - 1
    elif routing == "invalid":
        bad = rng.random((T, k)) < 0.2
        ids[bad] = rng.choice(np.array([-1, E, 2 ** 31 - 1], np.int32), bad.sum())
    elif routing == "int64":                      # int64 ids (torch.topk's), some past int32
        ids = ids.astype(np.int64)
        bad = rng.random((T, k)) < 0.2
        ids[bad] = rng.choice(np.array([-1, E, 2 ** 32 + 1, -2 ** 32], np.int64), bad.sum())
    elif routing == "map":                        # EP: half of the ids live elsewhere
        emap = np.full(G, -1, np.int32)
        mine = rng.permutation(G)[:E]
        emap[mine] = np.arange(E, dtype=np.int32)
    return ids, emap


def _pack(mod, ids, emap, E, block, xp):
    R = ids.size
    S = geo.packed_slots(R, E, block)
    bufs = [xp.full(E + 1, -7, np.int32), xp.full(S, -7, np.int32),
            xp.full(geo.num_blocks(S, block), -7, np.int32), xp.full(1, -7, np.int32)]
    key = geo.LaunchKey("route_pack", format="", activation="", dtype="", hidden_size=0,
                        intermediate_size=0)
    mod.route_pack(xp.asarray(ids), None if emap is None else xp.asarray(emap), E, block,
                   *bufs, key=key)
    return [np.asarray(b.get() if hasattr(b, "get") else b) for b in bufs]


def _check(routing, shapes, xp):
    from pymoe.cuda import route_pack as cuda_rp
    from pymoe.ref import route_pack as ref_rp
    rng = np.random.default_rng(7)
    grids = []
    for T, k, E, block in shapes:
        ids, emap = _routes(routing, T, k, E, rng)
        ctas, tile = geo.route_pack_grid(ids.size)
        assert (ctas - 1) * tile < ids.size <= ctas * tile
        grids.append(ctas)
        got = _pack(cuda_rp, ids, emap, E, block, xp)
        want = _pack(ref_rp, ids, emap, E, block, np)
        for name, g, w in zip(("expert_offsets", "packed_route_indices", "block_expert_ids",
                               "packed_route_count"), got, want):
            np.testing.assert_array_equal(g, w, err_msg=f"{routing} T={T} k={k} E={E}: {name}")
    return grids


@pytest.mark.parametrize("routing", ["uniform", "skewed", "one_expert", "invalid", "int64",
                                     "map"])
def test_multi_cta_route_pack_equals_reference(routing, monkeypatch):
    """E <= geometry.ROUTE_PACK_RANK_EXPERTS: a round's ranks from the warp match."""
    from pymoe.cuda.kernels import route_pack as kern
    if CUDASIM:                    # the simulator's CTA (kern.THREADS) and tiles of 2 rounds
        monkeypatch.setattr(geo, "ROUTE_PACK_THREADS", kern.THREADS)
        monkeypatch.setattr(geo, "ROUTE_PACK_TILE", 2 * kern.THREADS)
        shapes = {"uniform": [(150, 4, 8, 16), (97, 3, 5, 8), (300, 4, 8, 16), (150, 4, 8, 24),
                              (300, 4, 8, 48), (400, 4, 8, 144)],
                  "map": [(150, 4, 8, 16), (300, 4, 8, 16)]}.get(routing, [(150, 4, 8, 16)])
        # (600 routes: the count loop's 4-route rounds run, 291 do not; a last
        # tile of one round or less)
        xp = np
    else:
        import cupy as xp
        shapes = [(150, 4, 8, 16), (4096, 4, 128, 64), (8192, 8, 128, 64), (5000, 8, 256, 32),
                  (20000, 8, 256, 32),           # 160000 routes: tiles of 2 rounds
                  (4096, 4, 128, 48), (5000, 8, 256, 24),   # blocks between powers of two
                  (4096, 4, 128, 144), (8192, 8, 256, 144)]
    grids = _check(routing, shapes, xp)
    assert max(grids) > 1, grids                  # several CTAs took part somewhere


@pytest.mark.parametrize("routing", ["uniform", "invalid", "map"])
def test_route_pack_sort_ranks_past_rank_experts(routing, monkeypatch):
    """More experts than geometry.ROUTE_PACK_RANK_EXPERTS: a round's ranks come
    from the sort, not the warp match (the simulator: the match path switched
    off; a GPU: E = 384, Kimi-K2-like), still equal to the twin slot for slot."""
    from pymoe.cuda.kernels import route_pack as kern
    if CUDASIM:
        monkeypatch.setattr(geo, "ROUTE_PACK_THREADS", kern.THREADS)
        monkeypatch.setattr(geo, "ROUTE_PACK_TILE", 2 * kern.THREADS)
        monkeypatch.setattr(kern, "RANK_EXPERTS", 0)
        shapes, xp = [(150, 4, 8, 16)], np
    else:
        import cupy as xp
        assert 384 > geo.ROUTE_PACK_RANK_EXPERTS
        shapes = [(300, 8, 384, 16), (5000, 8, 384, 32)]
    grids = _check(routing, shapes, xp)
    assert max(grids) > 1, grids


@pytest.mark.parametrize("block", [12, 40, 0, -8])
def test_route_pack_block_not_a_block_size(block):
    """The packer takes the blocks of geometry.BLOCK_SIZES (multiples of 8, its
    block owners by a division): any other block is a ValueError naming it,
    before the launch, with every buffer untouched."""
    from pymoe.cuda import route_pack as cuda_rp
    xp = np
    if not CUDASIM:
        import cupy as xp
    ids, _ = _routes("uniform", 20, 2, 8, np.random.default_rng(3))
    bufs = [xp.full(n, -7, np.int32) for n in (9, 200, 30, 1)]
    key = geo.LaunchKey("route_pack", format="", activation="", dtype="", hidden_size=0,
                        intermediate_size=0)
    with pytest.raises(ValueError, match=f"block={block}: the route packer takes one of "):
        cuda_rp.route_pack(xp.asarray(ids), None, 8, block, *bufs, key=key)
    for b in bufs:
        assert (np.asarray(b.get() if hasattr(b, "get") else b) == -7).all()
