"""Markers, GPU gating, hypothesis profiles and seeds, in one place.

Markers: gpu (CUDA GPU + numba-cuda + cupy), multi_gpu, slow, cudasim (run in its
own invocation with NUMBA_ENABLE_CUDASIM=1, which numba reads at import).
Hypothesis profiles: ``dev`` (default, quick) and ``ci`` (PYMOE_HYPOTHESIS_PROFILE=ci).
"""
import os

# NVLink multicast stays off wherever NCCL runs (it can take a shared host's GPUs
# out of service): set before any test initialises NCCL
os.environ["NCCL_NVLS_ENABLE"] = "0"

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("dev", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("PYMOE_HYPOTHESIS_PROFILE", "dev"))

from tests.gating import CUDASIM, GPUS  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--shard", default=None, metavar="I/N",
                     help="keep every N-th collected test starting at I (0-based), "
                          "so slow GPU runs (compute-sanitizer) can be split")


def pytest_collection_modifyitems(config, items):
    shard = config.getoption("--shard")
    if shard:
        i, n = (int(v) for v in shard.split("/"))
        if not 0 <= i < n:
            raise pytest.UsageError(f"--shard expects I/N with 0 <= I < N, got {shard!r}")
        keep = [it for j, it in enumerate(items) if j % n == i]
        config.hook.pytest_deselected(items=[it for it in items if it not in keep])
        items[:] = keep
    for item in items:
        if "cudasim" in item.keywords and not CUDASIM:
            item.add_marker(pytest.mark.skip(reason="runs under NUMBA_ENABLE_CUDASIM=1 only"))
        if CUDASIM and "cudasim" not in item.keywords:
            item.add_marker(pytest.mark.skip(reason="simulator invocation runs cudasim tests only"))
        if "gpu" in item.keywords and GPUS < 1:
            item.add_marker(pytest.mark.skip(reason="no CUDA GPU (cupy/numba-cuda)"))
        if "multi_gpu" in item.keywords and GPUS < 2:
            item.add_marker(pytest.mark.skip(reason="needs 2+ CUDA GPUs"))


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(1234)
    yield
