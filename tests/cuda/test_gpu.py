"""Differential tests on a real GPU (marker gpu): the CUDA twin against the NumPy
reference, every buffer, NaN-poisoned scratch and outputs, fresh random inputs."""
import numpy as np
import pytest

import pymoe
from tests.problems import Case
from tests.cuda.diff import check_case, run_case

pytestmark = pytest.mark.gpu

SHAPES = [(128, 128), (256, 144), (512, 224), (2880, 2880), (2048, 768), (40, 352)]
TOKENS = [0, 1, 2, 7, 8, 9, 33, 64, 65, 257, 1024]


def _families():
    out = []
    for h, i in SHAPES:                      # every T against every (H, I)
        for t in TOKENS:
            if (h, i) == (2880, 2880) and t > 257:
                continue                     # covered below with fewer experts
            out.append(Case(t, h, i, 8, 2, seed=t))
    out.append(Case(1024, 2880, 2880, 4, 2, why="largest T at gpt-oss width"))
    for e, k in [(1, 1), (7, 2), (7, 4), (8, 8), (128, 4), (128, 8)]:
        for t in (1, 9, 65, 257):
            out.append(Case(t, 256, 144, e, k, seed=e * 100 + t))
    out += [
        Case(1024, 512, 224, 128, 8, why="many experts, many routes"),
        Case(64, 256, 144, 8, 4, one_expert=True, why="one expert takes all routes"),
        Case(257, 256, 144, 8, 2, one_expert=True),
        Case(65, 256, 144, 8, 2, empty_expert=True, why="an empty expert"),
        Case(33, 256, 144, 8, 2, all_invalid=True, why="all routes invalid"),
        Case(5, 256, 144, 8, 2, all_invalid=True),
        Case(65, 256, 144, 8, 4, invalid=(-1, 8, 99, -2**31), why="invalid ids"),
        Case(3, 256, 144, 8, 4, invalid=(-1, 8, 99)),
        Case(65, 256, 144, 8, 2, ep=True, why="expert map"),
        Case(4, 256, 144, 8, 2, ep=True),
        Case(3, 8448, 64, 2, 2, why="H > one decode stage (8192): x re-staged per pass"),
        Case(3, 64, 8448, 2, 2, bias=True, why="I > one decode stage"),
        Case(12, 8448, 64, 2, 1, on_input=True, why="packed, wide H, router on input"),
        Case(2, 256, 2048, 8, 2, format="nvfp4", dtype="float16", activation="relu2", bias=True,
             why="decode_fc2's wide CTA (32 k-tiles), NVFP4, fp16"),
        Case(1, 256, 2080, 8, 4, activation="swigluoai", layout="interleaved", ep=True,
             why="decode_fc2's wide CTA over 33 k-tiles, the last a half tile (a K tail), "
             "gpt-oss activation, expert map"),
    ]
    for fmt in ("mxfp4", "nvfp4"):
        for dt in ("bfloat16", "float16"):
            for act, lay in (("silu", "gate_up"), ("swigluoai", "interleaved"),
                             ("relu2", "gate_up"), ("silu", "up_gate")):
                for t in (3, 36, 64, 100):   # decode; packed at blocks of 16, 24, 32
                    out.append(Case(t, 256, 144, 8, 2, dtype=dt, format=fmt, activation=act,
                                    layout=lay, bias=True, seed=t))
    for fmt, dt, act, lay in (("mxfp4", "bfloat16", "silu", "gate_up"),
                              ("nvfp4", "float16", "relu2", "gate_up"),
                              ("mxfp4", "float16", "swigluoai", "interleaved"),
                              ("nvfp4", "bfloat16", "silu", "up_gate")):
        out.append(Case(144, 256, 144, 8, 2, dtype=dt, format=fmt, activation=act, layout=lay,
                        bias=True, seed=144, why="blocks of 48 (a mean of 36)"))
    out.append(Case(560, 512, 224, 128, 8, why="many experts at blocks of 48"))
    for t in (1, 8, 9, 64):
        out.append(Case(t, 256, 144, 8, 1, on_input=True, why="router weight on input"))
        out.append(Case(t, 256, 144, 8, 2, on_input=True, format="nvfp4", dtype="float16"))
    return out


@pytest.mark.parametrize("case", _families(), ids=str)
def test_gpu_matches_reference(case):
    check_case(case, device=True)


@pytest.mark.parametrize("case", [Case(5, 2880, 2880, 8, 4, activation="swigluoai",
                                       layout="interleaved", bias=True),
                                  Case(300, 2048, 768, 16, 8)], ids=str)
def test_deterministic(case):
    check_case(case, device=True, repeats=5)


FOLD_CASES = [
    Case(1, 2880, 2880, 8, 4, activation="swigluoai", layout="interleaved", bias=True, seed=3),
    Case(3, 256, 2080, 8, 2, dtype="float16", seed=4, why="fp16, the wide decode_fc2 CTA"),
    Case(12, 256, 144, 1, 1, on_input=True, seed=5, why="two n-tiles a pass, router on input"),
]


@pytest.mark.parametrize("case", FOLD_CASES, ids=str)
def test_decode_fold_is_the_table_bit_for_bit(case, monkeypatch):
    """Where the packed GEMM is wgmma (sm_90, scale bytes that fold), MXFP4's
    decode keys fold the E8M0 scales into the weights' packed multiply
    (geometry.decode_folds); every bit of every buffer equals the table path's
    (PYMOE_GEMM=mma) on the same inputs."""
    import cupy as cp
    from tests.cuda.diff import problem_caps, run_problem
    from tests.problems import make_problem
    p = make_problem(case)
    caps = problem_caps(p)
    dev = cp.cuda.Device()
    cc = (int(dev.compute_capability[0]), int(dev.compute_capability[1:]))
    sb = pymoe.cuda.to_device(p.experts).scale_bytes
    if caps.gemms(cc, sb)[0] != "wgmma":
        pytest.skip(f"sm_{cc[0]}{cc[1]}: no folding decode keys (wgmma's scale fold is sm_90)")
    assert caps.shapes_for(case.T)[0] == "decode", case
    keys = caps.launch_keys("decode", None, "wgmma")
    assert keys[0].gemm == "wgmma"            # (decode_fc2 too on its wide CTA: I >= 2048)
    assert keys[1].gemm == ("wgmma" if case.I >= 2048 else ""), keys[1]
    got = {}
    for gemm in ("auto", "mma"):
        monkeypatch.setenv("PYMOE_GEMM", gemm)
        got[gemm] = run_problem(p, device=True)[3][0]
    for name, v in got["mma"].items():
        a = np.ascontiguousarray(got["auto"][name])
        b = np.ascontiguousarray(v)
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), f"{case}: {name} differs"


def test_one_plan_many_T():
    """One arena for T <= 257: every smaller T bound on the same scratch."""
    for t in (1, 8, 9, 100, 257):
        check_case(Case(t, 256, 144, 8, 4, seed=t), device=True, max_tokens=257)


def test_int64_ids_and_stream():
    import cupy as cp
    p, b, ref, runs = run_case(Case(40, 256, 144, 8, 2), device=True)
    prob_ids = cp.asarray(b.topk_ids.astype(np.int64))
    x, tw = cp.asarray(b.x), cp.asarray(b.topk_weights)
    s = cp.cuda.Stream(non_blocking=True)
    ew = pymoe.cuda.to_device(p.experts)
    # the inputs' copies ran on the current (legacy) stream, which a non-blocking
    # stream does not wait for: the caller orders them (unordered, on a GPU busy
    # with seven other test processes, the call on s returned a 100% mismatch on
    # 2026-12-04, most likely reading inputs whose copies had not landed)
    cp.cuda.get_current_stream().synchronize()
    y = pymoe.fused_moe(x, ew, tw, prob_ids, backend="cuda", stream=s)
    s.synchronize()
    np.testing.assert_array_equal(y.get().view(np.uint16), runs[0]["y"].view(np.uint16))


def test_demo_cli_runs_cuda():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "pymoe", "demo", "--tokens", "24"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cuda" in r.stdout and "OK" in r.stdout


@pytest.mark.parametrize("tokens", [1, 6, 40])
def test_gpu_device_expert_map_out_of_range_is_an_invalid_route(tokens):
    """On the device: expert-map values past the local experts (E, 2^31 - 1, and in an
    int64 map 2^32 and 2^40, whose high word the kernel checks; -5) make their
    routes invalid, bit for bit as a clean map with -1 there does."""
    import cupy as cp
    from pymoe.cuda import allocate_scratch, to_device
    from pymoe.cuda.runner import run
    from tests.problems import make_problem
    p = make_problem(Case(tokens, 32, 16, 4, 2, ep=True, seed=7))
    dev = to_device(p.experts)
    for dt, bad in ((np.int32, [4, 2 ** 31 - 1, -5]), (np.int64, [4, 2 ** 32, 2 ** 40, -5])):
        emap = p.expert_map.astype(dt)
        unmapped = np.flatnonzero(emap < 0)
        emap[unmapped[:len(bad)]] = bad
        clean = np.where((emap >= 0) & (emap < 4), emap, -1).astype(dt)
        caps = pymoe.Caps.for_weights(p.experts, max_tokens=tokens, top_k=2,
                                      global_num_experts=emap.shape[0])
        plan = pymoe.plan(caps)
        scratch = allocate_scratch(plan)
        outs = []
        for m in (clean, emap):
            b = plan.bind(scratch=scratch, x=cp.asarray(p.x.view(np.uint16)), experts=dev,
                          topk_weights=cp.asarray(p.topk_weights),
                          topk_ids=cp.asarray(p.topk_ids), expert_map=cp.asarray(clean))
            object.__setattr__(b, "expert_map", cp.asarray(m))   # an unvalidated device map
            outs.append(cp.asnumpy(run(b)).view(np.uint16).copy())
        ref = pymoe.run(plan.bind(scratch=np.zeros(plan.scratch_nbytes, np.uint8),
                                  x=p.x.view(np.uint16), experts=p.experts,
                                  topk_weights=p.topk_weights, topk_ids=p.topk_ids,
                                  expert_map=clean)).view(np.uint16)
        np.testing.assert_array_equal(outs[1], outs[0], err_msg=str(dt))
        from tests.cuda.diff import to_f32
        from pymoe.testing import assert_close
        assert_close(to_f32(outs[0], "bfloat16"), to_f32(ref, "bfloat16"), dtype="bfloat16",
                     what=f"{dt}: clean map vs the reference")


MISALIGNED_CASES = [
    Case(4, 256, 144, 8, 2, seed=3),
    Case(9, 272, 80, 6, 3, format="nvfp4", dtype="float16", activation="relu2", bias=True,
         why="K % 64 != 0 in both projections: the guarded last k-tile"),
    Case(40, 136, 200, 2, 2, on_input=True, activation="swigluoai", layout="interleaved",
         why="~40 routes an expert: 3 passes, two n-tiles, K tails"),
]


@pytest.mark.parametrize("case", MISALIGNED_CASES, ids=str)
def test_decode_misaligned_activations(case):
    """x not 4-byte aligned (a view one element into a larger buffer): the decode
    kernels take the 16-bit load path, and the result is the aligned run's bits
    (which check_case holds to the reference)."""
    import cupy as cp
    assert pymoe.geometry.regime_for(case.T, case.k) == "decode"
    check_case(case, device=True)
    p, b, ref, runs = run_case(case, device=True)
    ew = pymoe.cuda.to_device(p.experts)
    xb = cp.asarray(b.x)
    big = cp.empty(xb.size + 1, xb.dtype)
    x = big[1:].reshape(xb.shape)
    x[...] = xb
    assert x.data.ptr % 4 != 0
    y = pymoe.fused_moe(x, ew, cp.asarray(b.topk_weights), cp.asarray(b.topk_ids),
                        backend="cuda", apply_router_weight_on_input=case.on_input)
    np.testing.assert_array_equal(y.get().view(np.uint16),
                                  np.asarray(runs[0]["y"]).view(np.uint16))


_SPIN = r'''
extern "C" __global__ void spin(unsigned long long cycles) {
    unsigned long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
'''


def _hold_current_stream():
    """Idle the device, then keep the current stream busy ~0.5 s (a spinning
    kernel), so whatever is enqueued on it next waits behind that."""
    import cupy as cp
    cp.cuda.Device().synchronize()
    cp.RawKernel(_SPIN, "spin")((1,), (1,), (cp.uint64(10 ** 9),))


def test_uploaded_weights_are_ready_on_another_stream():
    """to_device enqueues its copies and the layout-v2 packing on the current
    stream; a call on a non-blocking stream right after it must see them done.
    A kernel spinning ~0.5 s on the current stream holds the upload back, so
    without to_device's wait the decode kernels would read unpacked weights."""
    import cupy as cp
    from pymoe.bench import _inputs, random_layer
    from pymoe.cuda import allocate_scratch, prewarm, to_device
    from pymoe.cuda.runner import run
    from pymoe.presets import PRESETS
    from tests.cuda.diff import poisoned, to_f32
    from pymoe.testing import assert_close
    pr = PRESETS["tiny"]
    rng = np.random.default_rng(11)
    x, w, ids = _inputs(rng, 3, pr, pr.num_experts, "bfloat16")     # x: bf16 bits
    warm = to_device(random_layer(pr, seed=1))           # compile every key first
    plan = pymoe.plan(pymoe.Caps.for_weights(warm, max_tokens=3, top_k=pr.top_k,
                                             dtype="bfloat16"))
    prewarm(plan, experts=warm, progress=False)
    scratch = allocate_scratch(plan)
    host = random_layer(pr, seed=2)                       # a fresh upload, same keys
    _hold_current_stream()                                # the current (null) stream
    dev = to_device(host)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        xd, wd, idd = cp.asarray(x), cp.asarray(w), cp.asarray(ids)
        out = cp.asarray(poisoned(x.shape, x.dtype))
    b = plan.bind(scratch=scratch, x=xd, experts=dev, topk_weights=wd, topk_ids=idd, out=out)
    run(b, stream=s)
    s.synchronize()
    want = pymoe.fused_moe(x, host, w, ids, backend="ref")
    assert_close(to_f32(cp.asnumpy(out), "bfloat16"), to_f32(want, "bfloat16"),
                 dtype="bfloat16", what="weights uploaded while the null stream was busy")


def test_one_shot_numpy_inputs_are_ready_on_another_stream():
    """fused_moe(backend='cuda') uploads NumPy inputs on the current stream and
    runs on the caller's; with that stream non-blocking and the current one
    busy (a spinning kernel), the call must still read the uploaded inputs."""
    import cupy as cp
    from pymoe.bench import _inputs, random_layer
    from pymoe.presets import PRESETS
    from pymoe.testing import assert_close
    from tests.cuda.diff import to_f32
    pr = PRESETS["tiny"]
    rng = np.random.default_rng(12)
    host = random_layer(pr, seed=3)
    x, w, ids = _inputs(rng, 5, pr, pr.num_experts, "bfloat16")
    pymoe.fused_moe(x, host, w, ids, backend="cuda")     # upload, plan, compile: cached
    x, w, ids = _inputs(rng, 5, pr, pr.num_experts, "bfloat16")     # fresh inputs
    _hold_current_stream()
    s = cp.cuda.Stream(non_blocking=True)
    y = pymoe.fused_moe(x, host, w, ids, backend="cuda", stream=s)
    s.synchronize()
    want = pymoe.fused_moe(x, host, w, ids, backend="ref")
    assert_close(to_f32(cp.asnumpy(y), "bfloat16"), to_f32(want, "bfloat16"),
                 dtype="bfloat16", what="inputs uploaded while the null stream was busy")
