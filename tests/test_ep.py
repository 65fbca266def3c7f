"""Expert parallel (pymoe.ep): sharding, per-rank partials, and their sum equal
to the single-device layer (CPU reference; the GPU variants run on a GPU)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import pymoe
from tests.problems import Case, make_problem
from pymoe import ep
from pymoe.dtypes import to_float32
from pymoe.testing import assert_close


def _bf16(a):
    return to_float32(np.asarray(a), "bfloat16")


@given(st.integers(1, 300), st.data())
def test_partition_covers_every_expert_once(E, data):
    world = data.draw(st.integers(1, min(E, 64)))
    owner = np.full(E, -1)
    sizes = []
    for r in range(world):
        a, b = ep.partition(E, world, r)
        assert (owner[a:b] == -1).all()
        owner[a:b] = r
        sizes.append(b - a)
        m = ep.expert_map_for(E, world, r)
        assert m.dtype == np.int32 and (m[a:b] == np.arange(b - a)).all()
        assert (np.delete(m, np.arange(a, b)) == -1).all()
    assert (owner >= 0).all() and max(sizes) - min(sizes) <= 1


def test_partition_rejects_bad_ranks():
    with pytest.raises(ValueError, match="rank=2"):
        ep.partition(8, 2, 2)
    with pytest.raises(ValueError, match="world_size=9"):
        ep.partition(8, 9, 0)


def test_shard_is_a_view_with_its_map():
    ew = make_problem(Case(4, 64, 32, 7, 2, bias=True, format="nvfp4")).experts
    local, m = ep.shard_experts(ew, 3, 1)
    a, b = ep.partition(7, 3, 1)
    assert local.num_experts == b - a and (m >= 0).sum() == b - a
    for n, arr in local.arrays().items():
        assert arr.shape[0] == b - a and np.shares_memory(arr, getattr(ew, n)), n
    with pytest.raises(TypeError, match="expected pymoe.ExpertWeights"):
        ep.shard_experts(object(), 2, 0)


CASES = [Case(24, 64, 32, 8, 2), Case(33, 64, 48, 7, 3, format="nvfp4", bias=True),
         Case(17, 40, 24, 6, 2, on_input=True, activation="swigluoai", dtype="float16")]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("world", [1, 2, 3])
def test_sum_of_partials_is_the_layer(case, world):
    p = make_problem(case)
    kw = dict(apply_router_weight_on_input=case.on_input)
    full = pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids, **kw)
    parts = []
    for r in range(world):
        local, m = ep.shard_experts(p.experts, world, r)
        parts.append(ep.partial_moe(p.x, local, p.topk_weights, p.topk_ids, m, **kw))
    y = ep.combine_partials(parts)
    assert y.dtype == full.dtype and y.shape == full.shape
    if world == 1:
        np.testing.assert_array_equal(y.view(np.uint16), full.view(np.uint16))
    assert_close(to_float32(y, case.dtype), to_float32(full, case.dtype), dtype=case.dtype,
                 what=f"world {world}")


def test_combine_partials_rejects_mixed_inputs():
    a = np.zeros((2, 8), np.uint16)
    with pytest.raises(ValueError, match=r"partials\[1\]"):
        ep.combine_partials([a, np.zeros((2, 8), np.float16)])
    with pytest.raises(TypeError, match="float16"):
        ep.combine_partials([np.zeros((2, 8), np.float32)])


@pytest.mark.gpu
def test_partials_on_the_gpu_sum_to_the_layer():
    """Every rank's share run by the CUDA twin on one GPU, one after the other."""
    import cupy as cp
    p = make_problem(Case(40, 256, 128, 8, 2, bias=True))
    full = pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids)
    parts = []
    for r in range(2):
        local, m = ep.shard_experts(p.experts, 2, r)
        parts.append(ep.partial_moe(cp.asarray(p.x.view(np.uint16)), pymoe.cuda.to_device(local),
                                    cp.asarray(p.topk_weights), cp.asarray(p.topk_ids),
                                    cp.asarray(m), backend="cuda"))
    assert_close(_bf16(ep.combine_partials(parts)), _bf16(full), dtype="bfloat16")


@pytest.mark.multi_gpu
def test_nccl_all_reduce_over_two_gpus():
    import cupy as cp
    from cupy.cuda import nccl
    p = make_problem(Case(40, 256, 128, 8, 2))
    full = pymoe.fused_moe(p.x, p.experts, p.topk_weights, p.topk_ids)
    comms = nccl.NcclCommunicator.initAll(2)
    ys = []
    for r in range(2):
        with cp.cuda.Device(r):
            local, m = ep.shard_experts(p.experts, 2, r)
            ys.append(ep.partial_moe(cp.asarray(p.x.view(np.uint16)),
                                     pymoe.cuda.to_device(local), cp.asarray(p.topk_weights),
                                     cp.asarray(p.topk_ids), cp.asarray(m), backend="cuda"))
    nccl.groupStart()
    for r in range(2):
        with cp.cuda.Device(r):
            ep.all_reduce(ys[r], comms[r])
    nccl.groupEnd()
    for r in range(2):
        with cp.cuda.Device(r):
            cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(ys[0].get(), ys[1].get())
    assert_close(_bf16(ys[0].get()), _bf16(full), dtype="bfloat16")


@pytest.mark.multi_gpu
def test_one_process_per_gpu_example():
    """examples/ep_two_gpus.py: two processes, an NCCL id through a pipe, the EP sum
    equal to the one-GPU layer (bf16 bound) and both ranks holding the same bits."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    ex = Path(__file__).resolve().parents[1] / "examples" / "ep_two_gpus.py"
    r = subprocess.run([sys.executable, str(ex), "--preset", "tiny,qwen3-30b-a3b",
                        "--tokens", "1,64,300", "--iters", "3"], capture_output=True, text=True,
                       timeout=900, env=dict(os.environ, NCCL_NVLS_ENABLE="0"))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.strip().endswith("OK") and "True" in r.stdout, r.stdout
