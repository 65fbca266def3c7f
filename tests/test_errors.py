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
