"""CUDA kernels under Numba's simulator (NUMBA_ENABLE_CUDASIM=1), tiny shapes.

Run with:  NUMBA_ENABLE_CUDASIM=1 python -m pytest -q -m cudasim tests/cuda
The packed kernels use only shared memory, atomics and __syncthreads; the decode
kernels' tensor-core step has a plain per-lane twin there (kernels/decode.py), so
the simulator executes all of them (route_pack, decode_fc1/2, fc1, fc2, combine).
"""
import pytest
from numba import cuda

from tests.problems import Case
from tests.cuda.diff import check_case

pytestmark = pytest.mark.cudasim

CASES = [
    Case(1, 40, 24, 5, 2, why="decode regime, H and I not multiples of 32"),
    Case(1, 32, 16, 4, 2, format="nvfp4", dtype="float16", activation="relu2", bias=True,
         why="decode, NVFP4, fp16, relu2, bias"),
    Case(12, 40, 24, 5, 2, invalid=(-1, 5, 99), bias=True, activation="swigluoai",
         layout="interleaved", why="decode (T=12), invalid ids, gpt-oss activation"),
    Case(10, 32, 48, 3, 3, format="nvfp4", on_input=True, why="decode (T=10), NVFP4, k=E, router on input"),
    Case(9, 32, 16, 4, 1, ep=True, dtype="float16", why="decode (T=9), fp16, expert map"),
    Case(1, 32, 16, 4, 2, ep=True, invalid=(-1, 8, 2**31 - 1), why="decode, map + invalid"),
    Case(3, 32, 16, 4, 2, ep=True, invalid=(-1, 8, 2**31 - 1), why="decode, T=3, map + invalid"),
    Case(66, 32, 16, 4, 1, invalid=(-1, 4), bias=True, why="packed regime (T past the decode cut)"),
    Case(260, 32, 16, 2, 1, invalid=(-1,), why="blocks of 128 (a mean of ~130 routes an "
         "expert): the fma GEMM in CTAs of 64-route sub-blocks, padding sub-blocks exit"),
    Case(20, 584, 40, 2, 2, why="decode ring: fc1 10 k-tiles (of 4 warps two take 3, the "
         "last guarded), fc2 1 (3 warps idle), ~20 routes an expert (2 passes of 16), "
         "several row tiles a CTA"),
    Case(20, 344, 48, 2, 2, why="decode ring of row-tile pairs (fc1 6 and fc2 22 row tiles): "
         "a guarded K tail in both, 2 passes, several pairs a CTA"),
    Case(2, 16, 2048, 2, 1, why="decode_fc2 over 32 k-tiles: the wide CTA (8 warps, K split "
         "8 ways, one n-tile a pass); fc1 128 row-tile pairs over a 16-wide K"),
    Case(1, 16, 2080, 2, 1, seed=1, why="the wide CTA over 33 k-tiles: one warp takes 5, "
         "the last a half tile (the simulator checks that only that k-tile takes the "
         "guarded step)"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_sim_matches_reference(case):
    check_case(case, device=False)


def test_sim_int64_ids():
    """int64 topk_ids (read as int32 pairs) in both regimes: route_pack's buffers
    and every other buffer equal the reference's."""
    import numpy as np
    from tests.cuda.diff import check_problem
    from tests.problems import make_problem
    for t in (5, 70):                                   # decode, packed
        p = make_problem(Case(t, 32, 16, 4, 2, invalid=(-1, 4), seed=4))
        p.topk_ids = p.topk_ids.astype(np.int64)
        check_problem(p, device=False)


def test_sim_device_expert_map_out_of_range_is_an_invalid_route():
    """A device expert map is not validated: values past the local experts (E,
    2^31 - 1, 2^32, 2^40 in an int64 map, -5) make their routes invalid, in the
    CUDA twin exactly as in the reference."""
    import numpy as np
    import pymoe
    from pymoe.cuda.device_weights import to_device
    from pymoe.cuda.runner import run
    from tests.problems import make_problem
    p = make_problem(Case(6, 32, 16, 4, 2, ep=True, seed=7))
    for dt, bad in ((np.int32, [4, 2 ** 31 - 1, -5]), (np.int64, [4, 2 ** 32, 2 ** 40, -5])):
        emap = p.expert_map.astype(dt)
        unmapped = np.flatnonzero(emap < 0)
        emap[unmapped[:len(bad)]] = bad
        caps = pymoe.Caps.for_weights(p.experts, max_tokens=6, top_k=2,
                                      global_num_experts=emap.shape[0])
        plan = pymoe.plan(caps)
        clean = np.where((emap >= 0) & (emap < 4), emap, -1).astype(dt)
        outs = []
        for device in (False, True, None):          # ref, CUDA twin: bad map; ref: clean map
            b = plan.bind(scratch=np.zeros(plan.scratch_nbytes, np.uint8),
                          x=p.x.view(np.uint16), experts=to_device(p.experts) if device
                          else p.experts, topk_weights=p.topk_weights, topk_ids=p.topk_ids,
                          expert_map=clean)
            if device is not None:                  # as an unvalidated device map would be
                object.__setattr__(b, "expert_map", emap)
            outs.append((run(b) if device else pymoe.run(b)).view(np.uint16).copy())
        np.testing.assert_array_equal(outs[1], outs[0], err_msg=str(dt))
        np.testing.assert_array_equal(outs[2], outs[0], err_msg=str(dt))


def test_sim_to_device_without_packed_rows():
    """to_device(packed_rows=False) keeps layout v2 only: the packed rows, their
    scales and word views are None, the device bytes drop by the packed copy, the
    dequant debug op refuses before any launch, and a full upload serves later
    v2-only requests (not the other way round)."""
    import numpy as np
    from pymoe.cuda import dequant as dq
    from pymoe.cuda import device_weights as dw
    from tests.problems import make_problem
    ew = make_problem(Case(66, 32, 16, 4, 1)).experts
    lean = dw.to_device(ew, packed_rows=False)
    assert not lean.has_packed_rows and "packed_rows=False" in repr(lean)
    assert lean.w13 is None and lean.w2_scales is None and lean.w2_words is None
    assert lean.w13_v2 is not None and lean.w2_v2_scales is not None
    assert dw.to_device(ew, packed_rows=False) is lean            # cached
    with pytest.raises(ValueError, match="packed_rows=False; dequant reads the packed rows"):
        dq.dequant(lean, "w13")
    with pytest.raises(ValueError, match="uploaded with packed_rows=False"):
        dw.to_device(lean)
    full = dw.to_device(ew)
    assert full.has_packed_rows and full is not lean
    assert dw.to_device(ew, packed_rows=False) is full             # the full one serves
    packed = sum(int(np.asarray(a).nbytes) for a in (ew.w13, ew.w13_scales, ew.w2,
                                                       ew.w2_scales))
    assert full.device_nbytes - lean.device_nbytes == packed


def _scale_values(fmt):
    """float32[256]: each scale byte's value by the format's own decoder."""
    import numpy as np
    from pymoe import formats
    b = np.arange(256, dtype=np.uint8)
    v = formats.decode_e8m0(b) if fmt == "mxfp4" else formats.decode_e4m3(b)
    return np.asarray(v, np.float64).astype(np.float32)


@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
def test_sim_scale_value_is_the_table(fmt):
    """Every kernel makes its scale values from the byte
    (common.make_scale_value): every one of the 256 bytes gives the bits of
    the format's decoder (pymoe.formats), NaN as 0x7FC00000."""
    import numpy as np
    from pymoe.cuda.kernels.common import make_scale_value

    scale_value = make_scale_value(fmt)

    @cuda.jit
    def fill(out):
        i = cuda.threadIdx.x
        out[i] = scale_value(i)

    got = np.full(256, np.nan, np.float32)
    fill[1, 256](got)
    want = _scale_values(fmt)
    want_bits = np.where(np.isnan(want), np.uint32(0x7FC00000), want.view(np.uint32))
    assert np.array_equal(got.view(np.uint32), want_bits), \
        np.nonzero(got.view(np.uint32) != want_bits)[0][:8]


@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
def test_sim_fill_tables_are_the_tables(fmt):
    """The plain GEMM's shared tables (common.make_fill_tables, no global
    table): f4 the 16 codes' quarters, sl every scale byte's value / 4 bit for
    bit (NaN where it is NaN), filled by a CTA of 64 threads, so each thread
    makes several entries."""
    import numpy as np
    from numba import float32
    from pymoe.cuda.kernels.common import make_fill_tables
    from pymoe.formats import FP4_VALUES

    fill_tables = make_fill_tables(fmt)

    @cuda.jit
    def fill(f4_out, sl_out):
        f4 = cuda.shared.array(16, float32)
        sl = cuda.shared.array(256, float32)
        fill_tables(f4, sl, 64)
        cuda.syncthreads()
        i = cuda.threadIdx.x
        if i < 16:
            f4_out[i] = f4[i]
        for j in range(i, 256, 64):
            sl_out[j] = sl[j]

    f4 = np.full(16, np.nan, np.float32)
    sl = np.full(256, np.nan, np.float32)
    fill[1, 64](f4, sl)
    assert np.array_equal(f4, (np.asarray(FP4_VALUES, np.float64) * 4).astype(np.float32))
    want = (_scale_values(fmt).astype(np.float64) / 4).astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(sl), nan)
    assert np.array_equal(sl.view(np.uint32)[~nan], want.view(np.uint32)[~nan]), \
        np.nonzero(sl.view(np.uint32) != want.view(np.uint32))[0][:8]
