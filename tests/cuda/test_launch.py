"""Launch resolution: memory/disk caches, capture contract, freeze, prewarm.

The first group runs on any machine: streams are fakes, the compiler and the
disk are spies.  The second (marker gpu) captures real CUDA graphs."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pymoe
from tests.cuda.ptxas import assemble
from pymoe import geometry as geo

launch = pytest.importorskip("pymoe.cuda.launch")
cuda = launch.cuda

KEY = geo.LaunchKey("decode_fc1", format="mxfp4", activation="silu", dtype="bfloat16",
                    hidden_size=64, intermediate_size=32, tile_n=16)


class FakeStream:
    def __init__(self, ptr, capturing):
        self.ptr, self.capturing = ptr, capturing


@pytest.fixture
def spies(monkeypatch):
    """Fake device, fake capture query, and spies on every side effect of a miss."""
    calls = []
    monkeypatch.setattr(launch, "_device_id", lambda: 0)
    monkeypatch.setattr(launch, "is_capturing", lambda s: bool(s is not None and s.capturing))
    monkeypatch.setattr(launch, "_disk_read", lambda *a: calls.append("disk") or None)
    monkeypatch.setattr(launch.cuda, "compile_ptx", lambda *a, **k: calls.append("compile"))
    monkeypatch.setattr(launch, "_load_gpu", lambda key, spec: calls.append("load") or
                        launch.Kernel(key, spec, object(), "compiled"))
    # (the fake function takes no dynamic-shared-memory opt-in: the decode
    # kernels' ring is dynamic shared memory)
    monkeypatch.setattr(launch, "_opt_in_smem", lambda function, nbytes: None)
    saved = dict(launch._MEMORY)
    launch._MEMORY.clear()
    yield calls
    launch._MEMORY.clear()
    launch._MEMORY.update(saved)
    launch.unfreeze()


def test_capture_miss_raises_before_any_side_effect(spies):
    with pytest.raises(pymoe.cuda.LaunchNotResolvedError,
                       match=r"kernel 'decode_fc1' is not resolved while the selected stream "
                             r"is capturing.*key=LaunchKey.*prewarm"):
        launch.resolve(KEY, FakeStream(1, capturing=True))
    assert spies == []
    assert issubclass(pymoe.cuda.LaunchNotResolvedError, RuntimeError)


def test_selected_stream_decides_not_the_current_one(spies):
    selected, current = FakeStream(1, True), FakeStream(2, False)
    with pytest.raises(pymoe.cuda.LaunchNotResolvedError):
        launch.resolve(KEY, selected)
    assert spies == []
    k = launch.resolve(KEY, current)        # the reverse: selected idle -> resolves
    assert spies == ["load"] and k.key == KEY


def test_memory_hit_is_legal_during_capture(spies):
    k = launch.resolve(KEY, None)
    spies.clear()
    assert launch.resolve(KEY, FakeStream(1, True)) is k
    launch.freeze()
    assert launch.resolve(KEY, FakeStream(1, True)) is k
    assert spies == []


def test_freeze_makes_every_miss_raise(spies):
    launch.freeze()
    assert pymoe.cuda.is_frozen()
    with pytest.raises(pymoe.cuda.KernelResolutionFrozenError, match="freeze"):
        launch.resolve(KEY, FakeStream(1, False))
    with pytest.raises(pymoe.cuda.LaunchNotResolvedError):   # a subclass: one except catches both
        launch.resolve(KEY, None)
    assert spies == []
    launch.unfreeze()
    assert not pymoe.cuda.is_frozen()
    launch.resolve(KEY, None)
    assert spies == ["load"]


def test_disk_entries_are_verified(tmp_path):
    path = str(tmp_path / "ab" / "x.ptx")
    launch._disk_write(path, "d1", ".version 8.0\n.entry foo(\n")
    assert launch._disk_read(path, "d1") == ".version 8.0\n.entry foo(\n"
    assert launch._disk_read(path, "other") is None                      # foreign
    text = open(path).read()
    open(path, "w").write(text[:-5])                                     # truncated
    assert launch._disk_read(path, "d1") is None
    open(path, "w").write(text.replace("foo", "bar"))                    # corrupt body
    assert launch._disk_read(path, "d1") is None
    open(path, "wb").write(b"\xff\x00garbage")                           # not text
    assert launch._disk_read(path, "d1") is None
    assert launch._disk_read(str(tmp_path / "missing.ptx"), "d1") is None
    assert [f for f in os.listdir(tmp_path / "ab") if f.startswith(".tmp")] == []


def test_disk_key_covers_key_cc_and_versions(monkeypatch):
    monkeypatch.setattr(launch, "_versions", lambda: {"numba": "1", "numba_cuda": "1",
                                                      "driver": 1})
    a = launch.disk_key(KEY, (9, 0))
    assert a == launch.disk_key(KEY, (9, 0))
    assert a != launch.disk_key(KEY, (8, 0))
    assert a != launch.disk_key(geo.LaunchKey("decode_fc1", format="nvfp4", activation="silu",
                                              dtype="bfloat16", hidden_size=64,
                                              intermediate_size=32, tile_n=16), (9, 0))
    monkeypatch.setattr(launch, "_versions", lambda: {"numba": "2", "numba_cuda": "1",
                                                      "driver": 1})
    assert a != launch.disk_key(KEY, (9, 0))


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("PYMOE_CACHE_DIR", str(tmp_path))
    assert launch.cache_dir() == str(tmp_path)
    monkeypatch.delenv("PYMOE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert launch.cache_dir() == str(tmp_path / "x" / "pymoe")
    monkeypatch.setenv("PYMOE_DISK_CACHE", "maybe")
    with pytest.raises(ValueError, match="PYMOE_DISK_CACHE='maybe'"):
        pymoe.env.get_bool("PYMOE_DISK_CACHE", True)


# ------------------------------------------------------------------ PTX, no GPU

PTX_PRESETS = [("gpt-oss-20b", 256), ("qwen3-30b-a3b", 64), ("tiny", 300)]


@pytest.mark.parametrize("preset,max_tokens", PTX_PRESETS)
@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
def test_every_reachable_kernel_compiles_to_ptx(preset, max_tokens, fmt, monkeypatch):
    """CI compiles every LaunchKey the planner can reach for sm_90, no GPU needed."""
    if launch.SIM:
        pytest.skip("the simulator replaces the compiler")
    monkeypatch.setenv("PYMOE_GEMM", "mma")
    from pymoe.presets import PRESETS
    pr = PRESETS[preset]
    caps = pymoe.Caps(max_tokens=max_tokens, top_k=pr.top_k, num_experts=pr.num_experts,
                      hidden_size=pr.hidden_size, intermediate_size=pr.intermediate_size,
                      format=fmt, activation=pr.activation, w13_layout=pr.w13_layout,
                      has_bias=pr.bias)
    keys = {k for reg, b, _, _ in caps.buckets() for k in caps.launch_keys(reg, b)
            if k is not None}         # (None: no route_pack launch, geometry.self_packs)
    assert {k.kernel for k in keys} >= {"decode_fc1", "decode_fc2"}
    for key in keys:
        ptx, entry = launch.compile_ptx(key, (9, 0))
        assert ".target sm_90" in ptx and entry in ptx, key
        assert ".local" not in ptx, f"{key.kernel}: local memory (spills / local arrays)"
        assemble(ptx)                 # the local ptxas, when there is one, accepts it
        if key.kernel in ("decode_fc1", "decode_fc2"):
            # codegen hygiene of the layout-v2 stream: weights through the cp.async
            # ring (16-byte copies that skip L1, all stages but one in flight,
            # read back as 16-byte shared loads), 4-byte .nc activation pairs (the
            # mma B fragment's two pairs of a route and k-step), tensor cores, no
            # local memory
            ntr = geo.v2_row_tiles("w13" if key.kernel == "decode_fc1" else "w2",
                                   key.activation, key.hidden_size, key.intermediate_size)
            assert "cp.async.cg.shared.global" in ptx, key.kernel
            stages = geo.decode_ring_stages(ntr)
            assert f"cp.async.wait_group {stages - 1};" in ptx, key.kernel
            assert "ld.shared.v4.u32" in ptx, key.kernel
            assert "ld.global.nc.u32" in ptx, key.kernel
            assert "mma.sync.aligned.m16n8k16" in ptx and "bar.sync" in ptx, key.kernel
            # the rank-th active expert by a warp shuffle prefix, and the ring's
            # first weights copied before the scan for that expert's routes (the
            # atomic adds that place them)
            assert "shfl.sync.up.b32" in ptx, key.kernel
            assert ptx.index("cp.async.cg.shared.global") < ptx.index("atom.shared.add"), \
                key.kernel
        if key.kernel == "combine":
            # a chunk of routes' rows loaded at once, 16 bytes a route, after the wait
            assert ptx.count("ld.global.v4.u32") == geo.COMBINE_CHUNK, ptx.count("ld.global.v4")
            assert ptx.index("griddepcontrol.wait;") < ptx.index("ld.global.v4.u32")
        if key.kernel in ("fc1", "fc2"):          # tensor cores (PYMOE_GEMM=mma, the default)
            assert "mma.sync.aligned.m16n8k16" in ptx and "bar.sync" in ptx, key.kernel


def test_dependent_launch_waits_are_in_sm90_ptx_only():
    """decode_fc1 / decode_fc2 (and route_pack, the packed fc1 / fc2) let their
    dependents start (launch_dependents) and decode_fc2 / the combine (and the
    packed fc1 / fc2) wait (griddepcontrol.wait) before reading the grid before
    them: in PTX for sm_90; for sm_80, where the instructions do not exist
    and nothing is launched dependent, _compile removes them (ptxas accepts both)."""
    if launch.SIM:
        pytest.skip("the simulator replaces the compiler")
    wait, trigger = "griddepcontrol.wait;", "griddepcontrol.launch_dependents;"
    fc2 = geo.LaunchKey("decode_fc2", format="mxfp4", activation="silu", dtype="bfloat16",
                        hidden_size=64, intermediate_size=32, tile_n=16)
    comb = geo.LaunchKey("combine", format="", activation="", dtype="bfloat16",
                         hidden_size=64, intermediate_size=0, tile_n=geo.COMBINE_TILE_N)
    kw = dict(format="mxfp4", activation="silu", dtype="bfloat16", hidden_size=64,
              intermediate_size=32, has_bias=False, router_on_input=False,
              swiglu_limit=None, swiglu_alpha=None)
    rp, pfc1, pfc2, _ = geo.launch_keys("packed", 16, gemm="mma", **kw)
    want = {KEY: (False, True), fc2: (True, True), comb: (True, False),
            rp: (False, True), pfc1: (True, True), pfc2: (True, True)}
    for key, (waits, triggers) in want.items():
        ptx90, _ = launch.compile_ptx(key, (9, 0))
        assert (wait in ptx90, trigger in ptx90) == (waits, triggers), key.kernel
        ptx80, _ = launch.compile_ptx(key, (8, 0))
        assert "griddepcontrol" not in ptx80, key.kernel
        assemble(ptx90)
        assemble(ptx80)


def test_pdl_switch(monkeypatch):
    """PYMOE_PDL=0 (or a device before sm_90, or no cuLaunchKernelEx binding)
    turns dependent launches into ordinary ones; a bad value is refused."""
    monkeypatch.setattr(launch, "SIM", False)
    monkeypatch.setattr(launch, "_device_cc", lambda: (9, 0))
    assert launch.pdl_enabled() == launch._has_launch_ex()
    monkeypatch.setattr(launch, "_has_launch_ex", lambda: True)
    assert launch.pdl_enabled()
    monkeypatch.setenv("PYMOE_PDL", "0")
    assert not launch.pdl_enabled()
    monkeypatch.setenv("PYMOE_PDL", "1")
    monkeypatch.setattr(launch, "_device_cc", lambda: (8, 9))
    assert not launch.pdl_enabled()
    monkeypatch.setenv("PYMOE_PDL", "later")
    with pytest.raises(ValueError, match="PYMOE_PDL='later'"):
        launch.pdl_enabled()


# ------------------------------------------------------------------ on the GPU

def _gpu_problem(T, E=8, H=256, I=128, k=4, seed=0):
    from tests.problems import Case, make_problem
    return make_problem(Case(T, H, I, E, k, seed=seed))


def _bound_decode(T, H, I):
    """A decode-regime problem (T = 1) bound to device buffers (out included)."""
    import cupy as cp
    prob = _gpu_problem(T, H=H, I=I)
    ew = pymoe.cuda.to_device(prob.experts)
    plan = pymoe.plan(pymoe.Caps.for_weights(prob.experts, max_tokens=8, top_k=4))
    assert geo.regime_for(T) == "decode"
    x = cp.asarray(prob.x.view(np.uint16))
    return prob, plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), x=x, experts=ew,
                           topk_weights=cp.asarray(prob.topk_weights),
                           topk_ids=cp.asarray(prob.topk_ids), out=cp.empty_like(x))


@pytest.mark.gpu
@pytest.mark.parametrize("T", [1, 3, 8, 24, 64])
def test_graph_capture_replay_matches_eager(T):
    import cupy as cp
    prob = _gpu_problem(T)
    ew = pymoe.cuda.to_device(prob.experts)
    caps = pymoe.Caps.for_weights(prob.experts, max_tokens=64, top_k=4)
    plan = pymoe.plan(caps)
    pymoe.cuda.prewarm(plan, progress=False)
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.asarray(prob.x.view(np.uint16))
    w = cp.asarray(prob.topk_weights)
    ids = cp.asarray(prob.topk_ids)
    out = cp.empty_like(x)
    scratch = pymoe.cuda.allocate_scratch(plan)
    b = plan.bind(scratch=scratch, x=x, experts=ew, topk_weights=w, topk_ids=ids, out=out)
    pymoe.run(b, stream=s)                     # eager first run prepares the launches
    s.synchronize()
    assert cp.cuda.get_current_stream() != s
    s.begin_capture()
    pymoe.run(b, stream=s)
    graph = s.end_capture()
    scratch2 = pymoe.cuda.allocate_scratch(plan)
    rng = np.random.default_rng(T)
    for rep in range(16):
        nx = (rng.standard_normal(x.shape).astype(np.float32).view(np.uint32) >> 16
              ).astype(np.uint16)
        nw, nids = pymoe.route_topk(rng.standard_normal((T, 8)), 4)
        with s:                                 # uploads ordered before s reads them
            x2, w2, ids2 = cp.asarray(nx), cp.asarray(nw), cp.asarray(nids)
        want = pymoe.run(plan.bind(scratch=scratch2, x=x2, experts=ew, topk_weights=w2,
                                   topk_ids=ids2), stream=s)
        with s:
            x[...] = x2
            w[...] = w2
            ids[...] = ids2
            out.fill(0xFFFF)                    # NaN poison between replays
        graph.launch(s)
        s.synchronize()
        assert not np.isnan((out.get().astype(np.uint32) << 16).view(np.float32)).any()
        np.testing.assert_array_equal(out.get(), want.get(), err_msg=f"replay {rep}")


@pytest.mark.gpu
@pytest.mark.parametrize("T", [1, 8, 64])
def test_dependent_launches_match_ordinary_ones_eager_and_replayed(T, monkeypatch):
    """On sm_90 decode_fc2 and the combine of a decode call of at most
    DECODE_PDL_MAX_ROUTES routes, and a packed call's fc1, fc2 and combine, go
    out as programmatic dependent launches
    (they may start while the kernel before them runs): bit-equal to PYMOE_PDL=0's
    ordinary launches of the same kernels, eager and in 16 graph replays on fresh
    inputs with the output NaN-poisoned, and equal to the reference."""
    import cupy as cp
    from pymoe.testing import assert_close
    prob = _gpu_problem(T, H=320, I=192, seed=T)
    ew = pymoe.cuda.to_device(prob.experts)
    plan = pymoe.plan(pymoe.Caps.for_weights(prob.experts, max_tokens=64, top_k=4))
    pymoe.cuda.prewarm(plan, progress=False)
    pdl = launch.pdl_enabled()
    s = cp.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(100 + T)
    runs = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("PYMOE_PDL", flag)
        with s:
            x = cp.asarray(prob.x.view(np.uint16))
            w, ids = cp.asarray(prob.topk_weights), cp.asarray(prob.topk_ids)
            out = cp.full(x.shape, 0xFFFF, cp.uint16)
        b = plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), x=x, experts=ew,
                      topk_weights=w, topk_ids=ids, out=out)
        pymoe.run(b, stream=s)                        # eager, prepares the launches
        s.synchronize()
        deps = [p.dependent for p in b.cache["launches"]]
        dep = b.regime == "decode" and geo.decode_dependent(T * 4)
        want = [False, dep, dep] if b.regime == "decode" else [False, True, True, True]
        assert deps == [d and pdl and flag == "1" for d in want], deps
        got = [out.get()]
        s.begin_capture()
        pymoe.run(b, stream=s)
        g = s.end_capture()
        runs[flag] = (b, x, w, ids, out, g, got)
    inputs = [(prob.x.view(np.uint16), prob.topk_weights, prob.topk_ids)]
    for rep in range(16):
        nx = (rng.standard_normal(prob.x.shape).astype(np.float32).view(np.uint32) >> 16
              ).astype(np.uint16)
        nw, nids = pymoe.route_topk(rng.standard_normal((T, 8)), 4)
        inputs.append((nx, nw, nids))
        for b, x, w, ids, out, g, got in runs.values():
            with s:
                x.set(nx, stream=s)
                w.set(np.ascontiguousarray(nw), stream=s)
                ids.set(np.ascontiguousarray(nids), stream=s)
                out.fill(0xFFFF)                      # NaN poison
            g.launch(s)
            s.synchronize()
            got.append(out.get())
    for i, (nx, nw, nids) in enumerate(inputs):
        a, o = runs["1"][6][i], runs["0"][6][i]
        assert not np.isnan((a.astype(np.uint32) << 16).view(np.float32)).any(), i
        np.testing.assert_array_equal(a, o, err_msg=f"run {i}: PDL on / off")
        if i in (0, len(inputs) - 1):
            ref = pymoe.fused_moe(nx.view(prob.x.dtype), prob.experts, nw, nids)
            assert_close(a.view(prob.x.dtype), ref, what=f"T={T} run {i}")


@pytest.mark.gpu
def test_capture_of_unresolved_key_raises_and_capture_can_end(monkeypatch):
    import cupy as cp
    prob, b = _bound_decode(1, H=192, I=96)              # a shape nothing else compiles
    calls = []
    monkeypatch.setattr(launch, "_disk_read", lambda *a: calls.append("disk"))
    monkeypatch.setattr(launch.cuda, "compile_ptx", lambda *a, **k: calls.append("compile"))
    s = cp.cuda.Stream(non_blocking=True)
    s.begin_capture()
    with pytest.raises(pymoe.cuda.LaunchNotResolvedError, match="decode_fc1"):
        pymoe.run(b, stream=s)
    graph = s.end_capture()                              # no CUDA error: capture intact
    graph.launch(s)
    s.synchronize()
    assert calls == []


@pytest.mark.gpu
def test_capture_on_current_stream_does_not_block_an_idle_selected_stream():
    """The reverse: the current stream captures, the selected one does not, so an
    unresolved launch resolves and runs on the selected stream."""
    import cupy as cp
    prob, b = _bound_decode(1, H=160, I=96)
    cap, sel = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with cap:
        cap.begin_capture(mode=cp.cuda.runtime.streamCaptureModeRelaxed)
        assert cp.cuda.get_current_stream().is_capturing()
        y = pymoe.run(b, stream=sel)
        cap.end_capture()
    sel.synchronize()
    want = pymoe.fused_moe(prob.x, prob.experts, prob.topk_weights, prob.topk_ids)
    np.testing.assert_array_equal(y.get(), want.view(np.uint16))


CHILD = textwrap.dedent("""
    import json, sys, time
    import numba.cuda
    import pymoe
    from pymoe.cuda import launch
    calls = []
    real = numba.cuda.compile_ptx
    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)
    launch.cuda.compile_ptx = spy
    from pymoe.presets import PRESETS
    p = PRESETS["gpt-oss-20b"]
    caps = pymoe.Caps(max_tokens=256, top_k=p.top_k, num_experts=p.num_experts,
                      hidden_size=p.hidden_size, intermediate_size=p.intermediate_size,
                      activation=p.activation, w13_layout=p.w13_layout, has_bias=True,
                      swiglu_limit=7.0, swiglu_alpha=1.702)
    import cupy; cupy.cuda.Device().synchronize()
    r = pymoe.cuda.prewarm(pymoe.plan(caps), progress=False)
    print(json.dumps(dict(compiled=r.compiled, disk=r.disk, keys=r.keys, seconds=r.seconds,
                          compiler_calls=len(calls))))
""")


def _child(cache_dir):
    env = dict(os.environ, PYMOE_CACHE_DIR=str(cache_dir))
    return subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.gpu
def test_disk_cache_fresh_process_compiles_nothing_and_corrupt_entries_recompile(tmp_path):
    # The cold/warm time ratio is measured in benchmarks/host_overhead.py, not here.
    cold = _result(_child(tmp_path))
    warm = _result(_child(tmp_path))
    print("cold", cold, "warm", warm)
    assert cold["compiled"] == cold["keys"] and cold["compiler_calls"] == cold["keys"]
    assert warm["disk"] == warm["keys"] and warm["compiled"] == 0
    assert warm["compiler_calls"] == 0
    files = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
    assert len(files) == cold["keys"]
    for i, f in enumerate(files):                       # corrupt every entry
        data = open(f, "rb").read()
        open(f, "wb").write(data[: len(data) // 2] if i % 2 else b"junk" + data[4:])
    again = _result(_child(tmp_path))
    assert again["compiled"] == again["keys"] and again["disk"] == 0
    fixed = _result(_child(tmp_path))
    assert fixed["disk"] == fixed["keys"]


@pytest.mark.gpu
def test_two_processes_warming_at_once_both_succeed(tmp_path):
    a, b = _child(tmp_path), _child(tmp_path)
    ra, rb = _result(a), _result(b)
    assert ra["keys"] == rb["keys"]
    c = _result(_child(tmp_path))
    assert c["disk"] == c["keys"]


@pytest.mark.gpu
def test_allocate_scratch_from_a_dedicated_pool():
    import cupy as cp
    caps = pymoe.Caps(max_tokens=64, top_k=4, num_experts=32, hidden_size=256,
                      intermediate_size=128)
    plan = pymoe.plan(caps)
    pool = cp.cuda.MemoryPool()
    s = pymoe.cuda.allocate_scratch(plan, pool=pool)
    assert s.dtype == cp.uint8 and s.nbytes == pymoe.required_nbytes(caps)
    assert pool.used_bytes() >= pymoe.required_nbytes(caps)


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "pymoe", *args], capture_output=True,
                          text=True, env=env)


@pytest.mark.gpu
def test_cli_prewarm_fills_the_disk_cache(tmp_path):
    env = dict(os.environ, PYMOE_CACHE_DIR=str(tmp_path))
    a = _cli("prewarm", "--preset", "tiny", "--max-tokens", "64", env=env)
    b = _cli("prewarm", "--preset", "tiny", "--max-tokens", "64", env=env)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert "disk hits 0" in a.stdout and "compiled 0" in b.stdout, a.stdout + b.stdout


def test_cli_prewarm_without_gpu_says_so():
    if pymoe.cuda.is_available():
        pytest.skip("a GPU is present")
    r = _cli("prewarm", "--preset", "tiny")
    assert r.returncode == 2 and "needs a CUDA GPU" in r.stderr


def _dyn_smem_spec(nbytes: int):
    """A kernel that fills its dynamic shared array with tid-derived words,
    barriers, and writes it back reversed: every byte of ``nbytes`` is used.
    (``cuda`` is this module's global: the simulator swaps globals named so.)"""
    from numba import uint32
    from pymoe.cuda.kernels.spec import KernelSpec
    words = nbytes // 4

    def k(out):
        tid = cuda.threadIdx.x
        dyn = cuda.shared.array(0, uint32)
        for i in range(tid, words, 128):
            dyn[i] = uint32((i * 2654435761 + 12345) & 0xFFFFFFFF)
        cuda.syncthreads()
        for i in range(tid, words, 128):
            out[i] = dyn[words - 1 - i]

    return KernelSpec(k, ("u4[]",), 128, dyn_smem=nbytes)


def _dyn_smem_want(nbytes: int) -> np.ndarray:
    i = np.arange(nbytes // 4, dtype=np.uint64)
    return ((i * 2654435761 + 12345) & 0xFFFFFFFF).astype(np.uint32)[::-1]


@pytest.mark.gpu
def test_dynamic_shared_memory_past_48k_launches():
    """KernelSpec.dyn_smem: the launch passes the bytes (plain and dependent
    launches) and the load opts the function in past 48 KB."""
    import cupy as cp
    nbytes = 96 * 1024
    k = launch.load_spec(_dyn_smem_spec(nbytes))
    for dependent in (False, True):
        out = cp.full(nbytes // 4, 0xFFFFFFFF, cp.uint32)
        k.prepare((1,), (out,), dependent=dependent)(None)
        np.testing.assert_array_equal(cp.asnumpy(out), _dyn_smem_want(nbytes))


@pytest.mark.cudasim
def test_dynamic_shared_memory_in_the_simulator():
    nbytes = 4096
    k = launch.load_spec(_dyn_smem_spec(nbytes))
    out = np.full(nbytes // 4, 0xFFFFFFFF, np.uint32)
    k.launch((1,), (out,))
    np.testing.assert_array_equal(out, _dyn_smem_want(nbytes))
