"""Planner: Caps validation, required_nbytes, reachable geometry, one arena, bind."""
import subprocess
import sys
import time

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pymoe
from pymoe import geometry as geo
from tests.problems import Case, make_problem

ACCEPT = dict(max_tokens=64, top_k=8, num_experts=160, hidden_size=6144,
              intermediate_size=512, dtype="bfloat16", activation="silu")


@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
def test_acceptance_case_fits_30_mib(fmt):
    caps = pymoe.Caps(format=fmt, **ACCEPT)
    p = pymoe.plan(caps)
    print(p.describe())
    n = pymoe.required_nbytes(caps)
    assert n == p.scratch_nbytes
    assert n <= 30.03 * 2**20, f"{n / 2**20:.2f} MiB"
    # the decode regime ends where the routed weight bytes reach
    # geometry.DECODE_ROUTED_BYTES (~40 MB a token here: T = 1); packed after it
    per_token = 8 * geo.expert_weight_bytes(fmt, "silu", 6144, 512)
    assert caps.decode_cut == max(geo.DECODE_MIN_CUT, geo.DECODE_ROUTED_BYTES // per_token)
    buckets = caps.buckets()
    assert buckets[0] == ("decode", None, 1, caps.decode_cut)
    assert [b[0] for b in buckets[1:]] == ["packed"] * (len(buckets) - 1)
    assert buckets[-1][3] == 64
    assert geo.reachable_block_sizes(64, 8, 160, cut=caps.decode_cut) == \
        tuple(b[1] for b in buckets[1:])
    pinned = pymoe.Caps(format=fmt, block_size_m=geo.BLOCK_SIZES[-1], **ACCEPT)
    assert [b[1] for b in pinned.buckets()[1:]] == [geo.BLOCK_SIZES[-1]]
    # every T decode (the cut pinned at 64): intermediate + route_out per route
    all_decode = pymoe.Caps(format=fmt, decode_max_tokens=64, **ACCEPT)
    assert [b[0] for b in all_decode.buckets()] == ["decode"]
    n = pymoe.required_nbytes(all_decode)
    assert 64 * 8 * (512 * 2 + 6144 * 4) <= n <= 30.03 * 2**20, f"{n / 2**20:.2f} MiB"


def test_required_nbytes_is_fast():
    from pymoe.plan import _layout
    caps = pymoe.Caps(**ACCEPT)
    t0 = time.perf_counter()
    for _ in range(200):
        _layout.cache_clear()
        pymoe.required_nbytes(caps)
    per = (time.perf_counter() - t0) / 200
    assert per < 1e-3, f"{per * 1e6:.0f} us"


def test_required_nbytes_without_numba_and_cupy():
    code = (
        "import sys, time\n"
        "for m in ('numba', 'numba.cuda', 'cupy', 'torch'): sys.modules[m] = None\n"
        "import pymoe\n"
        "from pymoe.plan import _layout\n"
        f"c = pymoe.Caps(**{ACCEPT!r})\n"
        "t = time.perf_counter(); n = pymoe.required_nbytes(c); dt = time.perf_counter() - t\n"
        "assert n == pymoe.plan(c).scratch_nbytes\n"
        "print(n, dt)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    n, dt = r.stdout.split()
    assert int(n) > 0 and float(dt) < 1e-3


def test_ep_plan_uses_global_expert_space():
    local = pymoe.Caps(max_tokens=512, top_k=8, num_experts=16, hidden_size=256,
                       intermediate_size=128)
    ep = pymoe.Caps(max_tokens=512, top_k=8, num_experts=16, hidden_size=256,
                    intermediate_size=128, global_num_experts=256)
    # routes spread over 256 global experts: smaller blocks than 16 local experts imply
    assert geo.reachable_block_sizes(512, 8, 256) != geo.reachable_block_sizes(512, 8, 16)
    assert pymoe.required_nbytes(ep) < pymoe.required_nbytes(local)
    assert pymoe.plan(ep).tensor("packed", "expert_offsets").shape == (17,)


def test_arena_is_max_not_sum():
    caps = pymoe.Caps(max_tokens=300, top_k=4, num_experts=64, hidden_size=128,
                      intermediate_size=64)
    p = pymoe.plan(caps)
    per_regime = {}
    for t in p.layout:
        per_regime[t.regime] = max(per_regime.get(t.regime, 0), t.offset + t.nbytes)
    assert p.scratch_nbytes < sum(per_regime.values()) + 2 * geo.ALIGN
    assert p.scratch_nbytes >= max(per_regime.values())
    assert len(geo.reachable_block_sizes(300, 4, 64)) > 1
    for t in p.layout:
        assert t.offset % geo.ALIGN == 0
    assert "MiB" in p.describe()


caps_strategy = st.builds(
    lambda mt, k, e, h, i, fmt, act, pin, g, cut: pymoe.Caps(
        max_tokens=mt, top_k=min(k, e), num_experts=e, hidden_size=h * 16,
        intermediate_size=i * 16, format=fmt, activation=act, block_size_m=pin,
        global_num_experts=None if g == 0 else e + g,
        decode_max_tokens=None if cut is None else min(cut, 1024 // min(k, e))),
    st.integers(1, 200), st.integers(1, 8), st.integers(1, 300), st.integers(1, 64),
    st.integers(1, 64), st.sampled_from(geo.FORMATS), st.sampled_from(geo.ACTIVATIONS),
    st.sampled_from([None, None, *geo.BLOCK_SIZES]), st.sampled_from([0, 0, 7, 100]),
    st.sampled_from([None, None, 0, 1, 5, 130]))


@settings(max_examples=1500, deadline=None)
@given(caps_strategy)
def test_every_T_fits_its_planned_tensors(caps):
    p = pymoe.plan(caps)
    planned = {(t.regime, t.name): t for t in p.layout}
    for t in range(1, caps.max_tokens + 1):
        reg, b, shapes = caps.shapes_for(t)
        if reg == "packed":
            assert b in geo.reachable_block_sizes(caps.max_tokens, caps.top_k,
                                                  caps.num_route_experts, caps.block_size_m,
                                                  caps.decode_cut)
        for ts in shapes:
            pt = planned[(reg, ts.name)]
            assert all(a <= b_ for a, b_ in zip(ts.shape, pt.shape)), (t, ts, pt)
            assert pt.offset + ts.nbytes <= p.scratch_nbytes
    bigger = pymoe.Caps(**{**caps.__dict__, "max_tokens": caps.max_tokens + 1})
    assert pymoe.required_nbytes(bigger) >= pymoe.required_nbytes(caps)


@pytest.mark.parametrize("field,value,exc,match", [
    ("max_tokens", 0, ValueError, r"Caps.max_tokens=0: must be >= 1"),
    ("max_tokens", 2.5, TypeError, r"Caps.max_tokens=2.5: expected an int"),
    ("top_k", 9, ValueError, r"Caps.top_k=9: must be <= the number of experts"),
    ("format", "int4", ValueError, r"Caps.format='int4': expected one of \('mxfp4', 'nvfp4'\)"),
    ("activation", "gelu", ValueError, r"Caps.activation='gelu': expected one of"),
    ("dtype", "float32", ValueError, r"Caps.dtype='float32': expected one of"),
    ("w13_layout", "x", ValueError, r"Caps.w13_layout='x'"),
    ("hidden_size", 20, ValueError, r"Caps.hidden_size=20: must be a multiple of 8"),
    ("block_size_m", 12, ValueError, r"Caps.block_size_m=12: expected None or one of"),
    ("global_num_experts", 4, ValueError, r"Caps.global_num_experts=4 < num_experts=8"),
    ("decode_max_tokens", -1, ValueError, r"Caps.decode_max_tokens=-1: expected None .* "
     r"0\.\.512 \(T \* top_k <= 1024 routes\)"),
    ("decode_max_tokens", 513, ValueError, r"Caps.decode_max_tokens=513"),
    ("decode_max_tokens", True, ValueError, r"Caps.decode_max_tokens=True"),
    ("apply_router_weight_on_input", 1, TypeError, r"apply_router_weight_on_input=1"),
])
def test_caps_validation(field, value, exc, match):
    kw = dict(max_tokens=8, top_k=2, num_experts=8, hidden_size=64, intermediate_size=32)
    kw[field] = value
    with pytest.raises(exc, match=match):
        pymoe.Caps(**kw)


def test_required_nbytes_type_error():
    with pytest.raises(TypeError, match="required_nbytes takes a pymoe.Caps, got dict"):
        pymoe.required_nbytes(dict(ACCEPT))
    with pytest.raises(TypeError, match="plan takes a pymoe.Caps"):
        pymoe.plan(None)


# ------------------------------------------------------------------ bind

@pytest.fixture
def bound():
    prob = make_problem(Case(20, 64, 32, 4, 2, seed=5))
    caps = pymoe.Caps.for_weights(prob.experts, max_tokens=24, top_k=2)
    p = pymoe.plan(caps)
    return prob, p, np.empty(p.scratch_nbytes, np.uint8)


def test_bind_runs_every_T_on_one_scratch(bound):
    prob, p, scratch = bound
    for t in (1, 3, 8, 9, 20):
        b = p.bind(scratch=scratch, x=prob.x[:t], experts=prob.experts,
                   topk_weights=prob.topk_weights[:t], topk_ids=prob.topk_ids[:t])
        for v in b.views.values():
            assert np.shares_memory(v, scratch)              # views, no allocation
        y = pymoe.run(b)
        want = pymoe.fused_moe(prob.x[:t], prob.experts, prob.topk_weights[:t],
                               prob.topk_ids[:t])
        np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))
    out = np.full_like(prob.x, np.nan)
    b = p.bind(scratch=scratch, x=prob.x, experts=prob.experts,
               topk_weights=prob.topk_weights, topk_ids=prob.topk_ids, out=out)
    assert pymoe.run(b) is out and np.isfinite(out.astype(np.float32)).all()


@pytest.mark.parametrize("cut", [0, 1, 9, 24])
def test_pinned_regime_cut_runs_every_T(cut):
    """Caps.decode_max_tokens moves the decode / packed cut (0: every T packed,
    T = 1 included); the reference gives the same bits either way."""
    prob = make_problem(Case(24, 64, 32, 4, 2, seed=3))
    caps = pymoe.Caps.for_weights(prob.experts, max_tokens=24, top_k=2,
                                  decode_max_tokens=cut)
    assert [r for r, *_ in caps.buckets()] == (["decode"] if cut else []) + \
        (["packed"] * len([b for r, b, _, _ in caps.buckets() if r == "packed"]))
    p = pymoe.plan(caps)
    scratch = np.empty(p.scratch_nbytes, np.uint8)
    for t in (1, 2, 9, 10, 24):
        b = p.bind(scratch=scratch, x=prob.x[:t], experts=prob.experts,
                   topk_weights=prob.topk_weights[:t], topk_ids=prob.topk_ids[:t])
        assert b.regime == ("decode" if t <= cut else "packed"), (cut, t)
        want = pymoe.fused_moe(prob.x[:t], prob.experts, prob.topk_weights[:t],
                               prob.topk_ids[:t])
        np.testing.assert_array_equal(pymoe.run(b).view(np.uint16), want.view(np.uint16))
    if cut == 0:
        assert "decode" not in p.describe()


def test_bind_errors(bound):
    prob, p, scratch = bound
    ok = dict(scratch=scratch, x=prob.x, experts=prob.experts,
              topk_weights=prob.topk_weights, topk_ids=prob.topk_ids)

    def bad(match, exc=ValueError, **kw):
        with pytest.raises(exc, match=match):
            p.bind(**{**ok, **kw})

    bad(f"scratch has {p.scratch_nbytes - 1} bytes, requires {p.scratch_nbytes}",
        scratch=scratch[:-1])
    bad("scratch: expected a 1-D uint8 array", TypeError, scratch=scratch.view(np.int32))
    big = np.zeros((25, 64), ml_dtypes.bfloat16)
    bad("x: T=25 tokens exceeds Caps.max_tokens=24", x=big)
    bad(r"x: dtype float16, expected bfloat16", TypeError, x=prob.x.astype(np.float16))
    bad(r"x: shape \(20, 32\), expected \[T, 64\]", x=prob.x[:, :32].copy())
    bad("x: must be C-contiguous", x=np.asfortranarray(prob.x))
    bad(r"topk_ids: shape \(20, 3\), expected \(20, 2\)",
        topk_ids=np.zeros((20, 3), np.int32))
    bad("topk_ids: dtype float32, expected int32 or int64", TypeError,
        topk_ids=prob.topk_ids.astype(np.float32))
    bad("topk_weights: dtype float64, expected float32", TypeError,
        topk_weights=prob.topk_weights.astype(np.float64))
    bad(r"out: shape \(19, 64\), expected \(20, 64\)", out=prob.x[:19].copy())
    bad("out: dtype float32, expected bfloat16", TypeError,
        out=np.zeros((20, 64), np.float32))
    bad("experts: expected pymoe.ExpertWeights", TypeError, experts=object())
    other = make_problem(Case(4, 64, 32, 5, 2)).experts
    bad(r"experts.num_experts=5 but Caps.num_experts=4", experts=other)


def test_expert_map_validation():
    prob = make_problem(Case(10, 64, 32, 4, 2, ep=True))
    caps = pymoe.Caps.for_weights(prob.experts, max_tokens=10, top_k=2,
                                  global_num_experts=8)
    p = pymoe.plan(caps)
    s = np.empty(p.scratch_nbytes, np.uint8)
    kw = dict(scratch=s, x=prob.x, experts=prob.experts, topk_weights=prob.topk_weights,
              topk_ids=prob.topk_ids)
    with pytest.raises(ValueError, match="expert_map is required"):
        p.bind(**kw)
    with pytest.raises(ValueError, match=r"expert_map: shape \(4,\), expected \(8,\)"):
        p.bind(**kw, expert_map=np.arange(4, dtype=np.int32))
    with pytest.raises(TypeError, match="expert_map: dtype float32, expected int32 or int64"):
        p.bind(**kw, expert_map=prob.expert_map.astype(np.float32))
    y64 = pymoe.run(p.bind(**kw, expert_map=prob.expert_map.astype(np.int64)))   # like ids
    dup = np.array([0, 0, 1, 2, -1, -1, -1, -1], np.int32)
    with pytest.raises(ValueError, match="expert_map: local expert 0 appears 2 times"):
        p.bind(**kw, expert_map=dup)
    b = p.bind(**kw, expert_map=prob.expert_map)
    y = pymoe.run(b)
    assert y.shape == prob.x.shape
    np.testing.assert_array_equal(y.view(np.uint16), y64.view(np.uint16))


def test_cli_plan():
    r = subprocess.run([sys.executable, "-m", "pymoe", "plan", "--preset", "gpt-oss-120b",
                        "--max-tokens", "64", "--block-size", "8"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "route_out" in r.stdout and "MiB" in r.stdout


def test_packed_tensor_core_gemms_refuse_a_misaligned_x():
    """x starting at an odd 16-bit element: the packed regime's mma / wgmma GEMMs
    read it as 32-bit words and would fault, so bind refuses it by name (this is
    the check bind runs on device arrays); decode and the fma GEMM take it."""
    from pymoe.plan import check_x_words
    kw = dict(format="mxfp4", activation="silu", dtype="bfloat16", hidden_size=64,
              intermediate_size=32, has_bias=False, router_on_input=False,
              swiglu_limit=None, swiglu_alpha=None)
    buf = np.zeros(2 * 64 + 2, np.uint16)
    assert buf.ctypes.data % 4 == 0
    odd, even = buf[1:129].reshape(2, 64), buf[2:130].reshape(2, 64)
    for gemm in ("mma", "wgmma"):
        keys = geo.launch_keys("packed", 8, gemm=gemm, **kw)
        with pytest.raises(ValueError, match=r"x: data pointer 0x[0-9a-f]+ is not 4-byte "
                                             rf"aligned; the packed regime's {gemm} GEMM"):
            check_x_words(odd, "packed", keys)
        check_x_words(even, "packed", keys)
    check_x_words(odd, "packed", geo.launch_keys("packed", 8, gemm="fma", **kw))
    check_x_words(odd, "decode", geo.launch_keys("decode", None, gemm="mma", **kw))


def test_auto_gemm_choice_by_device_and_weights():
    """PYMOE_GEMM=auto (the default): wgmma on sm_90 where the weights' MXFP4
    scales fold exactly, mma elsewhere; scales not yet known (prewarm without the
    weights) give every GEMM they could select.  An explicit wgmma on another GPU,
    or on scales it cannot fold, raises naming the way out."""
    pick = geo.pick_gemm
    assert pick("auto", None, "mxfp4", "bfloat16", None) == ("mma",)      # no device
    assert pick("auto", (8, 9), "mxfp4", "bfloat16", (120, 130)) == ("mma",)
    assert pick("auto", (10, 0), "nvfp4", "bfloat16", None) == ("mma",)   # no wgmma on sm_100
    assert pick("auto", (9, 0), "mxfp4", "bfloat16", (3, 136)) == ("wgmma",)
    assert pick("auto", (9, 0), "mxfp4", "bfloat16", (3, 137)) == ("mma",)
    assert pick("auto", (9, 0), "mxfp4", "bfloat16", (2, 136)) == ("mma",)
    assert pick("auto", (9, 0), "mxfp4", "float16", (104, 128)) == ("wgmma",)
    assert pick("auto", (9, 0), "mxfp4", "float16", (103, 128)) == ("mma",)
    assert pick("auto", (9, 0), "mxfp4", "float16", (104, 129)) == ("mma",)
    assert pick("auto", (9, 0), "nvfp4", "float16", (0, 254)) == ("wgmma",)
    assert pick("auto", (9, 0), "mxfp4", "float16", None) == ("wgmma", "mma")
    assert pick("auto", (9, 0), "nvfp4", "float16", None) == ("wgmma",)
    for v in ("mma", "fma"):
        assert pick(v, (9, 0), "mxfp4", "float16", (0, 254)) == (v,)
    assert pick("wgmma", (9, 0), "mxfp4", "bfloat16", None) == ("wgmma",)
    with pytest.raises(ValueError, match=r"PYMOE_GEMM=wgmma needs an sm_90 GPU .* sm_89"):
        pick("wgmma", (8, 9), "mxfp4", "bfloat16", (120, 130))
    with pytest.raises(ValueError, match=r"bytes 104\.\.128 .* span 100\.\.130"):
        pick("wgmma", (9, 0), "mxfp4", "float16", (100, 130))
    with pytest.raises(ValueError, match="gemm variant 'hgmma'"):
        pick("hgmma", (9, 0), "mxfp4", "float16", None)


def test_reachable_keys_cover_each_gemm_once(monkeypatch):
    """What prewarm resolves: each packed bucket's route_pack / fc1 / fc2 /
    combine for every GEMM asked (shared keys once), decode's keys once for
    each way MXFP4 scales go (folded where the GEMM is wgmma:
    geometry.decode_folds; NVFP4's decode keys are one)."""
    monkeypatch.delenv("PYMOE_GEMM", raising=False)
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    caps = pymoe.Caps(max_tokens=600, top_k=2, num_experts=64, hidden_size=64,
                      intermediate_size=32)
    one = caps.reachable_keys(("wgmma",))
    two = caps.reachable_keys(("wgmma", "mma"))
    packed = [b for r, b, _, _ in caps.buckets() if r == "packed"]
    assert len(packed) > 1
    fc = lambda keys, g: sorted(k.block for k in keys if k.kernel in ("fc1", "fc2")
                                and k.gemm == g)
    assert fc(one, "wgmma") == fc(two, "wgmma") == fc(two, "mma") == sorted(packed * 2)
    assert fc(one, "mma") == []
    dec = lambda keys: sorted((k.kernel, k.gemm) for k in keys if k.kernel.startswith("decode"))
    # (I = 32: one k-tile, a narrow decode_fc2, which keeps the table either way)
    assert dec(one) == [("decode_fc1", "wgmma"), ("decode_fc2", "")]
    assert dec(two) == [("decode_fc1", ""), ("decode_fc1", "wgmma"), ("decode_fc2", "")]
    assert len(two) == len(one) + 2 * len(packed) + 1
    assert len(set(two)) == len(two)
    nv = pymoe.Caps(max_tokens=600, top_k=2, num_experts=64, hidden_size=64,
                    intermediate_size=32, format="nvfp4")
    assert dec(nv.reachable_keys(("wgmma", "mma"))) == [("decode_fc1", ""), ("decode_fc2", "")]
    assert caps.launch_keys("packed", 8)[1].gemm == "mma"      # auto, seen from no device
    # blocks of 128 (auto from a mean of 57 routes an expert): every GEMM takes
    # them, wgmma in one CTA, the packed-row GEMMs as CTAs of sub-blocks
    wide = pymoe.Caps(max_tokens=600, top_k=2, num_experts=8, hidden_size=64,
                      intermediate_size=32)
    assert wide.block_size_for(225) == 128 and wide.block_size_for(224) == 64  # ceil(T k / E)
    assert wide.launch_keys("packed", 128)[1].gemm == "mma"      # auto, seen from no device
    assert {k.gemm for k in wide.reachable_keys(("wgmma", "mma")) if k.gemm} == {"wgmma",
                                                                               "mma"}
    assert [geo.gemm_cta_block(g, 128) for g in ("wgmma", "mma", "fma")] == [128, 64, 64]
    assert [geo.gemm_cta_block(g, 32) for g in ("wgmma", "mma", "fma")] == [32, 32, 32]
    with pytest.raises(ValueError, match=r"block=96: the block GEMMs take blocks of"):
        geo.launch_keys("packed", 96, gemm="mma", format="mxfp4", activation="silu",
                        dtype="bfloat16", hidden_size=64, intermediate_size=32,
                        has_bias=False, router_on_input=False, swiglu_limit=None,
                        swiglu_alpha=None)


def test_check_packed_rows_refuses_gemms_that_read_them():
    """Weights uploaded without the packed rows (to_device(packed_rows=False)):
    bind refuses a call whose fc1 / fc2 GEMM reads them (mma, fma), naming the
    GEMM, the block and the way out; the decode kernels and the wgmma GEMM at
    every block (layout v2) pass, as do full uploads."""
    from types import SimpleNamespace
    from pymoe.plan import check_packed_rows
    kw = dict(format="mxfp4", activation="silu", dtype="bfloat16", hidden_size=64,
              intermediate_size=32, has_bias=False, router_on_input=False,
              swiglu_limit=None, swiglu_alpha=None)
    lean = SimpleNamespace(has_packed_rows=False)
    full = SimpleNamespace(has_packed_rows=True)
    for b in geo.BLOCK_SIZES:
        check_packed_rows(lean, geo.launch_keys("packed", b, gemm="wgmma", **kw))
    check_packed_rows(lean, geo.launch_keys("decode", None, gemm="mma", **kw))
    for gemm, b in (("mma", 8), ("fma", 64), ("mma", 64)):
        keys = geo.launch_keys("packed", b, gemm=gemm, **kw)
        check_packed_rows(full, keys)
        with pytest.raises(ValueError, match=rf"packed_rows=False .* fc1 runs the {gemm} "
                                             rf"GEMM at block {b}, which reads the packed"):
            check_packed_rows(lean, keys)
