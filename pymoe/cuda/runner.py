"""Run a Binding on the GPU (or on NumPy arrays under the CUDA simulator).

``run`` resolves every launch of the call first (memory hits are legal during
capture; a miss raises before anything is enqueued), then enqueues at most one
launch per kernel stage on the caller's stream, with no allocation (when
``out`` is bound) and no host-device sync.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..plan import Binding, Caps, plan as make_plan
from ..weights import ExpertWeights
from . import decode as _decode
from . import fc1 as _fc1
from . import fc2 as _fc2
from . import route_pack as _rp
from .gemm import scale_lut
from .interop import as_stream
from .intrinsics import SIM
from .launch import _capturing, resolve

__all__ = ["to_device", "allocate_scratch", "run", "fused_moe", "prewarm", "PrewarmReport"]


def _cupy():
    import cupy
    return cupy


def to_device(experts: ExpertWeights) -> ExpertWeights:
    """Upload prepared weights once (cached on the host object).  Under the
    simulator the 'device' arrays are the host arrays themselves."""
    if experts.device == "cuda":
        return experts
    if SIM:
        d = experts._device_copy
        if "w13_words" not in d:
            d["w13_words"] = experts.w13.reshape(-1).view(np.uint32)
            d["w2_words"] = experts.w2.reshape(-1).view(np.uint32)
            d["scale_lut"] = scale_lut(experts.format)
        return experts
    cached = experts._device_copy.get("cuda")
    cp = _cupy()
    if cached is not None and cached._device_copy.get("device_id") == cp.cuda.runtime.getDevice():
        return cached
    arrays = {n: cp.asarray(a) for n, a in experts.arrays().items()}
    dev = experts.with_arrays("cuda", **arrays)
    dev._device_copy.update(
        w13_words=arrays["w13"].reshape(-1).view(cp.uint32),
        w2_words=arrays["w2"].reshape(-1).view(cp.uint32),
        scale_lut=cp.asarray(scale_lut(experts.format)),
        device_id=cp.cuda.runtime.getDevice())
    experts._device_copy["cuda"] = dev
    return dev


def allocate_scratch(plan, pool=None):
    """uint8 CuPy array of exactly plan.scratch_nbytes from ``pool`` (a
    cupy.cuda.MemoryPool; the default pool when None)."""
    cp = _cupy()
    n = plan.scratch_nbytes
    pool = pool or cp.get_default_memory_pool()
    mem = pool.malloc(max(n, 1))
    return cp.ndarray((n,), dtype=cp.uint8, memptr=mem)


def _stream(stream):
    if SIM:
        return None
    return as_stream(stream)


def _prepare(b: Binding, out, stream) -> list:
    """The call's launches with arguments flattened, in order (resolving each key:
    a miss during capture raises here, before anything is enqueued)."""
    c, v = b.caps, b.views
    ew = to_device(b.experts) if SIM else b.experts
    kw = dict(stream=stream, prepare=True)
    if b.regime == "decode":
        k1, k2 = b.keys
        return [
            _decode.decode_fc1(b.x, b.topk_ids, b.expert_map, ew, b.topk_weights,
                               v["intermediate"], key=k1, **kw),
            _decode.decode_fc2(v["intermediate"], b.topk_ids, b.expert_map, ew,
                               b.topk_weights, out, key=k2, **kw)]
    kp, k1, k2, kc = b.keys
    return [
        _rp.route_pack(b.topk_ids, b.expert_map, ew.num_experts, b.block,
                       v["expert_offsets"], v["packed_route_indices"],
                       v["block_expert_ids"], v["packed_route_count"], key=kp, **kw),
        _fc1.fc1(b.x, ew, b.topk_weights, v["packed_route_indices"], v["block_expert_ids"],
                 v["intermediate"], top_k=c.top_k, key=k1, **kw),
        _fc2.fc2(v["intermediate"], ew, b.topk_weights, v["packed_route_indices"],
                 v["block_expert_ids"], v["route_out"], top_k=c.top_k, key=k2, **kw),
        _fc2.combine(v["route_out"], b.topk_ids, b.expert_map, ew.num_experts, out,
                     key=kc, **kw)]


def run(b: Binding, *, stream=None):
    """Execute binding ``b`` with the CUDA kernels; returns ``out``.

    The first run of a binding resolves its keys and flattens the arguments;
    later runs of the same binding only enqueue (2 launches for decode, 4 for
    the packed regime)."""
    stream = _stream(stream)
    out = b.out
    if out is None:
        for k in b.keys:                                   # misses raise before anything
            resolve(k, stream)
        if _capturing(stream):
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


def prewarm(plan, stream=None, *, progress: bool = True) -> PrewarmReport:
    """Resolve every LaunchKey reachable for T in 1..max_tokens under ``plan`` so
    any later run with T <= max_tokens is a memory hit (legal during capture)."""
    keys = []
    for reg, b, _lo, _hi in plan.caps.buckets():
        for k in plan.caps.launch_keys(reg, b):
            if k not in keys:
                keys.append(k)
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
    for k in it:
        resolve(k, _stream(stream), source_out=src)
    if bar is not None:
        bar.close()
    return PrewarmReport(compiled=src.count("compiled"), disk=src.count("disk"),
                         memory=src.count("memory"), seconds=time.perf_counter() - t0,
                         keys=len(keys))


_PLANS: dict = {}


def fused_moe(x, experts, topk_weights, topk_ids, *, out=None, expert_map=None,
              apply_router_weight_on_input: bool = False, stream=None):
    """One-shot CUDA MoE: inputs as CuPy / CUDA-array-interface / DLPack arrays (NumPy
    inputs are uploaded); returns a CuPy array unless ``out`` is given."""
    from ..dtypes import dtype_name
    from .interop import as_cupy
    cp = _cupy()
    x = as_cupy("x", x)
    topk_weights = as_cupy("topk_weights", topk_weights)
    topk_ids = as_cupy("topk_ids", topk_ids)
    if expert_map is not None:
        expert_map = as_cupy("expert_map", expert_map)
    if x.ndim != 2 or topk_ids.ndim != 2:
        raise ValueError(f"x: shape {tuple(x.shape)} and topk_ids: shape "
                         f"{tuple(topk_ids.shape)}: expected [T, H] and [T, k]")
    dt = dtype_name(x.dtype) or ("bfloat16" if x.dtype == np.uint16 else None)
    if dt is None:
        raise TypeError(f"x: dtype {x.dtype}, expected bfloat16 or float16")
    ew = to_device(experts)
    if x.shape[0] == 0:
        return cp.empty(x.shape, x.dtype) if out is None else out
    caps = Caps.for_weights(ew, max_tokens=x.shape[0], top_k=int(topk_ids.shape[1]), dtype=dt,
                            apply_router_weight_on_input=apply_router_weight_on_input,
                            global_num_experts=None if expert_map is None
                            else int(expert_map.shape[0]))
    p = _PLANS.get(caps)
    if p is None:
        p = _PLANS[caps] = make_plan(caps)
    scratch = allocate_scratch(p)
    b = p.bind(scratch=scratch, x=x, experts=ew, topk_weights=topk_weights,
               topk_ids=topk_ids, out=out, expert_map=expert_map)
    y = run(b, stream=stream)
    return y if out is None else out       # the caller's own object, written in place
