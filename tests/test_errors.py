"""Bad input raises ValueError/TypeError naming the argument, before any work."""
import numpy as np
import pytest

import pymoe
from tests.problems import Case, make_problem

rng = np.random.default_rng(0)
W13 = rng.standard_normal((4, 64, 64)).astype(np.float32)
W2 = rng.standard_normal((4, 64, 32)).astype(np.float32)


@pytest.mark.parametrize("kw,exc,match", [
    (dict(format="int4"), ValueError, r"format='int4': expected one of"),
    (dict(activation="gelu"), ValueError, r"activation='gelu'"),
    (dict(w13_layout="bad"), ValueError, r"w13_layout='bad'"),
    (dict(w13=W13[:, :48]), ValueError, r"w13: shape \(4, 48, 64\), expected \(4, 64, 64\)"),
    (dict(w13=W13[..., :60], w2=W2[:, :60]), ValueError, r"w13: K=60 .* multiple of 8"),
    (dict(w13=W13.astype(np.int32)), TypeError, r"w13: dtype int32, expected a float"),
    (dict(w13_bias=np.zeros((4, 63))), ValueError, r"w13_bias: shape \(4, 63\)"),
    (dict(w2_bias=np.zeros((4, 32))), ValueError, r"w2_bias: shape \(4, 32\)"),
    (dict(w13_scales=np.zeros((4, 64, 2), np.uint8)), ValueError, r"w13_scales given with float"),
    (dict(activation="relu2", w13_layout="interleaved", w13=W13[:, :32]), ValueError,
     r"w13_layout='interleaved' needs a gated activation"),
    (dict(format="nvfp4", w13=W13[..., :56], w2=W2[:, :56]), ValueError,
     r"w13: K=56 .* multiple of 16 for nvfp4"),
])
def test_prepare_weights_errors(kw, exc, match):
    args = dict(w13=W13, w2=W2)
    args.update(kw)
    with pytest.raises(exc, match=match):
        pymoe.prepare_weights(args.pop("w13"), args.pop("w2"), **args)


def test_packed_scale_errors():
    q13, s13 = pymoe.quantize_mxfp4(W13)
    q2, s2 = pymoe.quantize_mxfp4(W2)
    with pytest.raises(ValueError, match=r"w13_scales: shape \(4, 64, 1\), expected \(4, 64, 2\)"):
        pymoe.prepare_weights(q13, q2, w13_scales=s13[..., :1], w2_scales=s2)
    with pytest.raises(ValueError, match="w2_scales is required"):
        pymoe.prepare_weights(q13, q2, w13_scales=s13)
    with pytest.raises(TypeError, match=r"w13_scales: dtype float32 is not scale bytes"):
        pymoe.prepare_weights(q13, q2, w13_scales=s13.astype(np.float32), w2_scales=s2)
    with pytest.raises(TypeError, match=r"w13 dtype uint8 and w2 dtype float32"):
        pymoe.prepare_weights(q13, W2, w13_scales=s13)
    with pytest.raises(ValueError, match=r"w13: shape \(4, 64, 16\) gives H=32"):
        pymoe.prepare_weights(q13[..., :16], q2, w13_scales=s13, w2_scales=s2)
    # padded scale rows (ModelOpt/CT pad to a multiple of 64) are read as they are
    pad = np.concatenate([s13, np.full((4, 64, 3), 200, np.uint8)], axis=2)
    ew = pymoe.prepare_weights(q13, q2, w13_scales=pad, w2_scales=s2)
    np.testing.assert_array_equal(ew.w13_scales, s13)
    q13n, s13n, g13 = pymoe.quantize_nvfp4(W13)
    q2n, s2n, g2 = pymoe.quantize_nvfp4(W2)
    with pytest.raises(ValueError, match="w13_global is required"):
        pymoe.prepare_weights(q13n, q2n, format="nvfp4", w13_scales=s13n, w2_scales=s2n)
    with pytest.raises(ValueError, match=r"w2_global: shape \(3,\), expected \(4,\)"):
        pymoe.prepare_weights(q13n, q2n, format="nvfp4", w13_scales=s13n, w2_scales=s2n,
                              w13_global=g13, w2_global=g2[:3])
    for bad in (0.0, -1.0, np.inf, np.nan):
        g = g2.copy()
        g[2] = bad
        with pytest.raises(ValueError, match=r"w2_global: global scales must be finite and "
                                             r"> 0, got .* at index \(2,\)"):
            pymoe.prepare_weights(q13n, q2n, format="nvfp4", w13_scales=s13n,
                                  w2_scales=s2n, w13_global=g13, w2_global=g)


def test_fused_moe_errors():
    p = make_problem(Case(6, 64, 32, 4, 2))
    ok = (p.x, p.experts, p.topk_weights, p.topk_ids)
    with pytest.raises(ValueError, match=r"topk_ids: shape \(5, 2\), expected \(6, 2\)"):
        pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids[:5])
    with pytest.raises(ValueError, match=r"topk_weights: shape \(6, 1\), expected \(6, 2\)"):
        pymoe.fused_moe(p.x, p.experts, p.topk_weights[:, :1].copy(), p.topk_ids)
    with pytest.raises(TypeError, match="x: dtype float32, expected bfloat16 or float16"):
        pymoe.fused_moe(p.x.astype(np.float32), *ok[1:])
    with pytest.raises(ValueError, match=r"x: shape \(6, 32\), expected \[T, 64\]"):
        pymoe.fused_moe(p.x[:, :32].copy(), *ok[1:])
    with pytest.raises(TypeError, match="topk_ids: dtype float64"):
        pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids.astype(np.float64))
    with pytest.raises(ValueError, match=r"backend='tpu'"):
        pymoe.fused_moe(*ok, backend="tpu")
    with pytest.raises(ValueError, match=r"k=9: must be in \[1, E=4\]"):
        pymoe.route_topk(np.zeros((2, 4)), 9)


# ---------------------------------------------------------------- found as a new user would

def test_non_finite_float_weights_are_refused_in_both_formats():
    """Policy: float weights must be finite (docs in pymoe/weights.py)."""
    for fmt in ("mxfp4", "nvfp4"):
        for bad in (np.inf, -np.inf, np.nan):
            w = W2.copy()
            w[1, 7, 3] = bad
            with pytest.raises(ValueError, match=rf"w2: non-finite value {bad} at index "
                                                 r"\(1, 7, 3\)"):
                pymoe.prepare_weights(W13, w, format=fmt)


def test_packed_weights_with_k_off_the_group_multiple_are_refused():
    q13, s13 = pymoe.quantize_mxfp4(W13)
    q2, s2 = pymoe.quantize_mxfp4(W2)
    # w2 rows of 14 values (7 bytes): not a multiple of 8
    with pytest.raises(ValueError, match=r"w2: shape \(4, 64, 7\) holds K=14 values per row; "
                                         r"K must be a multiple of 8 for mxfp4"):
        pymoe.prepare_weights(q13[:, :28], q2[..., :7], w13_scales=s13[:, :28],
                              w2_scales=s2)


def test_fused_moe_argument_types():
    p = make_problem(Case(6, 64, 32, 4, 2))
    with pytest.raises(TypeError, match="experts: expected pymoe.ExpertWeights .*got NoneType"):
        pymoe.fused_moe(p.x, None, p.topk_weights, p.topk_ids)
    with pytest.raises(TypeError, match=r"k=2.0: expected an int"):
        pymoe.route_topk(np.zeros((3, 4)), 2.0)
    with pytest.raises(TypeError, match=r"k=True: expected an int"):
        pymoe.route_topk(np.zeros((3, 4)), True)
    with pytest.raises(TypeError, match=r"x: list; expected a NumPy array \(host\) or a CUDA"):
        pymoe.plan(pymoe.Caps.for_weights(p.experts, max_tokens=6, top_k=2)).bind(
            scratch=np.zeros(1 << 20, np.uint8), x=[[0.0]], experts=p.experts,
            topk_weights=p.topk_weights, topk_ids=p.topk_ids)


def test_zero_tokens_are_still_checked():
    p = make_problem(Case(6, 64, 32, 4, 2))
    with pytest.raises(ValueError, match=r"x: shape \(0, 7\), expected \[T, 64\]"):
        pymoe.fused_moe(np.zeros((0, 7), np.float16), p.experts,
                        np.zeros((0, 2), np.float32), np.zeros((0, 2), np.int32))
    with pytest.raises(ValueError, match=r"topk_weights: shape \(0, 2\), expected \(0, 3\)"):
        pymoe.fused_moe(p.x[:0], p.experts, np.zeros((0, 2), np.float32),
                        np.zeros((0, 3), np.int32))
    y = pymoe.fused_moe(p.x[:0], p.experts, p.topk_weights[:0], p.topk_ids[:0])
    assert y.shape == (0, 64) and y.dtype == p.x.dtype


def test_inf_input_propagates_without_numpy_warnings():
    import warnings
    p = make_problem(Case(6, 64, 32, 4, 2))
    x = p.x.copy()
    x[2, 5] = np.inf
    x[3, 1] = -np.inf
    x[4, 0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # a RuntimeWarning would raise
        y = pymoe.fused_moe(x, p.experts, p.topk_weights, p.topk_ids)
        yt = pymoe.fused_moe(x[:1], p.experts, p.topk_weights[:1], p.topk_ids[:1])  # decode
    f = y.astype(np.float32)
    assert not np.isfinite(f[2:5]).all(axis=1).any()            # the bad rows are not finite
    assert np.isfinite(f[[0, 1, 5]]).all()                       # the others are untouched
    assert np.isfinite(yt.astype(np.float32)).all()


def test_torch_cpu_tensors_on_the_ref_backend():
    torch = pytest.importorskip("torch")
    p = make_problem(Case(6, 64, 32, 4, 2))
    want = pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids).view(np.uint16)
    xt = torch.from_numpy(p.x.view(np.uint16).view(np.int16)).view(torch.bfloat16)
    got = pymoe.fused_moe(xt, p.experts, torch.from_numpy(p.topk_weights),
                          torch.from_numpy(p.topk_ids.astype(np.int64)))
    np.testing.assert_array_equal(got.view(np.uint16), want)
    with pytest.raises(TypeError, match=r"x: torch.Tensor on the host: pass a NumPy array"):
        pymoe.plan(pymoe.Caps.for_weights(p.experts, max_tokens=6, top_k=2)).bind(
            scratch=np.zeros(1 << 20, np.uint8), x=xt, experts=p.experts,
            topk_weights=p.topk_weights, topk_ids=p.topk_ids)
