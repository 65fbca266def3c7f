"""The packed regime's block GEMM, as ``LaunchKey.gemm`` picks it.

    gemm(acc_tile, blk, e, n0, a, w, s, pri, n_routes, top_k, tw)

'mma': tensor cores (gemm_mma, a = activations as uint32 words); 'wgmma':
Hopper's warpgroup MMA (sm_90a, uint32 words too): gemm_wgmma_v2 on weight
layout v2 (w, s = v2 words and scale words; geometry.gemm_reads_v2); 'fma':
CUDA cores (gemm_fma, a = the 16-bit activations; what the simulator runs).
"""
from __future__ import annotations

from ...geometry import LaunchKey, gemm_reads_v2
from . import gemm_fma, gemm_mma, gemm_wgmma_v2
from .common import TILE_ROWS, Shape

__all__ = ["make_tile_gemm", "acc_tile_words", "acc_tile_dyn_bytes"]


def make_tile_gemm(key: LaunchKey, sh: Shape, block: int, gather_tokens: bool,
                   accs: bool = False):
    if gemm_reads_v2(key.gemm, block):
        return gemm_wgmma_v2.make_tile_gemm(key, sh, block, gather_tokens, accs)
    assert not accs, (key.gemm, block)
    if key.gemm == "mma":
        return gemm_mma.make_tile_gemm(key, sh, block, gather_tokens)
    if key.gemm == "fma":
        return gemm_fma.make_tile_gemm(key, sh, block, gather_tokens)
    raise ValueError(f"{key.kernel}: LaunchKey.gemm={key.gemm!r}, expected 'mma', 'wgmma' "
                     "or 'fma'")


def acc_tile_words(key: LaunchKey, block: int) -> int:
    """fp32 words the caller's accumulator tile takes: block x TILE_ROWS, or the
    v2 GEMM's (more warpgroups a CTA, and its B ring lives there)."""
    if gemm_reads_v2(key.gemm, block):
        return gemm_wgmma_v2.acc_tile_words(block, key.format)
    return block * TILE_ROWS


def acc_tile_dyn_bytes(key: LaunchKey, block: int) -> int:
    """Bytes of dynamic shared memory the caller's accumulator tile takes where it
    holds the v2 GEMM's cp.async ring (every v2 block: 36-41 KB at B = 32, 156-168
    KB in the wide loop), 0 on the GEMMs that read packed rows (a static tile)."""
    if gemm_reads_v2(key.gemm, block):
        return 4 * acc_tile_words(key, block)
    return 0
