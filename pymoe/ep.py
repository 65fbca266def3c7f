"""Expert parallel (docs/design.md section 7): each rank holds a contiguous slice of the
experts and a global -> local ``expert_map``; inputs (x, topk_weights, topk_ids
with GLOBAL ids) are replicated; each rank computes its experts' contribution
and the partials are summed across ranks.

    local, emap = pymoe.ep.shard_experts(experts, world_size=2, rank=r)   # host
    y_r = pymoe.ep.partial_moe(x, local_d, w, ids, emap, backend="cuda")  # this rank
    pymoe.ep.all_reduce(y_r, comm)        # NCCL sum in place (cupy.cuda.nccl), or
    y = pymoe.ep.combine_partials([y_0, y_1])                           # on the host

Each partial is rounded to the activation dtype by its rank (as in a single-GPU
call); the cross-rank sum rounds again (NCCL sums in the dtype;
``combine_partials`` sums in float32 and rounds once).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .dtypes import activation_dtype, from_float32, to_float32
from .plan import validate_expert_map
from .weights import ExpertWeights

__all__ = ["partition", "expert_map_for", "shard_experts", "partial_moe",
           "combine_partials", "all_reduce"]


def partition(num_experts: int, world_size: int, rank: int) -> tuple[int, int]:
    """[start, stop) of the experts rank ``rank`` holds: contiguous slices, the
    first ``num_experts % world_size`` ranks one expert larger."""
    if world_size < 1 or num_experts < world_size:
        raise ValueError(f"world_size={world_size}: expected 1 <= world_size <= "
                         f"num_experts={num_experts}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank={rank}: expected 0 <= rank < world_size={world_size}")
    base, extra = divmod(num_experts, world_size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def expert_map_for(num_experts: int, world_size: int, rank: int) -> np.ndarray:
    """int32 [num_experts]: global id -> local id on ``rank``, -1 elsewhere."""
    start, stop = partition(num_experts, world_size, rank)
    m = np.full(num_experts, -1, np.int32)
    m[start:stop] = np.arange(stop - start, dtype=np.int32)
    validate_expert_map(m, stop - start)
    return m


def shard_experts(experts: ExpertWeights, world_size: int, rank: int
                  ) -> tuple[ExpertWeights, np.ndarray]:
    """(this rank's experts, its expert_map).  Takes host weights (slice, then
    upload each rank's share with pymoe.cuda.to_device on its own GPU); the
    slices are views, no copy."""
    if not isinstance(experts, ExpertWeights):
        raise TypeError(f"experts: expected pymoe.ExpertWeights, got {type(experts).__name__}")
    if experts.device != "cpu":
        raise TypeError(f"experts: on {experts.device!r}; shard the host weights, then "
                        "upload each rank's slice with pymoe.cuda.to_device")
    start, stop = partition(experts.num_experts, world_size, rank)
    sliced = {n: a[start:stop] for n, a in experts.arrays().items()}
    local = replace(experts, num_experts=stop - start, **sliced)
    return local, expert_map_for(experts.num_experts, world_size, rank)


def partial_moe(x, local_experts, topk_weights, topk_ids, expert_map, *,
                backend: str = "ref", out=None, apply_router_weight_on_input: bool = False,
                stream=None):
    """This rank's contribution: fused_moe over its local experts only (routes to
    other ranks' experts add exactly 0).  topk_ids hold global ids."""
    from .moe import fused_moe
    return fused_moe(x, local_experts, topk_weights, topk_ids, backend=backend, out=out,
                     expert_map=expert_map,
                     apply_router_weight_on_input=apply_router_weight_on_input, stream=stream)


def combine_partials(partials):
    """Sum of the ranks' partial outputs on the host: a float32 sum, rounded once
    to the partials' dtype (uint16 partials are bf16 bits)."""
    parts = [p.get() if hasattr(p, "get") else np.asarray(p) for p in partials]
    if not parts:
        raise ValueError("partials: expected at least one array")
    dt, shape = parts[0].dtype, parts[0].shape
    for i, p in enumerate(parts):
        if p.dtype != dt or p.shape != shape:
            raise ValueError(f"partials[{i}]: {p.dtype} {p.shape}, expected {dt} {shape}")
    name = activation_dtype("partials", dt)
    total = np.zeros(shape, np.float32)
    for p in parts:
        total += to_float32(p, name)
    return from_float32(total, name).view(dt)


# NCCL datatype codes (nccl.h): ncclFloat16 = 6, ncclBfloat16 = 9.
_NCCL_TYPES = {"float16": 6, "bfloat16": 9}


def all_reduce(y, comm, stream=None):
    """Sum ``y`` (a CuPy [T, H] partial, bf16 bits or fp16) across the ranks of
    ``comm`` (a cupy.cuda.nccl.NcclCommunicator) in place, on ``stream``."""
    from .interop import as_stream
    dt = activation_dtype("y", y.dtype)
    if not y.flags.c_contiguous:
        raise ValueError("y: must be C-contiguous for an in-place all-reduce")
    from cupy.cuda import nccl
    s = as_stream(stream)
    comm.allReduce(y.data.ptr, y.data.ptr, y.size, _NCCL_TYPES[dt], nccl.NCCL_SUM, s.ptr)
    return y
