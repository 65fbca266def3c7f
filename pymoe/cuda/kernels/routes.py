"""Which local expert a route goes to: the device function every kernel that
reads topk_ids calls, and the host-side argument tuple it expects.

Shape legend: T tokens, k top-k, R = T*k flat routes (r = t*k + j), E local
experts, G experts in the id space of topk_ids (global under expert parallel).

    local_expert(ids, stride, r, emap, has_map, num_ids) = e in [0, E) or -1
        has_map = 0 (no map), else (E << 2) | w with w = 1 (int32 map) or 2 (int64
        map, read as int32 pairs): a mapped value outside [0, E) is -1, an
        invalid route, so a device map is never trusted to index the weights
    route_args(topk_ids, expert_map, E) = (ids, stride, emap, has_map, num_ids)
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int64

__all__ = ["local_expert", "load_id", "expert_of", "route_args"]


@cuda.jit(device=True, inline=True)
def load_id(ids, stride, r):
    """The raw id of flat route r as (lo, hi) int64 words (hi: the high word of
    an int64 id, else lo's sign): the loads of local_expert, split off so a
    caller can issue several routes' loads before it classifies them."""
    lo = int64(ids[r * stride])
    hi = int64(ids[r * stride + 1]) if stride == 2 else (lo >> 31)
    return lo, hi


@cuda.jit(device=True, inline=True)
def expert_of(lo, hi, emap, has_map, num_ids):
    """local_expert for an id already loaded by load_id."""
    if hi != (lo >> 31) or lo < 0 or lo >= num_ids:
        return -1
    if has_map != 0:
        w = has_map & 3                  # 1: int32 map, 2: int64 map as int32 pairs
        m = int64(emap[lo * w])
        mh = int64(emap[lo * w + 1]) if w == 2 else (m >> 31)
        if mh != (m >> 31) or m >= (has_map >> 2):   # past int32 or the local experts
            return -1
        return m
    return lo


@cuda.jit(device=True, inline=True)
def local_expert(ids, stride, r, emap, has_map, num_ids):
    """Local expert of flat route r, or -1 (id outside [0, num_ids) or mapped to -1).

    int64 ids are read as int32 pairs (stride 2): valid only when the high word
    is the sign extension of the low word; an int64 expert map likewise (a
    value past int32 is an invalid route, not its low word)."""
    lo, hi = load_id(ids, stride, r)
    return expert_of(lo, hi, emap, has_map, num_ids)


def route_args(topk_ids, expert_map, num_experts: int) -> tuple:
    """(ids, stride, emap, has_map, num_ids): the route arguments of every kernel that
    reads topk_ids.  int64 ids are passed as their int32 little-endian pairs
    (stride 2, see local_expert); num_ids is the id space (map size under EP);
    has_map: 0 without a map, else (E << 2) | (1 int32 map, 2 int64 map passed as
    its int32 pairs)."""
    flat = topk_ids.reshape(-1)
    ids, stride = (flat.view(np.int32), 2) if flat.dtype.itemsize == 8 else (flat, 1)
    if expert_map is None:
        return ids, stride, None, 0, num_experts
    emap = expert_map.reshape(-1)
    if emap.dtype.itemsize == 8:
        return ids, stride, emap.view(np.int32), (num_experts << 2) | 2, expert_map.shape[0]
    return ids, stride, emap, (num_experts << 2) | 1, expert_map.shape[0]
