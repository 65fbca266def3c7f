"""Geometry: block sizes, reachable sets, capacities cover every T."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pymoe
from pymoe import geometry as geo


@settings(max_examples=300)
@given(st.integers(1, 5000), st.integers(1, 16), st.integers(1, 512))
def test_select_in_reachable_and_capacities_cover(max_tokens, k, E):
    k = min(k, E)
    reach = geo.reachable_block_sizes(max_tokens, k, E)
    buckets = geo.token_buckets(max_tokens, k, E)
    covered = np.zeros(max_tokens + 1, bool)
    for reg, b, lo, hi in buckets:
        assert not covered[lo:hi + 1].any()
        covered[lo:hi + 1] = True
        for t in {lo, hi, (lo + hi) // 2}:
            assert geo.regime_for(t) == reg
            if reg == "packed":
                assert geo.select_block_size(t, k, E) == b
    assert covered[1:].all()
    for t in np.unique(np.linspace(1, max_tokens, 50).astype(int)):
        t = int(t)
        if geo.regime_for(t) == "packed":
            b = geo.select_block_size(t, k, E)
            assert b in reach
            # capacity covers the worst routing: all distinct experts, each padded
            r = t * k
            worst = sum(-(-c // b) * b for c in np.bincount(np.arange(r) % E, minlength=E))
            assert worst <= geo.packed_slots(r, E, b)
            one = -(-r // b) * b                       # all routes to one expert
            assert one <= geo.packed_slots(r, E, b)


def test_select_monotone():
    for k, E in [(1, 1), (4, 32), (8, 160), (2, 7), (8, 512)]:
        prev = 0
        for t in range(1, 5000):
            b = geo.select_block_size(t, k, E)
            assert b >= prev and b in geo.BLOCK_SIZES
            prev = b


def test_pin_is_honoured():
    assert geo.reachable_block_sizes(100, 4, 8, pin=64) == (64,)
    assert geo.select_block_size(10, 4, 8, pin=16) == 16


def test_slots_formula():
    assert geo.packed_slots(512, 160, 8) == 512 + 160 * 7
    assert geo.packed_slots(5, 3, 8) == 32 and geo.packed_slots(10, 3, 4) == 20
    assert geo.packed_slots(3, 160, 8) == 3 * 8
    assert geo.num_blocks(17, 8) == 3


def test_regime_cut():
    assert geo.regime_for(geo.DECODE_MAX_TOKENS) == "decode"
    assert geo.regime_for(geo.DECODE_MAX_TOKENS + 1) == "packed"
    assert geo.regime_for(geo.DECODE_MAX_TOKENS, top_k=4) == "decode"
    cap = geo.DECODE_ROUTE_CAP // 64                      # top_k past the route cap
    assert geo.decode_max_tokens(64) == cap and geo.regime_for(cap + 1, 64) == "packed"
    t = geo.DECODE_MAX_TOKENS
    assert geo.token_buckets(t + 3, 2, 4) == [("decode", None, 1, t),
                                              ("packed", 48, t + 1, t + 3)]
    # a pinned cut (Caps.decode_max_tokens): 0 = no decode bucket, the route cap holds
    assert geo.token_buckets(10, 2, 4, cut=0) == [("packed", 8, 1, 8), ("packed", 16, 9, 10)]
    assert geo.token_buckets(10, 2, 4, cut=3) == [("decode", None, 1, 3), ("packed", 8, 4, 8),
                                                  ("packed", 16, 9, 10)]
    assert geo.regime_for(1, 2, cut=0) == "packed" and geo.regime_for(3, 2, cut=3) == "decode"
    assert geo.decode_max_tokens(64, pin=100) == cap


def test_launch_keys_hashable_and_bucketed():
    kw = dict(format="mxfp4", activation="silu", dtype="bfloat16", hidden_size=64,
              intermediate_size=32, has_bias=False, router_on_input=False,
              swiglu_limit=None, swiglu_alpha=None, gemm="mma")
    a = geo.launch_keys("packed", 16, **kw)
    b = geo.launch_keys("packed", 16, **kw)
    assert a == b and len({*a, *b}) == len(a)
    assert all(k.kernel for k in geo.launch_keys("decode", None, **kw))
    fma = geo.launch_keys("packed", 16, **{**kw, "gemm": "fma"})
    assert [k.gemm for k in fma] == ["", "fma", "fma", ""] and fma[1] != a[1]
    wg = geo.launch_keys("packed", 16, **{**kw, "gemm": "wgmma"})
    assert [k.gemm for k in wg] == ["", "wgmma", "wgmma", ""] and wg[1] != a[1]
    with pytest.raises(ValueError, match="gemm='hgmma'"):
        geo.launch_keys("packed", 16, **{**kw, "gemm": "hgmma"})


def test_expected_active_experts():
    """E (1 - (1 - 1/E)^R) rounded up: against a direct count of the mean over
    many uniform draws, never above min(R, E), monotone in R."""
    rng = np.random.default_rng(0)
    for e, r in ((1, 5), (7, 3), (128, 16), (128, 128), (256, 40), (128, 4096)):
        draws = rng.integers(0, e, size=(4000, r))
        mean = np.mean([len(np.unique(d)) for d in draws])
        got = geo.expected_active_experts(r, e)
        assert got - 1 < mean + 0.05 * e ** 0.5 and mean - 0.05 * e ** 0.5 <= got, (e, r)
        assert got <= min(r, e)
    assert geo.expected_active_experts(0, 8) == 0 and geo.expected_active_experts(3, 1) == 1
    for e in (1, 2, 128, 256):
        seq = [geo.expected_active_experts(r, e) for r in range(0, 3000, 7)]
        assert seq == sorted(seq) and seq[-1] == e


def test_self_pack_keys():
    """Blocks up to SELF_PACK_MAX_BLOCK over at most SELF_PACK_MAX_EXPERTS local
    experts, where a block is one CTA, and at most SELF_PACK_MAX_CTAS fc1 CTAs with
    routes (expected_active_experts(R, E) x fc1 n-tiles): fc1's key packs its own blocks and the
    route_pack key is None (no launch); else the four launches as before, and
    always when the routes or experts are not known.  The plan's keys, bind's
    and prewarm's (reachable_keys: both variants of a bucket, no None) follow it."""
    import pymoe
    kw = dict(format="mxfp4", activation="silu", dtype="bfloat16", hidden_size=64,
              intermediate_size=96, has_bias=False, router_on_input=False,
              swiglu_limit=None, swiglu_alpha=None)
    mx = geo.SELF_PACK_MAX_BLOCK
    for gemm in geo.GEMMS:
        for b in geo.BLOCK_SIZES:
            tiles = -(-96 // (geo.fc1_tile_n("silu") * geo.gemm_m_tiles(gemm, b)))
            for e in (1, 128, geo.SELF_PACK_MAX_EXPERTS, geo.SELF_PACK_MAX_EXPERTS + 1, None):
                for r in (1, 64, 1000, 10 ** 6, None):
                    keys = geo.launch_keys("packed", b, gemm=gemm, num_experts=e,
                                           num_routes=r, **kw)
                    own = (e is not None and r is not None
                           and e <= geo.SELF_PACK_MAX_EXPERTS and b <= mx
                           and geo.gemm_block_ctas(gemm, b) == 1
                           and geo.expected_active_experts(r, e) * tiles
                           <= geo.SELF_PACK_MAX_CTAS)
                    assert geo.self_packs(gemm, b, e, r, "silu", 96) == own
                    assert (keys[0] is None) == own and keys[1].self_pack == own
                    assert not keys[2].self_pack and keys[1].kernel == "fc1"
                    if not own:
                        assert keys[0].kernel == "route_pack"
    # qwen3-30b-a3b's fc1 on wgmma: 12 n-tiles, so up to 85 experts held: 136
    # routes (T = 17 at k = 8) hold 84.0 on average, 144 (T = 18) 86.6
    assert geo.self_packs("wgmma", 8, 128, 136, "silu", 768)
    assert not geo.self_packs("wgmma", 8, 128, 144, "silu", 768)
    assert not geo.self_packs("wgmma", 32, 128, 16, "silu", 768)
    assert not geo.self_packs("wgmma", 8, 257, 16, "silu", 768)
    assert all(k.kernel for k in geo.launch_keys("decode", None, gemm="mma", num_experts=8,
                                                   num_routes=2, **kw))
    caps = pymoe.Caps(max_tokens=64, top_k=2, num_experts=8, hidden_size=64,
                      intermediate_size=32, decode_max_tokens=0)
    reg, b, _ = caps.shapes_for(8)                          # mean 2 routes an expert
    assert (reg, b) == ("packed", 8)
    assert caps.launch_keys(reg, b, "wgmma", num_tokens=8)[0] is None
    assert caps.launch_keys(reg, b, "wgmma")[0].kernel == "route_pack"     # T not known
    reach = caps.reachable_keys(("wgmma",))
    assert None not in reach and any(k.self_pack for k in reach)
    assert any(k.kernel == "route_pack" for k in reach)     # the larger blocks still pack
    big = pymoe.Caps(max_tokens=64, top_k=8, num_experts=128, hidden_size=64,
                     intermediate_size=768, decode_max_tokens=0)
    reg, b, _ = big.shapes_for(8)                           # one bucket, both variants
    assert (reg, b) == ("packed", 8) and big.shapes_for(64)[1] == 8
    assert big.launch_keys(reg, b, "wgmma", num_tokens=8)[1].self_pack
    assert not big.launch_keys(reg, b, "wgmma", num_tokens=64)[1].self_pack
    fc1s = [k for k in big.reachable_keys(("wgmma",)) if k.kernel == "fc1" and k.block == 8]
    assert sorted(k.self_pack for k in fc1s) == [False, True]


def test_tiles_live_in_geometry():
    """Every key carries the tile its kernel uses (kernels read key.tile_n)."""
    kw = dict(format="mxfp4", dtype="bfloat16", hidden_size=64, intermediate_size=32,
              has_bias=False, router_on_input=False, swiglu_limit=None,
              swiglu_alpha=None, gemm="mma")
    for act, fc1_n in (("silu", geo.GEMM_TILE_ROWS // 2), ("relu2", geo.GEMM_TILE_ROWS)):
        _, k1, k2, kc = geo.launch_keys("packed", 8, activation=act, **kw)
        assert (k1.tile_n, k2.tile_n, kc.tile_n) == (fc1_n, geo.FC2_TILE_N,
                                                      geo.COMBINE_TILE_N)
        for b in geo.BLOCK_SIZES:                   # the v2 GEMM's CTA: more warpgroups,
            _, w1, w2, _ = geo.launch_keys("packed", b, activation=act,   # and blocks of
                                           **{**kw, "gemm": "wgmma"})     # 128 two m-tiles
            g = geo.gemm_warpgroups("wgmma", b)                           # a warpgroup
            mt = geo.gemm_m_tiles("wgmma", b)
            assert geo.gemm_reads_v2("wgmma", b) and not geo.gemm_reads_v2("mma", b)
            assert g == geo.WGMMA_V2_WARPGROUPS[b] and mt == g * geo.WGMMA_V2_MTILES[b]
            assert mt == (4 if b >= 128 else 2)
            assert (w1.tile_n, w2.tile_n) == (fc1_n * mt, geo.FC2_TILE_N * mt)
            assert geo.gemm_threads("wgmma", b) == geo.GEMM_THREADS * g
        d1, d2, dc = geo.launch_keys("decode", None, activation=act, **kw)
        half = geo.V2_TILE_ROWS // 2 if act == "silu" else geo.V2_TILE_ROWS
        assert (d1.tile_n, d2.tile_n, dc) == (half, geo.V2_TILE_ROWS, kc)
    assert geo.dequant_launch_key("w2", format="nvfp4", activation="silu", hidden_size=64,
                                  intermediate_size=32).tile_n == geo.DEQUANT_THREADS
    assert geo.padded_k(2880) == 2880 and geo.padded_k(40) == 64
    assert geo.gate_rows("silu", 24) == 24 and geo.gate_rows("relu2", 24) == 24
    assert geo.swiglu_params("swigluoai") == (geo.SWIGLUOAI_ALPHA, geo.SWIGLUOAI_LIMIT)
    assert geo.swiglu_params("silu", limit=5) == (None, 5.0)


def test_acc_route_stride_conflict_free():
    """The v2 accumulator tile's route stride: a warp's fragment store (lanes g =
    0..7 write rows g of routes 2t, t = 0..3) hits 32 distinct banks, and a route's
    rows stay 16-byte aligned for the epilogues' vector loads; the packed-row
    GEMMs keep their GEMM_TILE_ROWS."""
    for b in geo.BLOCK_SIZES:
        rows = geo.GEMM_TILE_ROWS * geo.gemm_m_tiles("wgmma", b)
        stride = geo.acc_route_words("wgmma", b)
        assert stride == rows + geo.ACC_PAD and stride % 4 == 0
        banks = {(2 * t * stride + g) % 32 for t in range(4) for g in range(8)}
        assert len(banks) == 32, b              # (a warp's first row only shifts them)
        for gemm in ("mma", "fma"):
            assert geo.acc_route_words(gemm, b) == geo.GEMM_TILE_ROWS


def test_decode_row_groups_and_grid():
    """Pairs of row tiles with an even row tile count (either format), else one;
    the grid shares the groups evenly, one wave of the CTAs an SM holds."""
    assert geo.decode_row_group(360) == geo.DECODE_ROW_GROUP == 2
    assert geo.decode_row_group(21) == 1
    assert geo.decode_ring_stages(360) * 2 == geo.decode_ring_stages(21)
    for which, kt in (("w13", 45), ("w2", 12), ("w2", 32)):
        conf = geo.decode_conf(which, kt)
        for tiles in (360, 180, 21):
            units = tiles // geo.decode_row_group(tiles)
            for routes, experts in ((4, 128), (32, 128), (256, 128), (8, 8)):
                gx, gy = geo.decode_grid(which, tiles, kt, routes, experts, 132)
                assert gy == min(routes, experts)
                per = -(-units // gx)
                assert (gx - 1) * per < units <= gx * per          # every CTA has work
                per_sm = conf.pair_ctas_per_sm if units < tiles else conf.ctas_per_sm
                assert gx * gy <= max(gy, per_sm * 132)
    # decode_fc1 narrow at any K; decode_fc2 wide from DECODE_WIDE_MIN_KTILES on
    assert geo.decode_conf("w13", 112) == geo.DECODE_NARROW
    assert geo.decode_conf("w2", geo.DECODE_WIDE_MIN_KTILES - 1) == geo.DECODE_NARROW
    assert geo.decode_conf("w2", geo.DECODE_WIDE_MIN_KTILES) == geo.DECODE_WIDE
    # qwen3-30b-a3b at T = 1: fc1's 96 row tiles (48 pairs) on 8 experts, 4 pair
    # CTAs an SM; deepseek-v3's fc2 (448 row tiles, 32 k-tiles) 3 wide CTAs an SM
    assert geo.decode_grid("w13", 96, 32, 8, 128, 132) == (48, 8)
    assert geo.decode_grid("w2", 448, 32, 8, 256, 132) == (45, 8)
    wide = geo.DECODE_WIDE
    assert wide.warps * 32 * wide.max_regs * wide.pair_ctas_per_sm <= 65536
    with pytest.raises(ValueError, match="which"):
        geo.decode_conf("w3", 8)


def test_route_pack_grid():
    """Whole rounds a tile, every CTA some routes, one CTA a ROUTE_PACK_TILE
    routes (balanced) up to ROUTE_PACK_MAX_CTAS: the tile is the fewest whole
    rounds that cover R on that many CTAs (which may then leave some idle)."""
    for r in (1, 255, 256, 1024, 1025, 4096 * 4, 8192 * 8, 10 ** 6):
        ctas, tile = geo.route_pack_grid(r)
        assert tile % geo.ROUTE_PACK_THREADS == 0
        want = min(-(-r // geo.ROUTE_PACK_TILE), geo.ROUTE_PACK_MAX_CTAS)
        per = -(-r // want)
        assert tile == -(-per // geo.ROUTE_PACK_THREADS) * geo.ROUTE_PACK_THREADS
        assert ctas <= want
        assert (ctas - 1) * tile < r <= ctas * tile
    assert geo.route_pack_grid(1000) == (1, 1024)


def test_blocks_of_128_from_a_mean_of_128_routes_on_every_gemm():
    """The automatic B follows BLOCK_MAX_MEAN: 8 up to a mean of 4 routes an
    expert, 16 up to 9, 24 up to 20, 32 up to 28, 48 up to 40, 64 up to 56, 128
    up to 120, 144 from there.  Every GEMM takes every B: the packed-row GEMMs
    (mma, fma) as CTAs of sub-blocks of PACKED_ROWS_MAX_BLOCK (48 at 144), so
    their fc1 / fc2 keys and tiles are those of 64."""
    means = {1: 8, 4: 8, 5: 16, 9: 16, 10: 24, 20: 24, 21: 32, 28: 32, 29: 48, 40: 48,
             41: 64, 56: 64, 57: 128, 120: 128, 121: 144, 5000: 144}
    for mean, b in means.items():
        assert geo.select_block_size(mean * 8, 2, 16) == b, mean       # T k / Eg = mean
    assert geo.block_size_ranges(4000, 4, 16, lo=1) == [
        (8, 1, 16), (16, 17, 36), (24, 37, 80), (32, 81, 112), (48, 113, 160),
        (64, 161, 224), (128, 225, 480), (144, 481, 4000)]
    kw = dict(format="mxfp4", activation="silu", dtype="bfloat16", hidden_size=64,
              intermediate_size=32, has_bias=False, router_on_input=False,
              swiglu_limit=None, swiglu_alpha=None)
    for gemm in geo.GEMMS:
        _, k1, k2, _ = geo.launch_keys("packed", 128, gemm=gemm, **kw)
        _, s1, s2, _ = geo.launch_keys("packed", 64, gemm=gemm, **kw)
        assert k1.block == k2.block == 128
        cta = geo.gemm_cta_block(gemm, 128)
        assert cta == (128 if gemm == "wgmma" else geo.PACKED_ROWS_MAX_BLOCK) and cta >= 64
        # blocks of 144: one CTA on wgmma, three CTAs of 48 on the packed-row GEMMs
        assert geo.gemm_cta_block(gemm, 144) == (144 if gemm == "wgmma" else 48)
        assert geo.gemm_block_ctas(gemm, 144) == (1 if gemm == "wgmma" else 3)
        if gemm != "wgmma":
            assert (k1.tile_n, k2.tile_n) == (s1.tile_n, s2.tile_n)
            assert geo.gemm_threads(gemm, 128) == geo.gemm_threads(gemm, 64)
            # mma's 128 capped so that 4 CTAs of 128 threads share an SM's registers
            assert geo.gemm_max_regs(gemm, 128) == (geo.MMA_MAX_REGS if gemm == "mma" else None)
            assert geo.gemm_max_regs(gemm, 64) is None
    assert geo.MMA_MAX_REGS * geo.gemm_threads("mma", 64) * 4 <= 64 * 1024
    # the v2 GEMM's caps by block; fc1 with the router weight on its input at
    # least WGMMA_V2_ROI_MIN_REGS, which keeps blocks of 32 at 3 CTAs an SM
    for b, cap in geo.WGMMA_V2_MAX_REGS.items():
        assert geo.gemm_max_regs("wgmma", b) == cap
        roi = geo.gemm_max_regs("wgmma", b, router_on_input=True)
        assert roi == (None if cap is None else max(cap, geo.WGMMA_V2_ROI_MIN_REGS))
    regs_sm, thr = 64 * 1024, geo.gemm_threads("wgmma", 32)
    assert (regs_sm // (geo.WGMMA_V2_ROI_MIN_REGS * thr)
            == regs_sm // (geo.WGMMA_V2_MAX_REGS[32] * thr) == 3)
    assert geo.gemm_max_regs("mma", 128, router_on_input=True) == geo.MMA_MAX_REGS


def test_default_decode_cut_follows_the_routed_weight_bytes():
    """Caps' default decode / packed cut: where T * top_k * expert bytes reaches
    DECODE_ROUTED_BYTES (measured: decode wins at T = 1 only on gpt-oss-120b
    and qwen3-30b-a3b, docs/performance.md step 21), clamped to
    DECODE_MIN_CUT..DECODE_MAX_TOKENS and the route cap."""
    from pymoe.presets import PRESETS

    def cut(name, fmt="mxfp4"):
        p = PRESETS[name]
        caps = pymoe.Caps(max_tokens=256, top_k=p.top_k, num_experts=p.num_experts,
                          hidden_size=p.hidden_size, intermediate_size=p.intermediate_size,
                          activation=p.activation, format=fmt)
        return caps.decode_cut

    assert geo.expert_weight_bytes("mxfp4", "silu", 2048, 768) == \
        (3 * 2048 * 768) // 2 + (3 * 2048 * 768) // 32
    assert geo.expert_weight_bytes("nvfp4", "relu2", 64, 32) == \
        (2 * 64 * 32) // 2 + (2 * 64 * 32) // 16
    assert cut("qwen3-30b-a3b") == 1
    assert cut("gpt-oss-120b") == geo.DECODE_MIN_CUT == 1
    assert cut("deepseek-v3") == geo.DECODE_MIN_CUT
    assert cut("tiny") == geo.DECODE_MAX_TOKENS
    # between the clamps: 8 experts of H 512, I 768 route ~5.0 MB a token
    per_token = 8 * geo.expert_weight_bytes("mxfp4", "silu", 512, 768)
    assert geo.default_decode_cut(8, "mxfp4", "silu", 512, 768) == \
        geo.DECODE_ROUTED_BYTES // per_token == 5
    # larger experts never move the cut up
    cuts = [geo.default_decode_cut(8, "mxfp4", "silu", h, 768) for h in range(256, 8192, 256)]
    assert cuts == sorted(cuts, reverse=True)
    # the route cap wins over the routed bytes
    assert geo.default_decode_cut(512, "mxfp4", "silu", 64, 64) == geo.decode_route_limit(512) == 2
    # a pin wins over the default
    p = PRESETS["qwen3-30b-a3b"]
    pinned = pymoe.Caps(max_tokens=256, top_k=p.top_k, num_experts=p.num_experts,
                        hidden_size=p.hidden_size, intermediate_size=p.intermediate_size,
                        decode_max_tokens=64)
    assert pinned.decode_cut == 64 and pinned.shapes_for(64)[0] == "decode"
    assert pinned.shapes_for(65)[0] == "packed"


def test_decode_keys_fold_mxfp4_scales_where_the_gemm_is_wgmma():
    """decode_fc1's MXFP4 key folds its scales where the call's GEMM is wgmma,
    decode_fc2's only on its wide CTA (launch_keys' rule); NVFP4 and the
    other GEMMs keep the table (the same key as before)."""
    def keys(fmt, gemm, i):
        return geo.launch_keys("decode", None, format=fmt, activation="silu",
                               dtype="bfloat16", hidden_size=2048, intermediate_size=i,
                               has_bias=False, router_on_input=False, swiglu_limit=None,
                               swiglu_alpha=None, gemm=gemm)
    for i, fc2 in ((768, False), (2048, True), (2880, True)):
        k1, k2, _ = keys("mxfp4", "wgmma", i)
        assert geo.decode_folds(k1) and geo.decode_folds(k2) == fc2, i
        assert (geo.decode_conf("w2", geo.v2_k_tiles(i)).warps
                > geo.DECODE_NARROW.warps) == fc2
        assert not any(geo.decode_folds(k) for k in keys("mxfp4", "mma", i)[:2])
        assert not any(geo.decode_folds(k) for k in keys("nvfp4", "wgmma", i)[:2])
        if not fc2:                  # the narrow decode_fc2's key is the table's either way
            assert keys("mxfp4", "mma", i)[1] == k2
