"""fc1 packing its own blocks (geometry.self_packs: blocks up to
SELF_PACK_MAX_BLOCK and SELF_PACK_MAX_CTAS fc1 CTAs with routes, no route_pack
launch) against the reference: route_pack's
four buffers slot for slot, the intermediate, route_out and y
(tests/cuda/diff.py), outputs and scratch NaN-poisoned first.  The routings
stress the per-CTA pack: an expert over several blocks (one expert, skewed),
invalid ids, int64 ids, an expert map, an empty expert, every route invalid,
router weight on the input.  Under the simulator tiny shapes (the fma GEMM, 128
threads; the scan and ranks by thread 0, the simulator having no warp
intrinsics); on a GPU the wgmma GEMM at blocks of 8 and 16 (256 threads, warp
0's shuffles and ballots) up to E = SELF_PACK_MAX_EXPERTS."""
import numpy as np
import pytest

from pymoe import geometry as geo
from tests.cuda.diff import check_problem, problem_caps
from tests.gating import CUDASIM
from tests.problems import Case, make_problem

pytestmark = [pytest.mark.cudasim] if CUDASIM else [pytest.mark.gpu]

SIM_CASES = [
    Case(6, 32, 16, 5, 2, packed=True, invalid=(-1, 5), bias=True,
         why="invalid ids, bias, blocks of 8"),
    Case(8, 32, 16, 4, 2, packed=True, one_expert=True, seed=1,
         why="every route to expert 0: two blocks of one expert, the rest empty"),
    Case(9, 40, 24, 6, 3, packed=True, ep=True, seed=3, why="an expert map (EP)"),
    Case(7, 32, 16, 4, 2, packed=True, all_invalid=True, seed=2,
         why="no valid route: every block past the total, y exactly 0"),
    Case(18, 32, 16, 4, 2, packed=True, seed=10,
         why="a mean of 9 routes an expert: blocks of 16 since BLOCK_MAX_MEAN[16] = 9"),
]
GPU_CASES = [
    Case(8, 2048, 768, 128, 8, packed=True, seed=1, why="qwen3-like, T = 8, blocks of 8"),
    Case(64, 320, 192, 128, 8, packed=True, seed=2, why="T = 64: 4 routes an expert"),
    Case(100, 320, 192, 128, 8, packed=True, invalid=(-1, 128), bias=True, seed=3,
         why="blocks of 16, invalid ids, bias"),
    Case(64, 320, 192, 256, 8, packed=True, activation="swigluoai", layout="interleaved",
         bias=True, seed=4, why="E = SELF_PACK_MAX_EXPERTS, gpt-oss activation"),
    Case(16, 256, 128, 64, 4, packed=True, one_expert=True, seed=5,
         why="one expert takes all 64 routes: 8 blocks of it"),
    Case(24, 256, 128, 128, 8, packed=True, ep=True, dtype="float16", format="nvfp4",
         seed=6, why="expert map, NVFP4, fp16"),
    Case(32, 256, 128, 32, 4, packed=True, on_input=True, empty_expert=True, seed=7,
         why="router weight on the input, an empty expert"),
    Case(5, 256, 128, 16, 2, packed=True, all_invalid=True, seed=8, why="no valid route"),
]

INT64_CASE = (Case(6, 32, 16, 5, 2, packed=True, seed=9) if CUDASIM else
              Case(48, 256, 128, 64, 8, packed=True, seed=9))
GPU_KEY_CASES = GPU_CASES + [Case(48, 256, 128, 64, 8, packed=True, seed=9)]  # ptx_pack


def _gemm() -> str:
    return "fma" if CUDASIM else "wgmma"


def _check(p):
    caps = problem_caps(p)
    reg, b, _ = caps.shapes_for(p.case.T)
    assert reg == "packed" and caps.launch_keys(reg, b, _gemm(), num_tokens=p.case.T)[0] is None
    assert geo.self_packs(_gemm(), b, caps.num_experts, p.case.T * p.case.k,
                          caps.activation, caps.intermediate_size), (reg, b)
    check_problem(p, device=not CUDASIM, repeats=1 if CUDASIM else 3)


@pytest.mark.parametrize("case", SIM_CASES if CUDASIM else GPU_CASES, ids=str)
def test_self_pack_matches_reference(case):
    _check(make_problem(case))


def test_self_pack_int64_ids():
    """int64 topk_ids (read as int32 pairs), some past int32: invalid routes."""
    p = make_problem(INT64_CASE)
    ids = p.topk_ids.astype(np.int64)
    ids.ravel()[::7] = 2 ** 32 + 1
    ids.ravel()[3::11] = -2 ** 32
    p.topk_ids = ids
    _check(p)


def test_fc1_routes_argument_checked():
    """Both twins: a self-packing fc1 key needs routes=, any other refuses them,
    before anything runs."""
    from pymoe.ref.fc1 import check_routes
    key = geo.launch_keys("packed", 8, format="mxfp4", activation="silu", dtype="bfloat16",
                          hidden_size=64, intermediate_size=32, has_bias=False,
                          router_on_input=False, swiglu_limit=None, swiglu_alpha=None,
                          gemm="wgmma", num_experts=8, num_routes=16)[1]
    assert key.self_pack
    with pytest.raises(ValueError, match="routes: this fc1 key packs its own blocks"):
        check_routes(None, key)
    plain = geo.LaunchKey(**{**key.__dict__, "self_pack": False})
    with pytest.raises(ValueError, match="only an fc1 key with self_pack takes routes"):
        check_routes((None, None, None, None), plain)
    check_routes((None, None, None, None), key)
    check_routes(None, plain)
