"""Without a GPU every CUDA entry point raises one pymoe error (NoCudaGPUError,
naming the entry point and what is_available() saw) before it allocates, draws a
progress bar or touches CuPy.  Runs where no GPU is (CI); on a GPU machine the
check is forced to fail to show the same path."""
import numpy as np
import pytest

import pymoe
from pymoe.cuda import availability
from tests.gating import CUDASIM


@pytest.fixture
def no_gpu(monkeypatch):
    if CUDASIM:
        pytest.skip("the simulator stands in for a GPU")
    if availability.is_available():                  # on a GPU machine: pretend
        monkeypatch.setattr(availability, "_SEEN", ["cupy sees 0 CUDA devices"])
    return availability.unavailable_reason()


def _experts():
    rng = np.random.default_rng(0)
    return pymoe.prepare_weights(rng.standard_normal((2, 64, 64)).astype(np.float32),
                                 rng.standard_normal((2, 64, 32)).astype(np.float32))


def test_every_cuda_entry_point_raises_one_clear_error(no_gpu, capsys):
    ew = _experts()
    plan = pymoe.plan(pymoe.Caps.for_weights(ew, max_tokens=4, top_k=1, dtype="float16"))
    x = np.zeros((2, 64), np.float16)
    w, ids = np.ones((2, 1), np.float32), np.zeros((2, 1), np.int32)
    calls = {
        "pymoe.cuda.to_device": lambda: pymoe.cuda.to_device(ew),
        "pymoe.cuda.allocate_scratch": lambda: pymoe.cuda.allocate_scratch(plan),
        "pymoe.cuda.prewarm": lambda: pymoe.cuda.prewarm(plan),
        "pymoe.fused_moe(backend='cuda')": lambda: pymoe.fused_moe(x, ew, w, ids,
                                                                   backend="cuda"),
        "pymoe.cuda.run": lambda: pymoe.cuda.run(None),
    }
    for name, call in calls.items():
        with pytest.raises(pymoe.cuda.NoCudaGPUError) as e:
            call()
        msg = str(e.value)
        assert msg.startswith(f"{name}: no CUDA GPU: ") and no_gpu in msg, msg
        assert "pymoe.cuda.is_available() is False" in msg
    assert "prewarm" not in capsys.readouterr().err            # no progress bar drawn
    assert issubclass(pymoe.cuda.NoCudaGPUError, RuntimeError)


def test_auto_backend_falls_back_to_the_reference(no_gpu):
    ew = _experts()
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float16)
    w, ids = np.ones((3, 1), np.float32), np.array([[0], [1], [0]], np.int32)
    y = pymoe.fused_moe(x, ew, w, ids, backend="auto")
    np.testing.assert_array_equal(y, pymoe.fused_moe(x, ew, w, ids, backend="ref"))
