"""Zero-copy interop on the GPU: CuPy arrays and torch tensors are used in place."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pymoe
from pymoe.dtypes import to_float32
from tests.problems import Case, make_problem

pytestmark = pytest.mark.gpu


def _bf16(bits):
    return to_float32(np.asarray(bits, np.uint16), "bfloat16")


def _check(got_bits, want_bits):
    """Packed-regime results equal the reference within the bf16 bound (the
    tensor-core GEMM sums K in another order; bit equality is not promised)."""
    from pymoe.testing import assert_close
    assert_close(_bf16(got_bits), _bf16(want_bits), dtype="bfloat16", what="y")


def _setup(T=20):
    prob = make_problem(Case(T, 256, 128, 8, 2))
    ew = pymoe.cuda.to_device(prob.experts)
    plan = pymoe.plan(pymoe.Caps.for_weights(ew, max_tokens=64, top_k=2))
    return prob, ew, plan


def test_cupy_pointers_are_used_directly():
    import cupy as cp
    prob, ew, plan = _setup()
    x = cp.asarray(prob.x.view(np.uint16))
    out = cp.full(x.shape, 0xFFFF, cp.uint16)
    b = plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), x=x, experts=ew,
                  topk_weights=cp.asarray(prob.topk_weights),
                  topk_ids=cp.asarray(prob.topk_ids), out=out)
    assert b.x.data.ptr == x.data.ptr and b.out.data.ptr == out.data.ptr
    y = pymoe.run(b)
    assert y is out
    want = pymoe.fused_moe(prob.x, prob.experts, prob.topk_weights, prob.topk_ids)
    _check(out.get(), want.view(np.uint16))


def test_torch_tensors_in_and_out_without_copies():
    torch = pytest.importorskip("torch")
    prob, ew, plan = _setup()
    x = torch.from_numpy(prob.x.view(np.uint16).view(np.int16)).cuda().view(torch.bfloat16)
    w = torch.from_numpy(prob.topk_weights).cuda()
    ids = torch.from_numpy(prob.topk_ids.astype(np.int64)).cuda()
    out = torch.full_like(x, float("nan"))
    b = plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), x=x, experts=ew,
                  topk_weights=w, topk_ids=ids, out=out)
    assert b.x.data.ptr == x.data_ptr() and b.out.data.ptr == out.data_ptr()
    assert b.topk_weights.data.ptr == w.data_ptr() and b.topk_ids.data.ptr == ids.data_ptr()
    pymoe.run(b, stream=torch.cuda.current_stream())      # a torch stream as is
    torch.cuda.synchronize()
    want = pymoe.fused_moe(prob.x, prob.experts, prob.topk_weights, prob.topk_ids)
    got = out.view(torch.int16).cpu().numpy().view(np.uint16)
    _check(got, want.view(np.uint16))
    y = pymoe.fused_moe(x, ew, w, ids, backend="cuda", out=out)
    assert y is out


def test_torch_example_runs():
    pytest.importorskip("torch")
    ex = Path(__file__).parents[2] / "examples" / "torch_interop.py"
    r = subprocess.run([sys.executable, str(ex)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "zero-copy" in r.stdout


def test_gpt_oss_example_runs_on_cuda():
    ex = Path(__file__).parents[2] / "examples" / "load_gpt_oss_layer.py"
    r = subprocess.run([sys.executable, str(ex)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cuda" in r.stdout


def test_scratch_and_experts_must_live_with_x():
    """bind refuses host scratch for device x, and weights on another GPU."""
    import cupy as cp
    prob, ew, plan = _setup()
    kw = dict(x=cp.asarray(prob.x.view(np.uint16)), topk_weights=cp.asarray(prob.topk_weights),
              topk_ids=cp.asarray(prob.topk_ids))
    with pytest.raises(TypeError, match="scratch: is a host array but x is a device array"):
        plan.bind(scratch=np.empty(plan.scratch_nbytes, np.uint8), experts=ew, **kw)
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("the cross-device case needs 2 GPUs")
    with cp.cuda.Device(1):
        ew1 = pymoe.cuda.to_device(prob.experts.with_arrays("cpu", **prob.experts.arrays()))
    with pytest.raises(ValueError, match="experts: on device 1, x on device 0"):
        plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), experts=ew1, **kw)
