"""FC2 kernels: down projection per packed route, then the router-weighted sum
over top-k in j order (no atomics: bit-identical runs).  Launched by
pymoe/cuda/fc2.py.

Shape legend: T tokens, k top-k, R = T*k, E, H, I, B block, S slots, TN = key.tile_n.

    fc2      grid (ceil(H/TN), S/B): route_out[pri[s], n] = w * (W2[e] @ a[s] * g2 + b2)
    combine  grid (ceil(H/TN), T):   y[t, n] = round(sum_{j valid} route_out[t*k+j, n])
"""
from __future__ import annotations

from numba import cuda, float32, int64

from ...geometry import LaunchKey
from .common import (THREADS, TILE_ROWS, activation_code, make_fc2_epilogue, shape_of)
from .gemm import make_tile_gemm
from .intrinsics import act_code, make_act_io
from .routes import local_expert
from .spec import KernelSpec

__all__ = ["build", "build_combine"]


def build(key: LaunchKey) -> KernelSpec:
    sh = shape_of(key, "w2")
    b = key.block
    gemm = make_tile_gemm(key, sh, b, gather_tokens=False)
    hid = key.hidden_size
    epi = make_fc2_epilogue(key)
    assert key.tile_n == TILE_ROWS, key
    acc_n = b * TILE_ROWS

    def kernel(a, pri, beid, n_routes, top_k, tw, w, s, lut, g2, b2, route_out):
        tid = cuda.threadIdx.x
        n0 = cuda.blockIdx.x * TILE_ROWS
        blk = cuda.blockIdx.y
        e = int64(beid[blk])
        if e < 0:
            return
        acc = cuda.shared.array(acc_n, float32)
        gemm(acc, blk, e, n0, a, w, s, lut, pri, n_routes, top_k, tw)
        for idx in range(tid, b * TILE_ROWS, THREADS):
            m = idx // TILE_ROWS
            c = idx % TILE_ROWS
            n = n0 + c
            r = int64(pri[blk * b + m])
            if n < hid and r < n_routes:
                route_out[r * hid + n] = epi(acc[idx], e, n, r, tw, g2, b2)

    return KernelSpec(kernel, (activation_code(key), "i4[]", "i4[]", "i8", "i8", "f4[]",
                               "u4[]", "u1[]",
                               "f4[]", "f4[]", "f4[]", "f4[]"), THREADS,
                      arch_specific=key.gemm == "wgmma")


def build_combine(key: LaunchKey) -> KernelSpec:
    _, store, _ = make_act_io(key.dtype)
    hid = key.hidden_size
    tn = key.tile_n

    def kernel(route_out, ids, stride, top_k, emap, has_map, num_ids, out):
        n = cuda.blockIdx.x * tn + cuda.threadIdx.x
        t = cuda.blockIdx.y
        if n >= hid:
            return
        y = float32(0.0)
        for j in range(top_k):
            r = t * top_k + j
            if local_expert(ids, stride, r, emap, has_map, num_ids) >= 0:
                y += route_out[r * hid + n]
        store(out, t * hid + n, y)

    return KernelSpec(kernel, ("f4[]", "i4[]", "i8", "i8", "i4[]", "i8", "i8",
                               act_code(key.dtype)), tn)
