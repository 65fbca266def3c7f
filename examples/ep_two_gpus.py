"""Expert parallel as a deployment runs it: one process per GPU, NCCL between them.

    python examples/ep_two_gpus.py [--preset qwen3-30b-a3b,gpt-oss-120b] [--tokens 1,64,4096]

The parent makes an NCCL unique id and hands it to one child process per GPU
through the child's stdin (a pipe); each child holds a contiguous half of the
experts (pymoe.ep.shard_experts), computes its partial for the replicated inputs
(global topk_ids, its expert_map) and all-reduces it in place over NCCL
(pymoe.ep.all_reduce).  Rank 0 also runs the whole layer on its one GPU, checks
the EP sum against it (bf16 bound) and times both (CUDA events, medians).
NVLink multicast stays off (NCCL_NVLS_ENABLE=0).  Weights are random packed
MXFP4 of each preset's real shape.  Exits 0 with a note when fewer than 2 GPUs.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

os.environ["NCCL_NVLS_ENABLE"] = "0"       # never NVLink multicast on shared hosts

import numpy as np  # noqa: E402

import pymoe  # noqa: E402
from pymoe.presets import PRESETS  # noqa: E402


def random_layer(preset, seed: int = 0) -> pymoe.ExpertWeights:
    """Random FP4 bytes and E8M0 scales of the preset's shape (2^(b-127) about
    1/(3 sqrt(K)) keeps activations O(1)); the same on every rank (same seed)."""
    rng = np.random.default_rng(seed)
    e, h, i = preset.num_experts, preset.hidden_size, preset.intermediate_size
    f = 2 * i if preset.activation != "relu2" else i

    def packed(n, k):
        b = int(round(127 - np.log2(3 * np.sqrt(k))))
        return (rng.integers(0, 256, (e, n, k // 2), dtype=np.uint8),
                rng.integers(b - 1, b + 1, (e, n, -(-k // 32)), dtype=np.uint8))
    q13, s13 = packed(f, h)
    q2, s2 = packed(h, i)
    b13 = rng.standard_normal((e, f)).astype(np.float32) * .1 if preset.bias else None
    b2 = rng.standard_normal((e, h)).astype(np.float32) * .1 if preset.bias else None
    return pymoe.prepare_weights(q13, q2, w13_scales=s13, w2_scales=s2,
                                 activation=preset.activation, w13_layout=preset.w13_layout,
                                 w13_bias=b13, w2_bias=b2)


def _inputs(preset, t: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((t, preset.hidden_size)).astype(np.float32)
    xb = ((x.view(np.uint32) + 0x8000) >> 16).astype(np.uint16)          # bf16 bits
    w, ids = pymoe.route_topk(rng.standard_normal((t, preset.num_experts)), preset.top_k)
    return xb, w, ids


def _median_ms(cp, stream, fn, n: int) -> float:
    times = []
    for _ in range(n):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(stream)
        fn()
        b.record(stream)
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(times))


def child(rank: int, world: int, presets: list[str], tokens: list[int], iters: int) -> int:
    import cupy as cp
    from cupy.cuda import nccl
    uid = bytes.fromhex(sys.stdin.readline().strip())     # the parent's NCCL id, via the pipe
    cp.cuda.Device(rank).use()
    try:
        comm = nccl.NcclCommunicator(world, uid, rank)      # CuPy 14: the id as bytes
    except TypeError:                                       # older CuPy: a tuple of int8
        comm = nccl.NcclCommunicator(world, tuple(b - 256 if b > 127 else b for b in uid),
                                     rank)
    s = cp.cuda.Stream(non_blocking=True)
    flag = cp.zeros(1, cp.float32)

    def barrier():
        comm.allReduce(flag.data.ptr, flag.data.ptr, 1, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s.ptr)
        s.synchronize()
    for name in presets:
        pr = PRESETS[name]
        full = random_layer(pr)
        local, emap = pymoe.ep.shard_experts(full, world, rank)
        ew = pymoe.cuda.to_device(local)
        emap_d = cp.asarray(emap)
        caps = pymoe.Caps.for_weights(local, max_tokens=max(tokens), top_k=pr.top_k,
                                      global_num_experts=pr.num_experts)
        plan = pymoe.plan(caps)
        pymoe.cuda.prewarm(plan, progress=False)
        scratch = pymoe.cuda.allocate_scratch(plan)
        if rank == 0:
            ew_full = pymoe.cuda.to_device(full)
            plan1 = pymoe.plan(pymoe.Caps.for_weights(full, max_tokens=max(tokens),
                                                      top_k=pr.top_k))
            pymoe.cuda.prewarm(plan1, progress=False)
            scratch1 = pymoe.cuda.allocate_scratch(plan1)
        for t in tokens:
            xb, w, ids = _inputs(pr, t, seed=t)
            x_d, w_d, ids_d = cp.asarray(xb), cp.asarray(w), cp.asarray(ids)
            y = cp.empty_like(x_d)
            b = plan.bind(scratch=scratch, x=x_d, experts=ew, topk_weights=w_d,
                          topk_ids=ids_d, out=y, expert_map=emap_d)

            def step():
                pymoe.run(b, stream=s)
                pymoe.ep.all_reduce(y, comm, stream=s)
            step()
            s.synchronize()
            digest = hashlib.sha256(y.get().tobytes()).hexdigest()[:16]
            barrier()
            ep_ms = _median_ms(cp, s, step, iters)
            barrier()
            rec = dict(rank=rank, preset=name, T=t, ep_ms=ep_ms, digest=digest)
            if rank == 0:                       # the same layer on this one GPU
                y1 = cp.empty_like(x_d)
                b1 = plan1.bind(scratch=scratch1, x=x_d, experts=ew_full, topk_weights=w_d,
                                topk_ids=ids_d, out=y1)
                one = lambda: pymoe.run(b1, stream=s)      # noqa: E731
                one_ms = _median_ms(cp, s, one, iters)
                a = (y.get().astype(np.uint32) << 16).view(np.float32)
                e = (y1.get().astype(np.uint32) << 16).view(np.float32)
                rel = float(np.linalg.norm(a - e) / max(np.linalg.norm(e), 1e-30))
                rec.update(one_gpu_ms=one_ms, rel_l2=rel, ok=bool(rel < 1e-2 and
                                                                  np.isfinite(a).all()))
            barrier()
            print(json.dumps(rec), flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="qwen3-30b-a3b,gpt-oss-120b")
    ap.add_argument("--tokens", default="1,64,4096")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    presets = a.preset.split(",")
    tokens = [int(t) for t in a.tokens.split(",")]
    for p in presets:
        if p not in PRESETS:
            ap.error(f"--preset {p!r}: expected names from {sorted(PRESETS)}")
    if a.rank is not None:
        return child(a.rank, 2, presets, tokens, a.iters)
    if not pymoe.cuda.is_available():
        print(f"no CUDA GPU ({pymoe.cuda.unavailable_reason()}): nothing to show")
        return 0
    import cupy as cp
    from cupy.cuda import nccl
    if cp.cuda.runtime.getDeviceCount() < 2:
        print("fewer than 2 GPUs: nothing to show")
        return 0
    uid = nccl.get_unique_id()
    uid = bytes(uid) if isinstance(uid, (bytes, bytearray)) else bytes(b & 0xFF for b in uid)
    env = dict(os.environ, NCCL_NVLS_ENABLE="0")
    procs = [subprocess.Popen([sys.executable, __file__, "--preset", a.preset, "--tokens",
                               a.tokens, "--iters", str(a.iters), "--rank", str(r)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=env) for r in range(2)]
    for p in procs:                             # the unique id, through each child's pipe
        p.stdin.write(uid.hex() + "\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=1800)[0] for p in procs]
    if any(p.returncode for p in procs):
        print(f"a rank failed: return codes {[p.returncode for p in procs]}")
        return 1
    recs = [json.loads(line) for o in outs for line in o.splitlines() if line.startswith("{")]
    r0 = [r for r in recs if r["rank"] == 0]
    r1 = {(r["preset"], r["T"]): r for r in recs if r["rank"] == 1}
    ok = bool(r0)
    print(f"{'layer':16} {'T':>5} {'1 GPU ms':>9} {'2 GPU ms':>9} {'speedup':>8} "
          f"{'rel_l2':>9}  ranks agree")
    for r in r0:
        agree = r1[(r["preset"], r["T"])]["digest"] == r["digest"]
        ok &= r["ok"] and agree
        print(f"{r['preset']:16} {r['T']:>5} {r['one_gpu_ms']:>9.3f} {r['ep_ms']:>9.3f} "
              f"{r['one_gpu_ms'] / r['ep_ms']:>7.2f}x {r['rel_l2']:>9.2e}  {agree}")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
