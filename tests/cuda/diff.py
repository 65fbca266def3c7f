"""One differential body for both backends: run a problem through the reference
and the CUDA twin (GPU, or the simulator on NumPy arrays), scratch and outputs
poisoned with NaN (0xFF bytes) first, and compare every buffer."""
from __future__ import annotations

import numpy as np

import pymoe
from pymoe.dtypes import to_float32
from pymoe.testing import assert_close, host
from tests.problems import Case, make_problem

POISON = 0xFF     # bytes: NaN for f32/bf16/fp16, -1 for int32


def poisoned(shape, dtype):
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return np.full(n, POISON, np.uint8).view(dtype).reshape(shape)


def _bits(a):
    return np.asarray(host(a)).view(np.uint16)


def to_f32(a, dtype):
    a = np.asarray(host(a))
    if dtype == "bfloat16":
        return to_float32(a, "bfloat16")
    return a.view(np.float16).astype(np.float32)


def run_case(case: Case, *, device: bool, max_tokens: int | None = None, repeats: int = 1):
    """Returns (problem, ref binding, ref buffers, cuda buffers per repeat)."""
    return run_problem(make_problem(case), device=device, max_tokens=max_tokens,
                       repeats=repeats)


def problem_caps(p, max_tokens: int | None = None):
    """The Caps run_problem plans problem p with (tools/ptx_pack.py selects its
    kernels from them too)."""
    case = p.case
    return pymoe.Caps.for_weights(p.experts, max_tokens=max(1, max_tokens or case.T),
                                  top_k=case.k, dtype=case.dtype,
                                  apply_router_weight_on_input=case.on_input,
                                  global_num_experts=None if p.expert_map is None
                                  else p.expert_map.shape[0],
                                  decode_max_tokens=0 if case.packed else None)


def run_problem(p, *, device: bool, max_tokens: int | None = None, repeats: int = 1):
    """run_case for a Problem whose inputs a test may have changed."""
    case = p.case
    xbits = p.x.view(np.uint16) if case.dtype == "bfloat16" else p.x
    caps = problem_caps(p, max_tokens)
    plan = pymoe.plan(caps)
    s_ref = np.full(plan.scratch_nbytes, POISON, np.uint8)
    y_ref = poisoned(xbits.shape, xbits.dtype)
    b_ref = plan.bind(scratch=s_ref, x=xbits, experts=p.experts, topk_weights=p.topk_weights,
                      topk_ids=p.topk_ids, out=y_ref, expert_map=p.expert_map)
    pymoe.run(b_ref)
    ref = {"y": y_ref, **{k: v.copy() for k, v in b_ref.views.items()}}
    runs = []
    for _ in range(repeats):
        if device:
            import cupy as cp
            ew = pymoe.cuda.to_device(p.experts)
            put = cp.asarray
            scratch = cp.full(plan.scratch_nbytes, POISON, cp.uint8)
        else:
            from pymoe.cuda.device_weights import to_device
            ew = to_device(p.experts)
            put = np.array
            scratch = np.full(plan.scratch_nbytes, POISON, np.uint8)
        y = put(poisoned(xbits.shape, xbits.dtype))
        b = plan.bind(scratch=scratch, x=put(xbits), experts=ew,
                      topk_weights=put(p.topk_weights), topk_ids=put(p.topk_ids), out=y,
                      expert_map=None if p.expert_map is None else put(p.expert_map))
        if device:
            pymoe.run(b)
        else:
            from pymoe.cuda.runner import run
            run(b)
        runs.append({"y": host(y), **{k: host(v).copy() for k, v in b.views.items()}})
    return p, b_ref, ref, runs


def check_case(case: Case, *, device: bool, max_tokens=None, repeats=1):
    return check_problem(make_problem(case), device=device, max_tokens=max_tokens,
                         repeats=repeats)


def check_problem(p, *, device: bool, max_tokens=None, repeats=1):
    """Every buffer of the CUDA twin against the reference (see the module doc)."""
    case = p.case
    p, b, ref, runs = run_problem(p, device=device, max_tokens=max_tokens, repeats=repeats)
    dt = case.dtype
    R = case.T * case.k
    for got in runs:
        for name in ("expert_offsets", "packed_route_indices", "block_expert_ids",
                     "packed_route_count"):
            if name in ref:
                np.testing.assert_array_equal(got[name], ref[name], err_msg=f"{case}: {name}")
        if "intermediate" in ref:
            a, e = to_f32(got["intermediate"], dt), to_f32(ref["intermediate"], dt)
            assert not np.isnan(a).any() or np.isnan(e).any(), f"{case}: unwritten intermediate"
            if b.regime == "packed":
                pad = np.asarray(ref["packed_route_indices"]) >= R
                assert (a[pad] == 0).all(), f"{case}: padding slots not zero"
            assert_close(a, e, dtype=dt, what=f"{case}: intermediate")
        if "route_out" in ref and R:
            from pymoe.ref.routes import local_expert_ids
            valid = local_expert_ids(p.topk_ids, p.expert_map, p.experts.num_experts).ravel() >= 0
            if valid.any():
                assert_close(got["route_out"][valid], ref["route_out"][valid], dtype=dt,
                             what=f"{case}: route_out")
        if case.T:
            ya, ye = to_f32(got["y"], dt), to_f32(ref["y"], dt)
            assert not np.isnan(ya).any(), f"{case}: y has unwritten (NaN) elements"
            assert_close(ya, ye, dtype=dt, what=f"{case}: y")
    for other in runs[1:]:
        np.testing.assert_array_equal(_bits(other["y"]), _bits(runs[0]["y"]),
                                      err_msg=f"{case}: not deterministic")
    return runs


def x_4_not_16(x):
    """A device copy of the 16-bit (T, H) array x whose data pointer is 4-byte but
    not 16-byte aligned: the packed GEMMs then load x 4 bytes at a time and stage
    it through registers."""
    import cupy as cp
    t, h = x.shape
    buf = cp.zeros(t * h + 8, cp.uint16)
    x4 = buf[2:2 + t * h].reshape(t, h)
    x4[...] = x
    assert x4.data.ptr % 16 and not x4.data.ptr % 4
    return x4
