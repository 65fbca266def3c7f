"""CUDA kernels under Numba's simulator (NUMBA_ENABLE_CUDASIM=1), tiny shapes.

Run with:  NUMBA_ENABLE_CUDASIM=1 python -m pytest -q -m cudasim tests/cuda
Every kernel here uses only shared memory, atomics and __syncthreads, so the
simulator executes all of them (route_pack, decode_fc1/2, fc1, fc2, combine).
"""
import pytest

from tests.problems import Case
from tests.cuda.diff import check_case

pytestmark = pytest.mark.cudasim

CASES = [
    Case(1, 40, 24, 5, 2, why="decode regime, H and I not multiples of 32"),
    Case(1, 32, 16, 4, 2, format="nvfp4", dtype="float16", activation="relu2", bias=True,
         why="decode, NVFP4, fp16, relu2, bias"),
    Case(12, 40, 24, 5, 2, invalid=(-1, 5, 99), bias=True, activation="swigluoai",
         layout="interleaved", why="packed regime, invalid ids, gpt-oss activation"),
    Case(10, 32, 48, 3, 3, format="nvfp4", on_input=True, why="packed, NVFP4, k=E, router on input"),
    Case(9, 32, 16, 4, 1, ep=True, dtype="float16", why="packed, expert map"),
    Case(1, 32, 16, 4, 2, ep=True, invalid=(-1, 8, 2**31 - 1), why="decode, map + invalid"),
    Case(3, 32, 16, 4, 2, ep=True, invalid=(-1, 8, 2**31 - 1), why="packed, map + invalid"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_sim_matches_reference(case):
    check_case(case, device=False)


def test_sim_int64_ids():
    import numpy as np
    from tests.cuda.diff import run_case
    c = Case(11, 32, 16, 4, 2, seed=4)
    p, b, ref, runs = run_case(c, device=False)
    np.testing.assert_array_equal(runs[0]["packed_route_indices"], ref["packed_route_indices"])
