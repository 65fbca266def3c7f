"""One packed block's routes, made by the fc1 CTA that multiplies it
(geometry.self_packs: small blocks, no route_pack launch; the kernel is
pymoe/cuda/kernels/fc1.py, the buffers' meaning pymoe/ref/route_pack.py).

    block_pack(blk, ...) -> e: expert e of block blk (-1 past the packed total),
        the block's routes in shared memory, and route_pack's buffers for it
"""
from __future__ import annotations

from numba import cuda, int32, uint32

from ...geometry import SELF_PACK_MAX_EXPERTS
from .intrinsics import SIM
from .routes import local_expert

__all__ = ["make_block_pack"]


def make_block_pack(nthr: int, block: int):
    """block_pack(blk, ids, stride, n_routes, emap, has_map, num_ids, n_exp, pri,
    beid, offsets, count, rt) -> e: route_pack's result for one block, made by the
    packed fc1 CTA that multiplies it (geometry.self_packs: no route_pack launch).

    Every thread counts its share of the call's routes into a shared histogram
    (shared-memory atomics); then warp 0 alone (the other warps wait at the
    barrier, issuing nothing: the CTA's main loop is issue-bound) scans the
    padded counts (SELF_PACK_MAX_EXPERTS / 32 experts a lane, by shuffles),
    finds the expert whose padded range holds the block's first slot blk *
    block (e, or -1 past the total), and ranks e's routes in r order 32 at a
    time by ballots, keeping ranks [blk * block - offset, + block) in rt
    (shared, ``block`` entries; the sentinel n_routes elsewhere) and stopping
    once they are all found.  The CTAs of grid column 0 write the block's slots
    and owner to pri / beid, and CTA (0, 0) expert_offsets and
    packed_route_count, exactly what route_pack writes (every block of the grid
    has its column-0 CTA).  Ends with a barrier: rt is readable.  The simulator
    has no warp intrinsics: there thread 0 does warp 0's part serially."""
    ew = SELF_PACK_MAX_EXPERTS // 32                 # experts a lane in the scan
    assert nthr % 32 == 0 and block <= nthr and SELF_PACK_MAX_EXPERTS % 32 == 0
    full = 0xFFFFFFFF

    @cuda.jit(device=True, inline=True)
    def expert_id(ids, stride, r, emap, has_map, num_ids):
        """local_expert of route r (int32), with the common case, no expert map,
        on unsigned 32-bit indices (no wraparound code; R < 2^31): an int32 id
        is valid below num_ids (a negative one is past it as unsigned), an
        int64 id (stride 2) when its low word is and its high word is 0."""
        if has_map == 0:
            ur = uint32(r)
            nid = uint32(num_ids)
            if stride == 1:
                lo = uint32(ids[ur])
                return int32(lo) if lo < nid else int32(-1)
            lo = uint32(ids[ur * uint32(2)])
            hi = ids[ur * uint32(2) + uint32(1)]
            return int32(lo) if lo < nid and hi == 0 else int32(-1)
        return int32(local_expert(ids, stride, r, emap, has_map, num_ids))

    @cuda.jit(device=True, inline=True)
    def count_routes(hist, ids, stride, n_routes, emap, has_map, num_ids, tid):
        """hist[e] += 1 for this thread's routes tid, tid + nthr, ...: four a
        round, their loads first (one memory latency a round)."""
        r = uint32(tid)
        n = uint32(n_routes)
        while r + uint32(3 * nthr) < n:
            e0 = expert_id(ids, stride, r, emap, has_map, num_ids)
            e1 = expert_id(ids, stride, r + uint32(nthr), emap, has_map, num_ids)
            e2 = expert_id(ids, stride, r + uint32(2 * nthr), emap, has_map, num_ids)
            e3 = expert_id(ids, stride, r + uint32(3 * nthr), emap, has_map, num_ids)
            if e0 >= 0:
                cuda.atomic.add(hist, e0, 1)
            if e1 >= 0:
                cuda.atomic.add(hist, e1, 1)
            if e2 >= 0:
                cuda.atomic.add(hist, e2, 1)
            if e3 >= 0:
                cuda.atomic.add(hist, e3, 1)
            r = uint32(r + uint32(4 * nthr))
        while r < n:
            e0 = expert_id(ids, stride, r, emap, has_map, num_ids)
            if e0 >= 0:
                cuda.atomic.add(hist, e0, 1)
            r = uint32(r + uint32(nthr))

    @cuda.jit(device=True, inline=True)
    def padded(c):
        return (c + block - 1) // block * block

    @cuda.jit(device=True, inline=True)
    def claim(e, hist, run, s0, meta, offsets, own, first):
        """Expert e's step of the offsets walk (both scans): run is its exclusive
        offset; (own, first) become (e, s0 - run) when e's padded range holds
        slot s0; CTA (0, 0) (meta) writes the offset.  Returns run past e."""
        p = padded(hist[e])
        if run <= s0 and s0 < run + p:
            own = int32(e)
            first = s0 - run
        if meta:
            offsets[e] = run
        return run + p, own, first

    @cuda.jit(device=True, inline=True)
    def owner_sim(hist, n_exp, s0, meta, offsets, count, ids, stride, n_routes, emap,
                  has_map, num_ids, rt):
        """Warp 0's part as one thread's loops (the simulator)."""
        run = int32(0)
        own = int32(-1)
        first = int32(0)
        for e in range(n_exp):
            run, own, first = claim(e, hist, run, s0, meta, offsets, own, first)
        if meta:
            offsets[n_exp] = run
            count[0] = run
        if own >= 0:
            rank = -first
            for r in range(n_routes):
                if local_expert(ids, stride, r, emap, has_map, num_ids) == own:
                    if 0 <= rank and rank < block:
                        rt[rank] = int32(r)
                    rank += 1
        return own

    @cuda.jit(device=True, inline=True)
    def owner_warp(lane, hist, n_exp, s0, meta, offsets, count, ids, stride, n_routes, emap,
                   has_map, num_ids, rt):
        """Warp 0's part: the padded offsets by a shuffle scan, the owner of slot
        s0 broadcast from the lane that holds it, its routes ranked by ballots."""
        mine = int32(0)
        for q in range(ew):
            e = lane * ew + q
            if e < n_exp:
                mine += padded(hist[e])
        inc = mine
        for d in (1, 2, 4, 8, 16):
            u = cuda.shfl_up_sync(full, inc, d)
            if lane >= d:
                inc += u
        total = cuda.shfl_sync(full, inc, 31)
        run = inc - mine
        own = int32(-1)
        first = int32(0)
        for q in range(ew):
            e = lane * ew + q
            if e < n_exp:
                run, own, first = claim(e, hist, run, s0, meta, offsets, own, first)
        if meta and lane == 0:
            offsets[n_exp] = total
            count[0] = total
        has = cuda.ballot_sync(full, own >= 0)
        if has == 0:
            return int32(-1)
        src = cuda.ffs(has) - 1
        own = cuda.shfl_sync(full, own, src)
        base = -cuda.shfl_sync(full, first, src)         # rank of the next route - first
        below = (uint32(1) << uint32(lane)) - uint32(1)
        r0 = 0
        while r0 < n_routes and base < block:
            r = r0 + lane
            m = False
            if r < n_routes:
                m = expert_id(ids, stride, r, emap, has_map, num_ids) == own
            bal = cuda.ballot_sync(full, m)
            if m:
                rank = base + cuda.popc(bal & below)
                if 0 <= rank and rank < block:
                    rt[rank] = int32(r)
            base += cuda.popc(bal)
            r0 += 32
        return own

    @cuda.jit(device=True, inline=True)
    def block_pack(blk, ids, stride, n_routes, emap, has_map, num_ids, n_exp, pri, beid,
                   offsets, count, rt):
        tid = cuda.threadIdx.x
        hist = cuda.shared.array(SELF_PACK_MAX_EXPERTS, int32)
        info = cuda.shared.array(1, int32)
        for i in range(tid, SELF_PACK_MAX_EXPERTS, nthr):
            hist[i] = 0
        if tid < block:
            rt[tid] = int32(n_routes)
        cuda.syncthreads()
        count_routes(hist, ids, stride, n_routes, emap, has_map, num_ids, tid)  # every route
        cuda.syncthreads()
        s0 = int32(blk * block)                          # the block's first slot
        meta = cuda.blockIdx.x == 0 and blk == 0
        if SIM:
            if tid == 0:
                info[0] = owner_sim(hist, n_exp, s0, meta, offsets, count, ids, stride,
                                    n_routes, emap, has_map, num_ids, rt)
        elif tid < 32:
            own = owner_warp(tid, hist, n_exp, s0, meta, offsets, count, ids, stride,
                             n_routes, emap, has_map, num_ids, rt)
            if tid == 0:
                info[0] = own
        cuda.syncthreads()
        e = info[0]                                      # (uniform)
        if cuda.blockIdx.x == 0:                         # the buffers fc2 reads
            if tid < block:
                pri[s0 + tid] = rt[tid]
            if tid == 0:
                beid[blk] = e
        return e

    return block_pack
