"""Route packing kernel, one launch (launched by pymoe/cuda/route_pack.py).

Shape legend: T tokens, k top-k, R = T*k flat routes (r = t*k + j), E local
experts, G experts in the id space (global under EP), B block, S slots.

    packed_route_indices[expert_offsets[e] + i] = i-th route of expert e in
        increasing r; other slots = R (sentinel)
    block_expert_ids[b] = owner of slots [b*B, (b+1)*B) or -1 past the total

Grid: geometry.route_pack_grid(R) CTAs of THREADS (1024); CTA c owns the routes
of one tile [c*tile, (c+1)*tile).  No scratch and no grid-wide sync: every CTA
counts every route itself (the expert histogram, and separately the routes
before its tile), so every CTA knows the padded offsets and where each of its
routes goes:
    1. count (shared-memory atomics), 2. padded exclusive prefix (a scan over
    the threads, one expert a thread, by warp shuffles; CTA 0 writes
    expert_offsets and the count), 3. the sentinels of the padding slots and
    the block owners: a warp an expert (grid-wide), its lanes strided over the
    expert's padding slots and blocks, then the slots and blocks past the
    total grid-strided (padding and route slots are disjoint, so no CTA's
    sentinel lands on another's route),
    4. the tile's routes scattered stably in rounds of THREADS, a route's slot
    = its expert's running cursor (its offset + the routes before the round)
    + its rank among the round's routes of that expert.  Up to RANK_EXPERTS
    experts: the rank among its warp's routes of the expert (match.any), plus
    the count in the warps before (each group's leader writes its count into
    a [warp, expert] table, then a thread an expert turns its column into an
    exclusive prefix): 2 barriers a round.  More experts: the round's keys
    (expert << IDX_BITS | position, invalid routes last) sorted in shared
    memory (bitonic, log2(THREADS) (log2(THREADS) + 1) / 2 barriers), sorted
    position p - the first position of its expert is the rank, and
    consecutive threads store consecutive slots.
Step 1 is O(R) a CTA, in rounds of 4 routes a thread whose id loads issue
together (one global latency a round, not a route), so the CTA is wide; step 4
is O(THREADS + E WARPS) or O(THREADS log^2 THREADS) a round.  The simulator
has no warp intrinsics: there the scan is Hillis-Steele over shared memory and
a warp's match a loop over its routes' experts in shared memory (CTAs of 128
threads).  E <= MAX_EXPERTS.
docs/performance.md Speed II step 18: 102 -> 20.5 us at R = 32768 (qwen3-30b-a3b,
T = 4096, H200).
"""
from __future__ import annotations

from numba import cuda, int32, int64, uint16, uint32, uint64

from ...geometry import (ROUTE_PACK_MAX_EXPERTS, ROUTE_PACK_RANK_EXPERTS, ROUTE_PACK_THREADS,
                         LaunchKey)
from .intrinsics import SIM
from .ptx import pdl_trigger
from .routes import expert_of, load_id, local_expert
from .spec import KernelSpec

__all__ = ["build"]

# The simulator runs a CTA as Python threads, and 1024 of them make each of the
# sort's barriers slow: there a CTA is 128 threads.  Any power of two dividing
# route_pack_grid's tile works (a tile is then several rounds).
THREADS = 128 if SIM else ROUTE_PACK_THREADS
MAX_EXPERTS = ROUTE_PACK_MAX_EXPERTS
OFF_N = MAX_EXPERTS + 1                  # offsets[0 .. E] (a constant: Numba's shape)
IDX_BITS = THREADS.bit_length() - 1      # a round's route index in a sort key
EPT = -(-MAX_EXPERTS // THREADS)         # experts a thread in the offsets' scan
WARPS = THREADS // 32
# Up to RANK_EXPERTS experts a round's stable ranks come from a warp match and a
# per-expert prefix over the warps ([warp, expert] counts, 16 KB at 1024
# threads), 2 barriers; past it from the sort (55 barriers at 1024 threads).
RANK_EXPERTS = ROUTE_PACK_RANK_EXPERTS
TAB_N = WARPS * RANK_EXPERTS             # (a constant: Numba's shape)
assert THREADS == 1 << IDX_BITS and ROUTE_PACK_THREADS % THREADS == 0 and THREADS % 32 == 0


@cuda.jit(device=True, inline=True)
def _count(e, r, t0, cnt, cur):
    """Count route r of local expert e (< 0: invalid): before the tile into cur,
    from it on into cnt (the total is their sum)."""
    if e >= 0:
        if r < t0:
            cuda.atomic.add(cur, e, 1)
        else:
            cuda.atomic.add(cnt, e, 1)


@cuda.jit(device=True, inline=True)
def _id32(ids, r, wide, nid):
    """(id, valid) of route r (uint64) without an expert map: int32 ids, or
    (wide) int64 ids as int32 pairs, valid in [0, nid) (high word 0)."""
    if wide:
        e = uint32(ids[r * uint64(2)])
        return e, e < nid and ids[r * uint64(2) + uint64(1)] == 0
    e = uint32(ids[r])
    return e, e < nid


@cuda.jit(device=True, inline=True)
def _count_ids(ids, wide, r, hi, nid, hist):
    """No expert map (the common case): hist[id] += 1 for the routes r,
    r + THREADS, ... < hi whose id is valid (_id32), four a round, loads first.
    Unsigned throughout: no wraparound code on the loads (r, hi uint64; nid
    uint32)."""
    while r + uint64(3 * THREADS) < hi:
        e0, k0 = _id32(ids, r, wide, nid)
        e1, k1 = _id32(ids, r + uint64(THREADS), wide, nid)
        e2, k2 = _id32(ids, r + uint64(2 * THREADS), wide, nid)
        e3, k3 = _id32(ids, r + uint64(3 * THREADS), wide, nid)
        if k0:
            cuda.atomic.add(hist, e0, 1)
        if k1:
            cuda.atomic.add(hist, e1, 1)
        if k2:
            cuda.atomic.add(hist, e2, 1)
        if k3:
            cuda.atomic.add(hist, e3, 1)
        r += uint64(4 * THREADS)
    while r < hi:
        e0, k0 = _id32(ids, r, wide, nid)
        if k0:
            cuda.atomic.add(hist, e0, 1)
        r += uint64(THREADS)


def _kernel(ids, stride, n_routes, emap, has_map, num_ids, n_exp, block,
            offsets, pri, n_slots, beid, n_blocks, count, tile):
    pdl_trigger()               # fc1 may be scheduled now (it waits: a few CTAs here)
    tid = cuda.threadIdx.x
    cta = cuda.blockIdx.x
    cnt = cuda.shared.array(MAX_EXPERTS, int32)
    cur = cuda.shared.array(MAX_EXPERTS, int32)
    off = cuda.shared.array(OFF_N, int32)
    scan = cuda.shared.array(THREADS, int32)
    first = cuda.shared.array(MAX_EXPERTS, int32)
    keys = cuda.shared.array(THREADS, int32)
    tab = cuda.shared.array(TAB_N, uint16)                   # [warp, expert]
    warp = tid >> 5
    lane = uint32(tid & 31)
    match = n_exp <= RANK_EXPERTS
    t0 = cta * tile
    t1 = min(t0 + tile, n_routes)
    ut = uint64(tid)
    for q in range(EPT):                                     # constant trip counts:
        cnt[ut + uint64(q * THREADS)] = 0                    # unrolled, unsigned
        cur[ut + uint64(q * THREADS)] = 0
    if match:
        for q in range(TAB_N // THREADS):
            tab[ut + uint64(q * THREADS)] = 0
    cuda.syncthreads()
    if has_map == 0:                                         # 1. count: routes before
        nid = uint32(num_ids)                                # the tile into cur, the
        if stride == 1:                                      # rest into cnt
            _count_ids(ids, False, uint64(tid), uint64(t0), nid, cur)
            _count_ids(ids, False, uint64(t0 + tid), uint64(n_routes), nid, cnt)
        else:
            _count_ids(ids, True, uint64(tid), uint64(t0), nid, cur)
            _count_ids(ids, True, uint64(t0 + tid), uint64(n_routes), nid, cnt)
    else:                                                    # an expert map:
        r = tid                                              # 4 routes a round,
        while r + 3 * THREADS < n_routes:                    # loads first
            a0, b0 = load_id(ids, stride, r)
            a1, b1 = load_id(ids, stride, r + THREADS)
            a2, b2 = load_id(ids, stride, r + 2 * THREADS)
            a3, b3 = load_id(ids, stride, r + 3 * THREADS)
            _count(expert_of(a0, b0, emap, has_map, num_ids), r, t0, cnt, cur)
            _count(expert_of(a1, b1, emap, has_map, num_ids), r + THREADS, t0, cnt, cur)
            _count(expert_of(a2, b2, emap, has_map, num_ids), r + 2 * THREADS, t0, cnt, cur)
            _count(expert_of(a3, b3, emap, has_map, num_ids), r + 3 * THREADS, t0, cnt, cur)
            r += 4 * THREADS
        while r < n_routes:
            _count(local_expert(ids, stride, r, emap, has_map, num_ids), r, t0, cnt, cur)
            r += THREADS
    cuda.syncthreads()
    blk = int32(block)                                       # 2. padded exclusive
    mine = int32(0)                                          # prefix: a scan over
    for q in range(EPT):                                     # threads, EPT experts
        e = tid * EPT + q                                    # each (cnt: the total
        if e < n_exp:                                        # from here on)
            cnt[e] += cur[e]
            mine += (cnt[e] + blk - 1) // blk * blk
    if SIM:                           # no warp shuffles: inclusive (Hillis-Steele)
        scan[tid] = mine
        cuda.syncthreads()
        d = 1
        while d < THREADS:
            x = int32(0)
            if tid >= d:
                x = scan[tid - d]
            cuda.syncthreads()
            scan[tid] += x
            cuda.syncthreads()
            d *= 2
        run = scan[tid] - mine
    else:                             # each warp's by shuffles, then the warps' totals
        inc = mine
        for d in (1, 2, 4, 8, 16):
            v = cuda.shfl_up_sync(0xFFFFFFFF, inc, d)
            if lane >= d:
                inc += v
        if lane == 31:
            scan[warp] = inc
        cuda.syncthreads()
        if warp == 0:
            tw = int32(0)
            if lane < WARPS:
                tw = scan[lane]
            iw = tw
            for d in (1, 2, 4, 8, 16):
                v = cuda.shfl_up_sync(0xFFFFFFFF, iw, d)
                if lane >= d:
                    iw += v
            if lane < WARPS:
                scan[lane] = iw - tw                         # exclusive, over the warps
        cuda.syncthreads()
        run = scan[warp] + inc - mine
    for q in range(EPT):
        e = tid * EPT + q
        if e < n_exp:
            off[e] = run
            cur[e] += run
            run += (cnt[e] + blk - 1) // blk * blk
            if e == n_exp - 1:
                off[n_exp] = run
                if cta == 0:
                    count[0] = run
    cuda.syncthreads()
    u32 = uint32(32)                                         # (uint32 throughout:
    n_e = uint32(n_exp)                                      # Numba widens to 64
    if cta == 0:                                             # bits unless cast)
        xe = uint32(tid)
        while xe <= n_e:
            offsets[xe] = off[xe]
            xe = uint32(xe + uint32(THREADS))
    total = uint32(off[n_exp])                               # 3. a warp an expert:
    ub = uint32(block)                                       # its padding slots'
    sent = int32(n_routes)                                   # sentinels and its
    nw = uint32(cuda.gridDim.x * WARPS)                      # blocks' owner, lanes
    xe = uint32(cta * WARPS + warp)                          # strided (block: a
    while xe < n_e:                                          # multiple of 8)
        lo = uint32(off[xe])
        hi = uint32(off[xe + uint32(1)])
        sl = uint32(lo + uint32(cnt[xe]) + lane)
        while sl < hi:
            pri[sl] = sent
            sl = uint32(sl + u32)
        bl = uint32(lo // ub + lane)
        bh = uint32(hi // ub)
        while bl < bh:
            beid[bl] = int32(xe)
            bl = uint32(bl + u32)
        xe = uint32(xe + nw)
    gs = uint32(cuda.gridDim.x * THREADS)                    # past the total: grid
    sl = uint32(total + uint32(cta * THREADS + tid))         # strided
    ns = uint32(n_slots)
    while sl < ns:
        pri[sl] = sent
        sl = uint32(sl + gs)
    bl = uint32(total // ub + uint32(cta * THREADS + tid))
    nb = uint32(n_blocks)
    while bl < nb:
        beid[bl] = int32(-1)
        bl = uint32(bl + gs)
    if match:                                                # 4. stable scatter in
                                                             # rounds: a route's rank
        for base in range(t0, t1, THREADS):                  # among the warp's routes
            r = base + tid                                   # of its expert (a match)
            e = -1                                           # + those of the warps
            if r < t1:                                       # before it + the cursor
                e = local_expert(ids, stride, r, emap, has_map, num_ids)
            if SIM:                   # no warp intrinsics: the warp's experts, shared
                keys[ut] = e
                cuda.syncthreads()
                rank = 0
                n_w = 0
                for q in range(32):
                    if keys[warp * 32 + q] == e:
                        n_w += 1
                        if q < lane:
                            rank += 1
            else:
                cuda.syncwarp()       # the last round's zeroing (by other lanes) done
                peers = cuda.match_any_sync(0xFFFFFFFF, e)
                rank = cuda.popc(peers & ((uint32(1) << lane) - uint32(1)))
                n_w = cuda.popc(peers)
            col = warp * RANK_EXPERTS + e
            if e >= 0 and rank == 0:                         # the group's leader
                tab[col] = n_w
            cuda.syncthreads()
            if SIM or WARPS != 32:    # per expert: exclusive prefix over the warps
                for x in range(tid, n_exp, THREADS):         # (zero stays zero), a
                    run = int32(0)                           # thread an expert
                    for w in range(WARPS):
                        c = int32(tab[w * RANK_EXPERTS + x])
                        if c != 0:
                            tab[w * RANK_EXPERTS + x] = run
                            run += c
                    first[x] = cur[x]                        # the round's base
                    cur[x] += run
            else:                     # a warp an expert, lane w its warp w's count:
                xw = uint32(warp)                            # a shuffle scan
                while xw < n_e:
                    ti = lane * uint32(RANK_EXPERTS) + xw
                    c = int32(tab[ti])
                    inc = c
                    for d in (1, 2, 4, 8, 16):
                        v = cuda.shfl_up_sync(0xFFFFFFFF, inc, d)
                        if lane >= d:
                            inc += v
                    if c != 0:
                        tab[ti] = inc - c
                    if lane == 31:
                        first[xw] = cur[xw]                  # the round's base
                        cur[xw] += inc
                    xw = uint32(xw + uint32(WARPS))
            cuda.syncthreads()
            if e >= 0:
                pri[first[e] + int32(tab[col]) + rank] = r
            if SIM:
                cuda.syncthreads()
            else:
                cuda.syncwarp()       # the group has read its prefix
            if e >= 0 and rank == 0:
                tab[col] = 0
        return
    for base in range(t0, t1, THREADS):                      # else by the sort, in
        r = base + tid                                       # rounds (unsigned shared
        #                                                      indices: no wraparound)
        e = MAX_EXPERTS                                      # invalid: sorts last
        if r < t1:
            le = local_expert(ids, stride, r, emap, has_map, num_ids)
            if le >= 0:
                e = le
        keys[ut] = (e << IDX_BITS) | tid                     # unique: r order within e
        cuda.syncthreads()
        k = uint64(2)
        while k <= THREADS:                                  # bitonic sort, ascending
            j = k >> uint64(1)
            while j > 0:
                p = ut ^ j
                if p > ut:
                    ka = keys[ut]
                    kb = keys[p]
                    if (ka > kb) == ((ut & k) == 0):
                        keys[ut] = kb
                        keys[p] = ka
                cuda.syncthreads()
                j >>= uint64(1)
            k <<= uint64(1)
        kk = uint64(keys[ut])
        ue = kk >> uint64(IDX_BITS)
        if ue < MAX_EXPERTS:                                 # the first of a run of e
            if ut == 0 or (uint64(keys[ut - uint64(1)]) >> uint64(IDX_BITS)) != ue:
                first[ue] = tid
        cuda.syncthreads()
        rank = 0
        last = False
        if ue < MAX_EXPERTS:
            rank = tid - first[ue]
            pri[uint64(cur[ue] + rank)] = base + int64(kk & uint64(THREADS - 1))
            last = ut == THREADS - 1 or (uint64(keys[ut + uint64(1)]) >> uint64(IDX_BITS)) != ue
        cuda.syncthreads()                                   # every cursor read first
        if last:
            cur[ue] += rank + 1
        cuda.syncthreads()


def build(key: LaunchKey) -> KernelSpec:
    return KernelSpec(_kernel, ("i4[]", "i8", "i8", "i4[]", "i8", "i8", "i8", "i8",
                                "i4[]", "i4[]", "i8", "i4[]", "i8", "i4[]", "i8"), THREADS,
                      max_regs=65536 // THREADS)        # the whole CTA on one SM
