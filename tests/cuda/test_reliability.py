"""Reliability on the GPU: concurrency (two threads, two streams, two arenas), a
long run of graph replays, and the disk cache under faults.  Figures are printed (run
with -s) and recorded in docs/reliability.md."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import pymoe
from pymoe.dtypes import to_float32
from pymoe.testing import assert_close
from tests.problems import Case, make_problem

pytestmark = pytest.mark.gpu


def _layer(case: Case, max_tokens: int):
    import cupy as cp
    p = make_problem(case)
    ew = pymoe.cuda.to_device(p.experts)
    plan = pymoe.plan(pymoe.Caps.for_weights(p.experts, max_tokens=max_tokens, top_k=case.k,
                                             dtype=case.dtype))
    pymoe.cuda.prewarm(plan, progress=False)
    xb = p.x.view(np.uint16) if case.dtype == "bfloat16" else p.x
    x = cp.asarray(xb)
    b = plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), x=x, experts=ew,
                  topk_weights=cp.asarray(p.topk_weights), topk_ids=cp.asarray(p.topk_ids),
                  out=cp.empty_like(x))
    cp.cuda.Device().synchronize()     # uploads (current stream) done before other streams
    return p, plan, b


def _bits(a):
    return a.get().view(np.uint16).copy()


# ---------------------------------------------------------------- concurrency

def test_two_streams_and_two_threads_match_serial_runs():
    """Two host threads, each running its own layer on its own stream many times,
    give outputs bit-equal to the same layers run one after the other."""
    import cupy as cp
    la = _layer(Case(40, 256, 128, 8, 2, seed=1), 64)
    lb = _layer(Case(3, 128, 96, 6, 3, format="nvfp4", activation="swigluoai", seed=2,
                     dtype="float16"), 8)
    serial = []
    for _, _, b in (la, lb):
        pymoe.run(b)
        cp.cuda.get_current_stream().synchronize()
        serial.append(_bits(b.out))
    results, errors = [[], []], []

    def worker(i, b):
        try:
            s = cp.cuda.Stream(non_blocking=True)
            with cp.cuda.Device(0):
                for _ in range(200):
                    with s:
                        b.out.fill(0xFFFF)              # NaN poison: unwritten shows
                    pymoe.run(b, stream=s)
                    s.synchronize()
                    results[i].append(_bits(b.out))
        except Exception as e:                 # surfaced below, with the thread's name
            errors.append(f"thread {i}: {type(e).__name__}: {e}")
    threads = [threading.Thread(target=worker, args=(i, L[2])) for i, L in enumerate((la, lb))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(2):
        assert len(results[i]) == 200
        for r in results[i]:
            np.testing.assert_array_equal(r, serial[i])
    print("\nconcurrency: 2 threads x 200 runs on 2 streams, all bit-equal to serial")


# ---------------------------------------------------------------- long run

@pytest.mark.slow
def test_100k_graph_replays_with_changing_inputs():
    """100,000 replays of one captured decode step with new x / ids / weights
    before each: no growth in device or host memory, and the last output equals
    the reference."""
    import resource

    import cupy as cp
    n_rep, pool_n = 100_000, 16
    case = Case(1, 256, 128, 8, 2, seed=5)
    p, plan, b = _layer(case, 8)
    s = cp.cuda.Stream(non_blocking=True)
    pymoe.run(b, stream=s)
    s.synchronize()
    s.begin_capture()
    pymoe.run(b, stream=s)
    graph = s.end_capture()
    rng = np.random.default_rng(6)
    xs = cp.asarray((rng.standard_normal((pool_n, 1, 256)).astype(np.float32)
                     .view(np.uint32) >> 16).astype(np.uint16))
    ws, ids = [], []
    for _ in range(pool_n):
        w, i = pymoe.route_topk(rng.standard_normal((1, 8)), 2)
        ws.append(w)
        ids.append(i)
    ws_d, ids_d = cp.asarray(np.stack(ws)), cp.asarray(np.stack(ids))
    cp.cuda.Device().synchronize()     # the uploads ran on the current stream, not s
    pool = cp.get_default_memory_pool()

    def mem():       # this process's pool (other processes may share the GPU) and host RSS
        return (pool.total_bytes(), pool.used_bytes(),
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    warm = 1000
    for r in range(n_rep):
        j = r % pool_n
        with s:
            b.x[...] = xs[j]
            b.topk_weights[...] = ws_d[j]
            b.topk_ids[...] = ids_d[j]
        graph.launch(s)
        if r == warm:
            s.synchronize()
            m0 = mem()
    s.synchronize()
    m1 = mem()
    j = (n_rep - 1) % pool_n
    eager = pymoe.run(plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), x=xs[j],
                                experts=b.experts, topk_weights=ws_d[j], topk_ids=ids_d[j]))
    np.testing.assert_array_equal(_bits(b.out), _bits(eager))          # replay == eager
    want = pymoe.fused_moe(xs[j].get(), p.experts, ws[j], ids[j])      # == the reference
    assert_close(to_float32(_bits(b.out), "bfloat16"), to_float32(want, "bfloat16"),
                 dtype="bfloat16", what="last replay")
    print(f"\nlong run: {n_rep} replays; device pool held {m0[0]} -> {m1[0]} B, used "
          f"{m0[1]} -> {m1[1]} B, host max RSS {m0[2]} -> {m1[2]} KiB")
    assert m1[0] <= m0[0] and m1[1] <= m0[1]
    assert m1[2] - m0[2] < 16 * 1024                  # KiB: no host growth beyond noise


# ---------------------------------------------------------------- disk cache faults

WARM = textwrap.dedent("""
    import json, sys
    import numpy as np, pymoe
    from pymoe.cuda import launch
    from pymoe.geometry import launch_keys
    key = launch_keys("decode", None, format="mxfp4", activation="silu", dtype="bfloat16",
                      hidden_size=224, intermediate_size=96, has_bias=False,
                      router_on_input=False, swiglu_limit=None, swiglu_alpha=None,
                      gemm="mma")[0]
    k = launch.resolve(key, None)
    print(json.dumps(dict(source=k.source, path=launch.cache_path(key))))
""")


def _warm(cache_dir, n=1):
    env = dict(os.environ, PYMOE_CACHE_DIR=str(cache_dir))
    procs = [subprocess.Popen([sys.executable, "-c", WARM], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    out = []
    for p in procs:
        o, e = p.communicate(timeout=300)
        assert p.returncode == 0, e[-2000:]
        out.append(json.loads(o.strip().splitlines()[-1]))
    return out


def _entry_ok(path) -> bool:
    from pymoe.cuda import launch
    digest = os.path.basename(path)[:-4]
    return launch._disk_read(path, digest) is not None


def test_eight_processes_warming_one_key_at_once(tmp_path):
    res = _warm(tmp_path, n=8)
    assert {r["source"] for r in res} <= {"compiled", "disk"}
    path = res[0]["path"]
    assert all(r["path"] == path for r in res) and _entry_ok(path)
    left = [f for d, _, fs in os.walk(tmp_path) for f in fs if f.startswith(".tmp")]
    assert left == []                                   # no half-written file left behind
    print(f"\n8 processes: sources {sorted(r['source'] for r in res)}")


@pytest.mark.parametrize("fault", ["truncated", "corrupt", "zero-length", "foreign-version",
                                   "garbage-ptx", "unwritable-entry", "read-only-dir",
                                   "missing-dir"])
def test_disk_cache_faults(tmp_path, fault):
    """Every fault: the call succeeds (recompiling when the entry cannot be
    trusted) and no bad entry is ever loaded; writable dirs end with a good entry."""
    cache = tmp_path / "cache"
    first = _warm(cache)[0]
    path = first["path"]
    data = open(path, "rb").read()
    if fault == "truncated":
        open(path, "wb").write(data[:len(data) // 2])
    elif fault == "corrupt":
        bad = bytearray(data)
        bad[len(bad) // 2] ^= 0x55
        open(path, "wb").write(bytes(bad))
    elif fault == "zero-length":
        open(path, "wb").close()
    elif fault == "foreign-version":                    # a valid entry for another key
        head, _, body = data.decode().partition("\n")
        parts = head.split()
        parts[-3] = "0" * 64
        open(path, "w").write(" ".join(parts) + "\n" + body)
    elif fault == "garbage-ptx":                        # right header, PTX the driver rejects
        from pymoe.cuda import launch
        launch._disk_write(path, os.path.basename(path)[:-4], "this is not ptx\n")
    elif fault == "unwritable-entry":
        from pymoe.cuda import launch
        launch._disk_write(path, os.path.basename(path)[:-4], "this is not ptx\n")
        os.chmod(path, 0o444)
        os.chmod(os.path.dirname(path), 0o555)
    elif fault == "read-only-dir":
        os.remove(path)
        for d, _, _ in os.walk(cache):
            os.chmod(d, 0o555)
    elif fault == "missing-dir":
        import shutil
        shutil.rmtree(cache)
    try:
        second = _warm(cache)[0]
    finally:
        for d, _, _ in os.walk(tmp_path):
            os.chmod(d, 0o755)
    if fault in ("read-only-dir", "unwritable-entry") and os.geteuid() != 0:
        assert second["source"] == "compiled"           # nothing could be written
    else:
        assert second["source"] == "compiled" and _entry_ok(path), fault
        assert _warm(cache)[0]["source"] == "disk"       # the rewritten entry is trusted
