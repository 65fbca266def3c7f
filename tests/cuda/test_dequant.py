"""The CUDA dequant twin equals the reference bit for bit (both decode the same
bytes with exact float32 products), on the GPU and under the simulator."""
import numpy as np
import pytest

from tests.problems import Case, make_problem
from pymoe.ref.dequant import dequant as ref_dequant

from tests.gating import CUDASIM

CASES = [Case(1, 40, 24, 5, 2), Case(1, 32, 48, 3, 2, format="nvfp4", activation="relu2"),
         Case(1, 80, 48, 4, 2, format="nvfp4")]


def _check(case):
    from pymoe.cuda.dequant import dequant
    ew = make_problem(case).experts
    for which in ("w13", "w2"):
        for g in (True, False):
            want = ref_dequant(ew, which, apply_global=g)
            got = dequant(ew, which, apply_global=g)
            got = got if isinstance(got, np.ndarray) else got.get()
            np.testing.assert_array_equal(got, want, err_msg=f"{which} global={g}")
        one = dequant(ew, which, ew.num_experts - 1)
        one = one if isinstance(one, np.ndarray) else one.get()
        np.testing.assert_array_equal(one, ref_dequant(ew, which, ew.num_experts - 1))


@pytest.mark.cudasim
@pytest.mark.parametrize("case", CASES[:2], ids=str)
def test_sim_dequant_matches_reference(case):
    assert CUDASIM
    _check(case)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES + [Case(1, 2880, 2880, 12, 2),   # 69120 rows > 65535
                                          Case(1, 2880, 2880, 4, 2, format="nvfp4")], ids=str)
def test_gpu_dequant_matches_reference(case):
    _check(case)


def test_dequant_rejects_bad_arguments():         # raised before any device work
    pytest.importorskip("numba")
    from pymoe.cuda.dequant import dequant
    ew = make_problem(CASES[0]).experts
    with pytest.raises(ValueError, match="which='w3'"):
        dequant(ew, "w3")
    with pytest.raises(ValueError, match="expert=5"):
        dequant(ew, "w2", 5)


@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
def test_dequant_compiles_to_ptx(fmt):
    pytest.importorskip("numba")
    from pymoe.cuda import launch
    if launch.SIM:
        pytest.skip("the simulator replaces the compiler")
    from pymoe.geometry import dequant_launch_key
    for which in ("w13", "w2"):
        key = dequant_launch_key(which, format=fmt, activation="swigluoai", hidden_size=2880,
                                 intermediate_size=2880)
        ptx, entry = launch.compile_ptx(key, (9, 0))
        assert ".target sm_90" in ptx and entry in ptx and ".local" not in ptx
