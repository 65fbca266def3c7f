"""Public entry points: ``run(binding)`` and the one-shot ``fused_moe(...)``.

    y = pymoe.fused_moe(x, experts, topk_weights, topk_ids)           # ref backend
    y = pymoe.fused_moe(x_dev, experts, w_dev, ids_dev, backend="cuda")

Backends: ``ref`` (NumPy reference interpreter, any CPU), ``cuda`` (Numba CUDA
kernels launched on CuPy streams), ``auto`` (cuda when a GPU and the CUDA
dependencies are present, else ref).  ``ref`` is imported eagerly, ``cuda``
lazily on first use.
"""
from __future__ import annotations

import numpy as np

from . import ref
from .dtypes import activation_dtype
from .interop import as_numpy
from .plan import Binding, Caps, plan
from .weights import ExpertWeights

__all__ = ["run", "fused_moe", "route_topk", "BACKENDS"]

BACKENDS = ("ref", "cuda", "auto")


def run(binding: Binding, *, stream=None):
    """Execute a Binding; returns ``out`` (allocated when the binding has none).

    Host bindings run the NumPy reference; device bindings run the CUDA twin on
    ``stream`` (a CuPy or torch CUDA stream, or a raw handle; default CuPy's
    current stream)."""
    if not isinstance(binding, Binding):
        raise TypeError(f"run takes a pymoe Binding (from Plan.bind), got "
                        f"{type(binding).__name__}")
    if binding.kind == "device":
        from . import cuda
        return cuda.run(binding, stream=stream)
    return ref.run(binding, stream=stream)


def _resolve_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: expected one of {BACKENDS}")
    if backend == "auto":
        from . import cuda
        return "cuda" if cuda.is_available() else "ref"
    return backend


# Caps -> Plan for the one-shot path (plans are pure functions of their Caps)
_PLANS: dict = {}


def fused_moe(x, experts, topk_weights, topk_ids, *, backend: str = "ref", out=None,
              expert_map=None, apply_router_weight_on_input: bool = False,
              stream=None):
    """One-shot MoE layer: plan (cached per Caps), allocate scratch, bind, run.

    x: [T, H] bf16 (ml_dtypes.bfloat16, torch/CuPy bf16, or uint16 bits) or fp16
    experts: ExpertWeights from prepare_weights (uploaded once per GPU for cuda)
    topk_weights: float32 [T, k]; topk_ids: int32/int64 [T, k] (ids outside
        [0, E), or mapped to -1 by expert_map, contribute 0)
    expert_map: int32/int64 [global_num_experts] global -> local id or -1
    backend: 'ref' (NumPy arrays), 'cuda' (CuPy / torch / CUDA arrays; NumPy
        inputs are uploaded) or 'auto'
    Returns y [T, H] like x (NumPy on ref, CuPy on cuda), or ``out`` itself,
    written in place, when given.
    """
    backend = _resolve_backend(backend)
    if not isinstance(experts, ExpertWeights):
        raise TypeError(f"experts: expected pymoe.ExpertWeights (from prepare_weights), "
                        f"got {type(experts).__name__}")
    arrays = dict(x=x, topk_weights=topk_weights, topk_ids=topk_ids, expert_map=expert_map)
    if backend == "cuda":
        from . import cuda
        cuda.require_gpu("pymoe.fused_moe(backend='cuda')")
        from .cuda.runner import device_inputs
        arrays = device_inputs(**arrays)
        experts = cuda.to_device(experts)
    else:
        arrays = {n: None if a is None else as_numpy(n, a) for n, a in arrays.items()}
    x, ti = arrays["x"], arrays["topk_ids"]
    if x.ndim != 2:
        raise ValueError(f"x: shape {tuple(x.shape)}, expected [T, H]")
    if ti.ndim != 2:
        raise ValueError(f"topk_ids: shape {tuple(ti.shape)}, expected [T, k]")
    dt = activation_dtype("x", x.dtype)
    em = arrays["expert_map"]
    # T = 0 is planned as T <= 1 and bound like any call: every check still runs
    caps = Caps.for_weights(experts, max_tokens=max(int(x.shape[0]), 1),
                            top_k=int(ti.shape[1]),
                            dtype=dt, apply_router_weight_on_input=apply_router_weight_on_input,
                            global_num_experts=None if em is None else int(em.shape[0]))
    p = _PLANS.get(caps)
    if p is None:
        p = _PLANS[caps] = plan(caps)
    if backend == "cuda":
        scratch = cuda.allocate_scratch(p)
    else:
        scratch = np.empty(p.scratch_nbytes, np.uint8)
    b = p.bind(scratch=scratch, x=x, experts=experts, topk_weights=arrays["topk_weights"],
               topk_ids=ti, out=out, expert_map=em)
    y = run(b, stream=stream)
    return y if out is None else out       # the caller's own object, written in place


def route_topk(logits, k: int, renormalize: bool = True):
    """Softmax router: logits [T, E] -> (topk_weights float32 [T, k], topk_ids int32 [T, k]).

    With renormalize the k weights sum to 1 (== softmax over the top-k logits,
    gpt-oss's routing); without, they are the full-softmax probabilities.
    Ties pick the lower expert id.  NumPy in, NumPy out; CuPy in, CuPy out.
    """
    xp = np
    if type(logits).__module__.startswith("cupy"):
        import cupy as xp  # noqa: F811
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k={k!r}: expected an int")
    lg = xp.asarray(logits, dtype=xp.float32)
    if lg.ndim != 2:
        raise ValueError(f"logits: shape {tuple(lg.shape)}, expected [T, E]")
    if not 1 <= k <= lg.shape[1]:
        raise ValueError(f"k={k}: must be in [1, E={lg.shape[1]}]")
    ids = xp.argsort(-lg, axis=1, kind="stable")[:, :k].astype(xp.int32)      # [T, k]
    top = xp.take_along_axis(lg, ids.astype(xp.int64), axis=1)
    if renormalize:
        e = xp.exp(top - top[:, :1])
        w = e / e.sum(axis=1, keepdims=True)
    else:
        m = lg.max(axis=1, keepdims=True)
        e = xp.exp(lg - m)
        w = xp.take_along_axis(e / e.sum(axis=1, keepdims=True), ids.astype(xp.int64), axis=1)
    return w.astype(xp.float32), ids
