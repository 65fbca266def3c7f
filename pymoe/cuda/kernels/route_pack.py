"""Route packing kernel, one launch, one CTA (launched by pymoe/cuda/route_pack.py).

Shape legend: T tokens, k top-k, R = T*k flat routes (r = t*k + j), E local
experts, G experts in the id space (global under EP), B block, S slots.

    packed_route_indices[expert_offsets[e] + i] = i-th route of expert e in
        increasing r; other slots = R (sentinel)
    block_expert_ids[b] = owner of slots [b*B, (b+1)*B) or -1 past the total

Stable without sorting: routes are taken in rounds of THREADS (one per thread,
in r order); a route's rank in its round is the number of earlier threads of
the round with the same expert (a shared-memory scan), added to the expert's
running cursor.  O(R * THREADS / 2) shared-memory reads: 0.6 ms at R = 1e6,
negligible at serving sizes.  Only shared memory, atomics and __syncthreads, so
it runs under the CUDA simulator too.  E <= MAX_EXPERTS.
"""
from __future__ import annotations

from numba import cuda, int32

from ...geometry import ROUTE_PACK_MAX_EXPERTS, ROUTE_PACK_THREADS, LaunchKey
from .routes import local_expert
from .spec import KernelSpec

__all__ = ["build"]

THREADS = ROUTE_PACK_THREADS
MAX_EXPERTS = ROUTE_PACK_MAX_EXPERTS


def _kernel(ids, stride, n_routes, emap, has_map, num_ids, n_exp, block,
            offsets, pri, n_slots, beid, n_blocks, count):
    tid = cuda.threadIdx.x
    cnt = cuda.shared.array(MAX_EXPERTS, int32)
    cur = cuda.shared.array(MAX_EXPERTS, int32)
    keys = cuda.shared.array(THREADS, int32)
    for e in range(tid, n_exp, THREADS):
        cnt[e] = 0
    cuda.syncthreads()
    for r in range(tid, n_routes, THREADS):                 # 1. count
        e = local_expert(ids, stride, r, emap, has_map, num_ids)
        if e >= 0:
            cuda.atomic.add(cnt, e, 1)
    cuda.syncthreads()
    if tid == 0:                                             # 2. padded exclusive prefix
        run = 0
        for e in range(n_exp):
            offsets[e] = run
            cur[e] = run
            run += (cnt[e] + block - 1) // block * block
        offsets[n_exp] = run
        count[0] = run
    cuda.syncthreads()
    total = offsets[n_exp]
    for s in range(tid, n_slots, THREADS):                   # 3. sentinels, block owners
        pri[s] = n_routes
    for b in range(tid, n_blocks, THREADS):
        start = b * block
        owner = -1
        if start < total:
            lo = 0
            hi = n_exp - 1
            while lo < hi:                                   # last e with offsets[e] <= start
                mid = (lo + hi + 1) // 2
                if offsets[mid] <= start:
                    lo = mid
                else:
                    hi = mid - 1
            owner = lo
        beid[b] = owner
    cuda.syncthreads()
    for base in range(0, n_routes, THREADS):                 # 4. stable scatter in rounds
        r = base + tid
        e = -1
        if r < n_routes:
            e = local_expert(ids, stride, r, emap, has_map, num_ids)
        keys[tid] = e
        cuda.syncthreads()
        rank = 0
        last = True
        if e >= 0:
            for i in range(THREADS):
                if keys[i] == e:
                    if i < tid:
                        rank += 1
                    elif i > tid:
                        last = False
            pri[cur[e] + rank] = r
        cuda.syncthreads()                                   # every cursor read first
        if e >= 0 and last:
            cur[e] += rank + 1
        cuda.syncthreads()


def build(key: LaunchKey) -> KernelSpec:
    return KernelSpec(_kernel, ("i4[]", "i8", "i8", "i4[]", "i8", "i8", "i8", "i8",
                                "i4[]", "i4[]", "i8", "i4[]", "i8", "i4[]"), THREADS)
