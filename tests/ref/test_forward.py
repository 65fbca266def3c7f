"""Reference forward pass vs an independent float64 evaluation (tests/oracle.py)."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pymoe
from pymoe.testing import assert_close
from tests.problems import Case, make_problem, oracle

FAMILIES = [
    Case(5, 64, 32, 4, 2, why="decode regime, tiny"),
    Case(40, 64, 32, 4, 2, why="packed regime"),
    Case(33, 40, 24, 7, 3, why="prime E, H and I not multiples of 32 (partial groups)"),
    Case(1, 128, 64, 8, 8, why="k = E"),
    Case(20, 64, 32, 8, 2, one_expert=True, why="one expert takes every token"),
    Case(20, 64, 32, 8, 2, empty_expert=True, why="an empty expert"),
    Case(17, 64, 32, 4, 2, invalid=(-1, 4, 99), why="invalid ids contribute 0"),
    Case(3, 64, 32, 4, 2, invalid=(-1, 4, 99), why="invalid ids in decode"),
    Case(12, 64, 32, 4, 4, invalid=(-1,) , why="invalid ids, packed"),
    Case(24, 64, 32, 4, 1, on_input=True, why="router weight on the input"),
    Case(4, 64, 32, 4, 2, on_input=True, why="router weight on the input, decode"),
    Case(20, 64, 32, 4, 2, ep=True, why="expert parallel: half the ids mapped to -1"),
]


def _params():
    out = []
    for c in FAMILIES:
        out.append(c)
    for act in ("silu", "swigluoai", "relu2"):
        for fmt in ("mxfp4", "nvfp4"):
            for dt in ("bfloat16", "float16"):
                for T in (6, 30):
                    out.append(Case(T, 64, 48, 5, 2, dtype=dt, format=fmt, activation=act,
                                    bias=True, seed=T))
    for layout in ("up_gate", "interleaved"):
        out.append(Case(20, 64, 32, 4, 2, layout=layout, bias=True, activation="swigluoai"))
    return out


@pytest.mark.parametrize("case", _params(), ids=str)
def test_ref_matches_float64(case):
    p = make_problem(case)
    y = pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids, expert_map=p.expert_map,
                        apply_router_weight_on_input=case.on_input)
    assert y.dtype == p.x.dtype and y.shape == p.x.shape
    want = oracle(p)
    assert_close(y.astype(np.float64), want, dtype=case.dtype, what=str(case))


def test_invalid_routes_contribute_exactly_zero():
    c = Case(12, 64, 32, 4, 2, seed=3)
    p = make_problem(c)
    y0 = pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids)
    ids = p.topk_ids.copy()
    ids[:, 1] = np.array([-1, 4, 99, -7] * 3, np.int32)
    w = p.topk_weights.copy()
    w[:, 1] = np.nan                 # an invalid route's weight must not leak
    y1 = pymoe.fused_moe(p.x, p.experts, w, ids)
    ids_only0 = p.topk_ids.copy()
    ids_only0[:, 1] = -1
    y2 = pymoe.fused_moe(p.x, p.experts, p.topk_weights, ids_only0)
    assert np.isfinite(y1.astype(np.float32)).all()
    np.testing.assert_array_equal(y1.view(np.uint16), y2.view(np.uint16))
    assert not np.array_equal(y0.view(np.uint16), y1.view(np.uint16))


@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
@pytest.mark.parametrize("T", [5, 40])
def test_layouts_bit_exact(fmt, T):
    """The same weights prepared from three w13 layouts give bit-identical y."""
    rng = np.random.default_rng(7)
    E, H, I = 4, 64, 32
    gate = rng.standard_normal((E, I, H)).astype(np.float32)
    up = rng.standard_normal((E, I, H)).astype(np.float32)
    bg, bu = rng.standard_normal((2, E, I)).astype(np.float32)
    w2 = rng.standard_normal((E, H, I)).astype(np.float32)
    lay = {
        "gate_up": (np.concatenate([gate, up], 1), np.concatenate([bg, bu], 1)),
        "up_gate": (np.concatenate([up, gate], 1), np.concatenate([bu, bg], 1)),
        "interleaved": (np.stack([gate, up], 2).reshape(E, 2 * I, H),
                        np.stack([bg, bu], 2).reshape(E, 2 * I)),
    }
    x = rng.standard_normal((T, H)).astype(ml_dtypes.bfloat16)
    w, ids = pymoe.route_topk(rng.standard_normal((T, E)), 2)
    ys = {}
    for name, (w13, b13) in lay.items():
        ew = pymoe.prepare_weights(w13, w2, format=fmt, w13_layout=name, w13_bias=b13,
                                   activation="swigluoai")
        ys[name] = pymoe.fused_moe(x, ew, w, ids).view(np.uint16)
    np.testing.assert_array_equal(ys["gate_up"], ys["up_gate"])
    np.testing.assert_array_equal(ys["gate_up"], ys["interleaved"])


def test_float_and_packed_prepare_agree():
    rng = np.random.default_rng(1)
    w13 = rng.standard_normal((3, 64, 40)).astype(np.float32)
    w2 = rng.standard_normal((3, 40, 32)).astype(np.float32)
    a = pymoe.prepare_weights(w13, w2)
    q13, s13 = pymoe.quantize_mxfp4(w13)
    q2, s2 = pymoe.quantize_mxfp4(w2)
    b = pymoe.prepare_weights(q13, q2, w13_scales=s13, w2_scales=s2)
    for n in ("w13", "w13_scales", "w2", "w2_scales"):
        np.testing.assert_array_equal(getattr(a, n), getattr(b, n))


def test_uint16_bits_and_ml_dtypes_bf16_agree():
    p = make_problem(Case(10, 64, 32, 4, 2))
    y = pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids)
    yb = pymoe.fused_moe(p.x.view(np.uint16), p.experts, p.topk_weights, p.topk_ids)
    assert yb.dtype == np.uint16
    np.testing.assert_array_equal(y.view(np.uint16), yb)


def test_zero_tokens():
    p = make_problem(Case(0, 64, 32, 4, 2))
    y = pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids)
    assert y.shape == (0, 64)


def test_nan_propagates_like_ieee():
    p = make_problem(Case(4, 64, 32, 4, 1))
    x = p.x.copy()
    x[2, 5] = np.nan
    y = pymoe.fused_moe(x, p.experts, p.topk_weights, p.topk_ids).astype(np.float32)
    assert np.isnan(y[2]).all() and np.isfinite(np.delete(y, 2, 0)).all()


def test_route_topk():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((9, 6)).astype(np.float32)
    w, ids = pymoe.route_topk(logits, 3)
    assert ids.dtype == np.int32 and w.dtype == np.float32
    np.testing.assert_allclose(w.sum(1), 1, rtol=1e-6)
    ref_ids = np.argsort(-logits, 1, kind="stable")[:, :3]
    np.testing.assert_array_equal(ids, ref_ids)
    top = np.take_along_axis(logits, ref_ids, 1).astype(np.float64)
    sm = np.exp(top - top.max(1, keepdims=True))
    np.testing.assert_allclose(w, sm / sm.sum(1, keepdims=True), rtol=1e-5)
    w2, _ = pymoe.route_topk(logits, 3, renormalize=False)
    full = np.exp(logits - logits.max(1, keepdims=True))
    full /= full.sum(1, keepdims=True)
    np.testing.assert_allclose(w2, np.take_along_axis(full, ref_ids, 1), rtol=1e-5)


@settings(max_examples=25)
@given(st.integers(0, 10_000), st.sampled_from([1, 3, 9, 20]), st.sampled_from([2, 5]),
       st.sampled_from(["silu", "relu2", "swigluoai"]))
def test_ref_property(seed, T, E, act):
    c = Case(T, 48, 24, E, min(2, E), activation=act, seed=seed, bias=seed % 2 == 0)
    p = make_problem(c)
    y = pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids)
    assert_close(y.astype(np.float64), oracle(p), dtype=c.dtype, what=str(c))
