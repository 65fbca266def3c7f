"""The combine kernel (kernels/fc2.py build_combine) against its reference twin,
launched directly so both of its route-validity paths run: once a CTA into
shared memory (top_k <= COMBINE_MAX_K) and by every thread (larger top_k,
forced here by shrinking COMBINE_MAX_K); H not a multiple of the CTA's columns,
invalid ids and an expert map; top_k 1, 6 and 8 (one chunk of COMBINE_CHUNK
routes clamped to the last route, a chunk and a part, two whole chunks); the
output NaN-poisoned first."""
import numpy as np
import pytest

from pymoe import geometry as geo
from tests.gating import CUDASIM

pytestmark = [pytest.mark.cudasim] if CUDASIM else [pytest.mark.gpu]


@pytest.mark.parametrize("k", [8, 6, 1])
@pytest.mark.parametrize("max_k", [geo.COMBINE_MAX_K, 2])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_combine_equals_reference(max_k, dtype, k, monkeypatch):
    from numba import cuda

    from pymoe.cuda.kernels import fc2 as kfc2
    from pymoe.cuda.kernels.routes import route_args
    from pymoe.dtypes import to_float32
    from pymoe.ref.fc2 import combine as ref_combine
    monkeypatch.setattr(kfc2, "COMBINE_MAX_K", max_k)
    T, E, H = (5, 6, 520) if CUDASIM else (300, 64, 2056)
    rng = np.random.default_rng(max_k + len(dtype) + 100 * k)
    ids = rng.integers(0, E, (T, k)).astype(np.int32)
    ids[rng.random((T, k)) < 0.2] = -1
    emap = np.full(E, -1, np.int32)
    emap[: E // 2 + 1] = np.arange(E // 2 + 1, dtype=np.int32)  # EP: some ids elsewhere
    ne = E // 2 + 1
    route_out = rng.standard_normal((T * k, H)).astype(np.float32)
    key = geo.LaunchKey("combine", format="", activation="", dtype=dtype, hidden_size=H,
                        intermediate_size=0, tile_n=geo.COMBINE_TILE_N)
    spec = kfc2.build_combine(key)
    odt = np.uint16 if dtype == "bfloat16" else np.float16
    want = np.zeros((T, H), odt)
    ref_combine(route_out, ids, emap, ne, want, key=key)
    ida, stride, em, has_map, num_ids = route_args(ids, emap, ne)
    xp = np
    if not CUDASIM:
        import cupy as xp
    out = xp.asarray(np.full(T * H, 0xFFFF if dtype == "bfloat16" else np.nan, odt))
    args = (xp.asarray(route_out.reshape(-1)), xp.asarray(ida), stride, k, xp.asarray(em),
            has_map, num_ids, out)
    grid = (-(-H // key.tile_n), T)
    cuda.jit(spec.pyfunc)[grid, spec.threads](*args)
    got = np.asarray(out.get() if hasattr(out, "get") else out).reshape(T, H)
    np.testing.assert_array_equal(to_float32(got, dtype), to_float32(want, dtype))
