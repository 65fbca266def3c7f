"""Run a Binding on the GPU (or on NumPy arrays under the CUDA simulator).

``run`` resolves every launch of the call first (memory hits are legal during
capture; a miss raises before anything is enqueued), then enqueues at most one
launch per kernel stage on the caller's stream, with no allocation (when
``out`` is bound) and no host-device sync.

    scratch = pymoe.cuda.allocate_scratch(plan)      # once per layer shape
    pymoe.cuda.prewarm(plan)                         # resolve every launch
    y = pymoe.cuda.run(plan.bind(...), stream=s)     # what pymoe.run calls
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..geometry import decode_dependent
from ..interop import as_cupy
from ..plan import Binding
from .decode import prepare_decode_fc1, prepare_decode_fc2
from .device_weights import to_device
from .fc1 import prepare_fc1
from .fc2 import prepare_combine, prepare_fc2
from .kernels.intrinsics import SIM
from .launch import _device_cc, is_capturing, launch_stream, resolve
from .route_pack import prepare_route_pack

__all__ = ["allocate_scratch", "run", "prewarm", "PrewarmReport", "device_inputs"]


def _cupy():
    import cupy
    return cupy


def allocate_scratch(plan, pool=None):
    """uint8 CuPy array of exactly plan.scratch_nbytes from ``pool`` (a
    cupy.cuda.MemoryPool; the default pool when None)."""
    cp = _cupy()
    n = plan.scratch_nbytes
    pool = pool or cp.get_default_memory_pool()
    mem = pool.malloc(max(n, 1))
    return cp.ndarray((n,), dtype=cp.uint8, memptr=mem)


def device_inputs(**arrays) -> dict:
    """The one-shot path's inputs on the device: CuPy views of CuPy / torch /
    CUDA-array-interface / DLPack arrays (zero copy), NumPy uploaded once and
    waited for (the copies run on the current stream; the call may run on
    another, non-blocking one); None stays None."""
    out = {n: None if a is None else as_cupy(n, a) for n, a in arrays.items()}
    if any(isinstance(a, np.ndarray) for a in arrays.values()):
        _cupy().cuda.get_current_stream().synchronize()
    return out


def _prepare(b: Binding, out, stream) -> list:
    """The call's launches with arguments flattened, in order (resolving each key:
    a miss during capture raises here, before anything is enqueued)."""
    c, v = b.caps, b.views
    ew = to_device(b.experts) if SIM else b.experts
    kw = dict(stream=stream)
    if b.regime == "decode":
        k1, k2, kc = b.keys
        dep = decode_dependent(b.topk_ids.size)      # decode_fc2, combine
        return [
            prepare_decode_fc1(b.x, b.topk_ids, b.expert_map, ew, b.topk_weights,
                               v["intermediate"], key=k1, **kw),
            prepare_decode_fc2(v["intermediate"], b.topk_ids, b.expert_map, ew,
                               b.topk_weights, v["route_out"], key=k2, dependent=dep, **kw),
            prepare_combine(v["route_out"], b.topk_ids, b.expert_map, ew.num_experts, out,
                            key=kc, dependent=dep, **kw)]
    kp, k1, k2, kc = b.keys
    first, routes = [], None
    if kp is None:                    # fc1 packs its own blocks (geometry.self_packs)
        routes = (b.topk_ids, b.expert_map, v["expert_offsets"], v["packed_route_count"])
    else:
        first = [prepare_route_pack(b.topk_ids, b.expert_map, ew.num_experts, b.block,
                                    v["expert_offsets"], v["packed_route_indices"],
                                    v["block_expert_ids"], v["packed_route_count"], key=kp,
                                    **kw)]
    return first + [                  # fc1 after route_pack, fc2, combine: dependent
        #                               launches (sm_90)
        prepare_fc1(b.x, ew, b.topk_weights, v["packed_route_indices"], v["block_expert_ids"],
                    v["intermediate"], top_k=c.top_k, key=k1, dependent=kp is not None,
                    routes=routes, **kw),
        prepare_fc2(v["intermediate"], ew, b.topk_weights, v["packed_route_indices"],
                    v["block_expert_ids"], v["route_out"], key=k2, dependent=True, **kw),
        prepare_combine(v["route_out"], b.topk_ids, b.expert_map, ew.num_experts, out,
                        key=kc, dependent=True, **kw)]


def run(b: Binding, *, stream=None):
    """Execute binding ``b`` with the CUDA kernels; returns ``out`` (allocated
    when the binding has none; never during capture).

    The first run of a binding resolves its keys and flattens the arguments;
    later runs of the same binding only enqueue (3 launches for decode, 4 for
    the packed regime, 3 where fc1 packs its own blocks).

    Contract: the scratch arena ``b`` was bound to serves one stream at a time.  Runs on
    one stream are ordered; running the same arena on another stream is the
    caller's to order (an event, or a sync), as for any CUDA buffer: pymoe
    does not query streams (a destroyed stream's handle cannot be asked)."""
    stream = launch_stream(stream)
    out = b.out
    if out is None:
        for k in b.keys:                                   # misses raise before anything
            if k is not None:
                resolve(k, stream)
        if is_capturing(stream):
            raise RuntimeError("run: out= must be bound while the selected stream captures a "
                               "CUDA graph (run never allocates during capture)")
        out = np.empty(b.x.shape, b.x.dtype) if SIM else _cupy().empty(b.x.shape, b.x.dtype)
        launches = _prepare(b, out, stream) if b.num_tokens else []
    else:
        launches = b.cache.get("launches")
        if launches is None:
            launches = b.cache["launches"] = _prepare(b, out, stream) if b.num_tokens else []
    for launch in launches:
        launch(stream)
    return out


@dataclass
class PrewarmReport:
    compiled: int
    disk: int
    memory: int
    seconds: float
    keys: int


def prewarm(plan, stream=None, *, experts=None, progress: bool = True) -> PrewarmReport:
    """Resolve every LaunchKey reachable for T in 1..max_tokens under ``plan`` on
    the current device, so any later run with T <= max_tokens is a memory hit
    (legal during capture).

    experts: the DeviceWeights the runs will use (optional).  The block GEMM can
    depend on them (PYMOE_GEMM=auto on sm_90 takes wgmma only where their MXFP4
    scales fold exactly); without them every GEMM they could select is resolved."""
    c = plan.caps
    sb = None
    if experts is not None:
        if not hasattr(experts, "scale_bytes"):
            raise TypeError(f"experts: expected pymoe.cuda.DeviceWeights (to_device), got "
                            f"{type(experts).__name__}")
        sb = experts.scale_bytes
    keys = c.reachable_keys(c.gemms(None if SIM else _device_cc(), sb))
    t0 = time.perf_counter()
    src: list = []
    it = keys
    bar = None
    if progress:
        try:
            from tqdm import tqdm
            bar = tqdm(keys, desc="pymoe prewarm", unit="kernel", leave=False)
            it = bar
        except ImportError:
            pass
    s = launch_stream(stream)
    for k in it:
        resolve(k, s, source_out=src)
    if bar is not None:
        bar.close()
    return PrewarmReport(compiled=src.count("compiled"), disk=src.count("disk"),
                         memory=src.count("memory"), seconds=time.perf_counter() - t0,
                         keys=len(keys))
