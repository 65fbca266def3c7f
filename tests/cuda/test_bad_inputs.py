"""Bad input on the device: every row is refused before any launch, with an error
that names the argument, and the device is still usable after every refusal
(the good call that follows gives the same bits as before).

A launch spy counts cuLaunchKernel calls; a refused row must add none."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import pymoe
from tests.cuda.diff import x_4_not_16
from tests.problems import Case, make_problem

pytestmark = pytest.mark.gpu

T, H, I, E, K = 12, 64, 32, 4, 2


@dataclass
class Ctx:
    plan: object
    plan_ep: object
    ew: object
    ew_host: object
    good: dict
    ep_good: dict
    scratch: object
    prob: object


@dataclass
class Row:
    name: str
    call: Callable[[Ctx], object]
    exc: type
    match: str


def _bind(c: Ctx, **kw):
    args = dict(c.good)
    args.update(kw)
    return c.plan.bind(**args)


def _bind_ep(c: Ctx, **kw):
    args = dict(c.ep_good)
    args.update(kw)
    return c.plan_ep.bind(**args)


def _cp():
    import cupy
    return cupy


def _other(**case_kw):
    p = make_problem(Case(T, **{**dict(H=H, I=I, E=E, k=K), **case_kw}))
    return pymoe.cuda.to_device(p.experts)


def _capture(c: Ctx, fn):
    """Run fn(stream) while a fresh stream captures; end the capture either way."""
    cp = _cp()
    s = cp.cuda.Stream(non_blocking=True)
    s.begin_capture()
    try:
        return fn(s)
    finally:
        s.end_capture()


def _unresolved(c: Ctx):
    """A binding whose keys no test resolves (H=320, I=160), run while capturing."""
    cp = _cp()
    p = make_problem(Case(1, 320, 160, 4, 2, seed=9))
    plan = pymoe.plan(pymoe.Caps.for_weights(p.experts, max_tokens=2, top_k=2))
    x = cp.asarray(p.x.view(np.uint16))
    b = plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), x=x,
                  experts=pymoe.cuda.to_device(p.experts),
                  topk_weights=cp.asarray(p.topk_weights), topk_ids=cp.asarray(p.topk_ids),
                  out=cp.empty_like(x))
    return _capture(c, lambda s: pymoe.run(b, stream=s))


def _frozen_miss(c: Ctx):
    p = make_problem(Case(1, 352, 160, 4, 2, seed=10))
    plan = pymoe.plan(pymoe.Caps.for_weights(p.experts, max_tokens=2, top_k=2))
    cp = _cp()
    x = cp.asarray(p.x.view(np.uint16))
    b = plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), x=x,
                  experts=pymoe.cuda.to_device(p.experts),
                  topk_weights=cp.asarray(p.topk_weights), topk_ids=cp.asarray(p.topk_ids),
                  out=cp.empty_like(x))
    pymoe.cuda.freeze()
    try:
        return pymoe.run(b)
    finally:
        pymoe.cuda.unfreeze()


def _rows() -> list[Row]:
    cp = _cp()
    g = lambda c, n: c.good[n]                                          # noqa: E731
    return [
        # x
        Row("x dtype", lambda c: _bind(c, x=g(c, "x").view(cp.float16).astype(cp.float32)),
            TypeError, r"x: dtype float32, expected bfloat16"),
        Row("x fp16 for a bf16 plan", lambda c: _bind(c, x=g(c, "x").view(cp.float16)),
            TypeError, r"x: dtype float16, expected bfloat16 \(Caps.dtype\)"),
        Row("x width", lambda c: _bind(c, x=cp.zeros((T, 32), cp.uint16)),
            ValueError, rf"x: shape \({T}, 32\), expected \[T, {H}\]"),
        Row("x 1-D", lambda c: _bind(c, x=g(c, "x").reshape(-1)),
            ValueError, r"x: shape \(768,\), expected \[T, 64\]"),
        Row("x 3-D", lambda c: _bind(c, x=g(c, "x").reshape(T, H, 1)),
            ValueError, r"x: shape \(12, 64, 1\)"),
        Row("x strided", lambda c: _bind(c, x=cp.zeros((T, 2 * H), cp.uint16)[:, ::2]),
            ValueError, r"x: must be C-contiguous"),
        Row("x on the host", lambda c: _bind(c, x=c.prob.x.view(np.uint16)),
            TypeError, r"x is a host array"),
        Row("x a list", lambda c: _bind(c, x=[[0] * H] * T),
            TypeError, r"x: list; expected a NumPy array \(host\) or a CUDA array"),
        Row("x past max_tokens", lambda c: _bind(
            c, x=cp.zeros((17, H), cp.uint16), topk_ids=cp.zeros((17, K), cp.int32),
            topk_weights=cp.zeros((17, K), cp.float32), out=None),
            ValueError, r"x: T=17 tokens exceeds Caps.max_tokens=16"),
        # topk_ids
        Row("ids float", lambda c: _bind(c, topk_ids=g(c, "topk_ids").astype(cp.float32)),
            TypeError, r"topk_ids: dtype float32, expected int32 or int64"),
        Row("ids int16", lambda c: _bind(c, topk_ids=g(c, "topk_ids").astype(cp.int16)),
            TypeError, r"topk_ids: dtype int16, expected int32 or int64"),
        Row("ids shape", lambda c: _bind(c, topk_ids=cp.zeros((T, 3), cp.int32)),
            ValueError, r"topk_ids: shape \(12, 3\), expected \(12, 2\)"),
        Row("ids rows", lambda c: _bind(c, topk_ids=cp.zeros((T - 1, K), cp.int32)),
            ValueError, r"topk_ids: shape \(11, 2\), expected \(12, 2\)"),
        Row("ids strided", lambda c: _bind(c, topk_ids=cp.zeros((T, 2 * K), cp.int32)[:, ::2]),
            ValueError, r"topk_ids: must be C-contiguous"),
        Row("ids on the host", lambda c: _bind(c, topk_ids=c.prob.topk_ids),
            TypeError, r"topk_ids: is a host array but x is a device array"),
        # topk_weights
        Row("weights float64", lambda c: _bind(
            c, topk_weights=g(c, "topk_weights").astype(cp.float64)),
            TypeError, r"topk_weights: dtype float64, expected float32"),
        Row("weights float16", lambda c: _bind(
            c, topk_weights=g(c, "topk_weights").astype(cp.float16)),
            TypeError, r"topk_weights: dtype float16, expected float32"),
        Row("weights shape", lambda c: _bind(c, topk_weights=cp.zeros((T, 1), cp.float32)),
            ValueError, r"topk_weights: shape \(12, 1\), expected \(12, 2\)"),
        Row("weights strided", lambda c: _bind(
            c, topk_weights=cp.zeros((T, 2 * K), cp.float32)[:, ::2]),
            ValueError, r"topk_weights: must be C-contiguous"),
        # out
        Row("out shape", lambda c: _bind(c, out=cp.zeros((T, H + 8), cp.uint16)),
            ValueError, r"out: shape \(12, 72\), expected \(12, 64\)"),
        Row("out float32", lambda c: _bind(c, out=cp.zeros((T, H), cp.float32)),
            TypeError, r"out: dtype float32, expected bfloat16 like x"),
        Row("out fp16 for bf16", lambda c: _bind(c, out=cp.zeros((T, H), cp.float16)),
            TypeError, r"out: dtype float16, expected bfloat16 like x"),
        Row("out strided", lambda c: _bind(c, out=cp.zeros((T, 2 * H), cp.uint16)[:, ::2]),
            ValueError, r"out: must be C-contiguous"),
        Row("out is x", lambda c: _bind(c, out=g(c, "x")),
            ValueError, r"out: overlaps x in memory"),
        Row("out inside scratch", lambda c: _bind(
            c, out=g(c, "scratch")[:T * H * 2].view(cp.uint16).reshape(T, H)),
            ValueError, r"out: overlaps scratch in memory"),
        Row("out on the host", lambda c: _bind(c, out=np.zeros((T, H), np.uint16)),
            TypeError, r"out: is a host array but x is a device array"),
        # scratch
        Row("scratch too small", lambda c: _bind(c, scratch=cp.zeros(1024, cp.uint8)),
            ValueError, r"scratch has 1024 bytes, requires \d+"),
        Row("scratch dtype", lambda c: _bind(c, scratch=g(c, "scratch").view(cp.float32)),
            TypeError, r"scratch: expected a 1-D uint8 array, got dtype float32"),
        Row("scratch 2-D", lambda c: _bind(c, scratch=g(c, "scratch").reshape(2, -1)),
            TypeError, r"scratch: expected a 1-D uint8 array, got dtype uint8 shape \(2, "),
        Row("scratch misaligned", lambda c: _bind(
            c, scratch=cp.zeros(c.plan.scratch_nbytes + 256, cp.uint8)[8:]),
            ValueError, r"scratch: data pointer 0x[0-9a-f]+ is not 128-byte aligned"),
        Row("scratch strided", lambda c: _bind(
            c, scratch=cp.zeros(2 * c.plan.scratch_nbytes, cp.uint8)[::2]),
            ValueError, r"scratch: must be C-contiguous"),
        Row("scratch on the host", lambda c: _bind(
            c, scratch=np.zeros(c.plan.scratch_nbytes, np.uint8)),
            TypeError, r"scratch: is a host array but x is a device array"),
        Row("scratch holds x", lambda c: _bind(
            c, x=g(c, "scratch")[-T * H * 2:].view(cp.uint16).reshape(T, H)),
            ValueError, r"scratch: overlaps x in memory"),
        # experts
        Row("experts not uploaded", lambda c: _bind(c, experts=c.ew_host),
            TypeError, r"experts: on 'cpu' but x is a device array; upload once"),
        Row("experts None", lambda c: _bind(c, experts=None),
            TypeError, r"experts: expected pymoe.ExpertWeights, got NoneType"),
        Row("experts of another H", lambda c: _bind(c, experts=_other(H=128)),
            ValueError, r"experts.hidden_size=128 but Caps.hidden_size=64"),
        Row("experts of another format", lambda c: _bind(c, experts=_other(format="nvfp4")),
            ValueError, r"experts.format='nvfp4' but Caps.format='mxfp4'"),
        Row("experts with bias", lambda c: _bind(c, experts=_other(bias=True)),
            ValueError, r"experts.has_bias=True but Caps.has_bias=False"),
        Row("experts of another activation", lambda c: _bind(
            c, experts=_other(activation="relu2")),
            ValueError, r"experts.activation='relu2' but Caps.activation='silu'"),
        # expert map (expert-parallel plan: 8 global ids, 4 local experts)
        Row("map missing", lambda c: _bind_ep(c, expert_map=None),
            ValueError, r"expert_map is required: Caps.global_num_experts=8"),
        Row("map shape", lambda c: _bind_ep(c, expert_map=cp.zeros(4, cp.int32)),
            ValueError, r"expert_map: shape \(4,\), expected \(8,\)"),
        Row("map float", lambda c: _bind_ep(
            c, expert_map=c.ep_good["expert_map"].astype(cp.float32)),
            TypeError, r"expert_map: dtype float32, expected int32 or int64"),
        Row("map on the host, duplicated", lambda c: _bind_ep(
            c, expert_map=np.array([0, 0, 1, 2, -1, -1, -1, -1], np.int32)),
            ValueError, r"expert_map: local expert 0 appears 2 times"),
        # run / capture / freeze misuse
        Row("run(None)", lambda c: pymoe.run(None),
            TypeError, r"run takes a pymoe Binding \(from Plan.bind\), got NoneType"),
        Row("cuda.run of a host binding", lambda c: pymoe.cuda.run(
            pymoe.plan(c.plan.caps).bind(
                scratch=np.zeros(c.plan.scratch_nbytes, np.uint8), x=c.prob.x,
                experts=c.ew_host, topk_weights=c.prob.topk_weights,
                topk_ids=c.prob.topk_ids)),
            TypeError, r"run: the binding holds host \(NumPy\) arrays"),
        Row("capture without out=", lambda c: _capture(
            c, lambda s: pymoe.run(_bind(c, out=None), stream=s)),
            RuntimeError, r"run: out= must be bound while the selected stream captures"),
        Row("capture of an unresolved launch", _unresolved,
            pymoe.cuda.LaunchNotResolvedError,
            r"kernel 'decode_fc1' is not resolved while the selected stream is capturing"),
        Row("frozen and unresolved", _frozen_miss,
            pymoe.cuda.KernelResolutionFrozenError,
            r"kernel 'decode_fc1' is not resolved and pymoe.cuda.freeze\(\) is on"),
        # one-shot entry
        Row("fused_moe backend", lambda c: pymoe.fused_moe(
            g(c, "x"), c.ew, g(c, "topk_weights"), g(c, "topk_ids"), backend="tpu"),
            ValueError, r"backend='tpu': expected one of"),
        Row("fused_moe x float32", lambda c: pymoe.fused_moe(
            cp.zeros((T, H), cp.float32), c.ew, g(c, "topk_weights"), g(c, "topk_ids"),
            backend="cuda"),
            TypeError, r"x: dtype float32, expected bfloat16 or float16"),
        Row("fused_moe experts None", lambda c: pymoe.fused_moe(
            g(c, "x"), None, g(c, "topk_weights"), g(c, "topk_ids"), backend="cuda"),
            TypeError, r"experts: expected pymoe.ExpertWeights"),
        Row("route_topk k > E", lambda c: pymoe.route_topk(cp.zeros((T, E)), E + 1),
            ValueError, r"k=5: must be in \[1, E=4\]"),
    ]


@pytest.fixture(scope="module")
def ctx():
    cp = _cp()
    prob = make_problem(Case(T, H, I, E, K, seed=3))
    ew = pymoe.cuda.to_device(prob.experts)
    plan = pymoe.plan(pymoe.Caps.for_weights(prob.experts, max_tokens=16, top_k=K))
    x = cp.asarray(prob.x.view(np.uint16))
    good = dict(scratch=pymoe.cuda.allocate_scratch(plan), x=x, experts=ew,
                topk_weights=cp.asarray(prob.topk_weights),
                topk_ids=cp.asarray(prob.topk_ids), out=cp.empty_like(x))
    pe = make_problem(Case(T, H, I, E, K, ep=True, seed=4))
    plan_ep = pymoe.plan(pymoe.Caps.for_weights(pe.experts, max_tokens=16, top_k=K,
                                                global_num_experts=2 * E))
    ep_good = dict(scratch=pymoe.cuda.allocate_scratch(plan_ep),
                   x=cp.asarray(pe.x.view(np.uint16)), experts=pymoe.cuda.to_device(pe.experts),
                   topk_weights=cp.asarray(pe.topk_weights), topk_ids=cp.asarray(pe.topk_ids),
                   expert_map=cp.asarray(pe.expert_map))
    return Ctx(plan, plan_ep, ew, prob.experts, good, ep_good, good["scratch"], prob)


@pytest.fixture
def launches(monkeypatch):
    """Counts cuLaunchKernel calls made through pymoe's launch path."""
    from cupy_backends.cuda.api.driver import launchKernel
    from pymoe.cuda import launch
    n = [0]

    def spy(*a):
        n[0] += 1
        return launchKernel(*a)
    monkeypatch.setattr(launch, "_launch_kernel", spy)
    return n


def _good_bits(c: Ctx):
    b = c.plan.bind(**c.good)
    y = pymoe.run(b)
    _cp().cuda.get_current_stream().synchronize()
    return y.get().copy()


def test_the_matrix_has_at_least_40_rows():
    assert len(_rows()) >= 40, len(_rows())


def test_every_bad_input_is_refused_before_any_launch(ctx, launches):
    baseline = _good_bits(ctx)
    assert launches[0] > 0                               # the spy sees real launches
    report = []
    for row in _rows():
        before = launches[0]
        with pytest.raises(row.exc, match=row.match) as e:
            row.call(ctx)
        assert launches[0] == before, f"{row.name}: launched before refusing"
        after = _good_bits(ctx)                           # the device is still usable
        np.testing.assert_array_equal(after, baseline, err_msg=f"after row {row.name!r}")
        report.append(f"{row.name:34} {type(e.value).__name__:30} {str(e.value)[:70]}")
    print(f"\n{len(report)} rows refused before any launch:\n" + "\n".join(report))


@pytest.mark.parametrize("gemm", ["mma", "wgmma"])
def test_misaligned_x_refused_in_the_packed_regime(gemm, launches, monkeypatch):
    """An x view that starts at an odd 16-bit element: the packed regime's
    tensor-core GEMMs read x as 32-bit words, so bind refuses it before any
    launch; the same view runs in the decode regime (16-bit or 4-byte loads by
    the pointer's alignment) and, copied, in the packed one; a view 4-byte but not
    16-byte aligned runs the GEMMs' 4-byte load path to the same bits."""
    cp = _cp()
    monkeypatch.setenv("PYMOE_GEMM", gemm)
    t = 80                                              # past the decode cut (k = 2)
    prob = make_problem(Case(t, H, I, E, K, seed=5))
    ew = pymoe.cuda.to_device(prob.experts)
    plan = pymoe.plan(pymoe.Caps.for_weights(prob.experts, max_tokens=t, top_k=K))
    buf = cp.zeros(t * H + 2, cp.uint16)
    odd = buf[1:1 + t * H].reshape(t, H)
    odd[...] = cp.asarray(prob.x.view(np.uint16))
    kw = dict(scratch=pymoe.cuda.allocate_scratch(plan), experts=ew,
              topk_weights=cp.asarray(prob.topk_weights), topk_ids=cp.asarray(prob.topk_ids))
    before = launches[0]
    with pytest.raises(ValueError, match=rf"x: data pointer 0x[0-9a-f]+ is not 4-byte "
                                         rf"aligned; the packed regime's {gemm} GEMM"):
        plan.bind(x=odd, **kw)
    assert launches[0] == before
    aligned = cp.asarray(prob.x.view(np.uint16))
    y_copy = pymoe.run(plan.bind(x=odd.copy(), **kw)).get()
    y = pymoe.run(plan.bind(x=aligned, **kw)).get()
    np.testing.assert_array_equal(y_copy, y)
    # 4-byte aligned but not 16: the GEMMs' 4-byte activation loads (no 16-byte ones)
    np.testing.assert_array_equal(pymoe.run(plan.bind(x=x_4_not_16(aligned), **kw)).get(), y)
    small = {n: (a[:12] if n.startswith("topk") else a) for n, a in kw.items()}
    s_odd = pymoe.run(plan.bind(x=odd[:12], **small)).get()     # decode: any alignment
    s = pymoe.run(plan.bind(x=aligned[:12], **small)).get()
    np.testing.assert_array_equal(s_odd, s)
