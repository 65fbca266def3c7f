"""Geometry: the one place where pymoe derives block sizes, capacities, regimes,
scratch shapes, tiles and launch keys.

Shape legend: T tokens, k top-k, R = T*k routes, E experts (local to this rank),
Eg experts in the id space of ``topk_ids`` (``global_num_experts``), H hidden,
I intermediate, F = 2I (gated) or I (relu2), B block size (routes per block).

Everybody calls these functions: the planner sizes the arena from them, ``bind``
slices views with them, both twins' route packers and kernels take their sizes
from them, and launch resolution builds its keys here.  None recomputes a
capacity on its own.

    >>> select_block_size(64, 8, 160)
    8
    >>> packed_slots(512, 160, 8)
    1632

Everything here is the standard library only (the planner must run where numpy,
numba and cupy are absent or slow to import).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "BLOCK_SIZES", "BLOCK_MAX_MEAN", "DECODE_MAX_TOKENS", "REGIMES", "FORMATS",
    "ACTIVATIONS",
    "DTYPES", "W13_LAYOUTS", "ALIGN", "regime_for", "decode_route_limit", "select_block_size",
    "block_size_ranges", "reachable_block_sizes", "packed_slots", "num_blocks",
    "token_buckets", "scratch_shapes", "TensorShape", "LaunchKey", "launch_keys",
    "dequant_launch_key",
    "is_gated", "fc1_rows", "gate_rows", "scale_group", "num_scale_groups", "K_ALIGN",
    "padded_k", "GEMMS", "SWIGLUOAI_ALPHA", "SWIGLUOAI_LIMIT", "swiglu_params",
    "GEMM_THREADS", "GEMM_TILE_ROWS", "fc1_tile_n", "FC2_TILE_N", "COMBINE_TILE_N",
    "COMBINE_THREADS", "COMBINE_VEC", "COMBINE_MAX_K", "COMBINE_CHUNK",
    "ROUTE_PACK_THREADS", "ROUTE_PACK_MAX_EXPERTS", "ROUTE_PACK_TILE", "ROUTE_PACK_MAX_CTAS",
    "ROUTE_PACK_RANK_EXPERTS",
    "route_pack_grid", "SELF_PACK_MAX_BLOCK", "SELF_PACK_MAX_EXPERTS", "SELF_PACK_MAX_CTAS",
    "self_packs", "expected_active_experts",
    "WGMMA_V2_RING",
    "WGMMA_V2_MAX_REGS", "WGMMA_V2_ROI_MIN_REGS", "gemm_reads_v2",
    "WGMMA_V2_WARPGROUPS", "WGMMA_V2_MTILES", "WGMMA_V2_WIDE_RING", "gemm_m_tiles",
    "PACKED_ROWS_MAX_BLOCK", "MMA_MAX_REGS", "gemm_cta_block", "gemm_block_ctas",
    "gemm_warpgroups", "gemm_threads", "gemm_max_regs", "WGMMA_FOLD_BYTES",
    "wgmma_scale_fold_ok", "pick_gemm", "WGMMA_CC",
    "DEQUANT_THREADS", "V2_TILE_ROWS", "V2_TILE_K", "V2_LANE_WORDS", "v2_row_tiles",
    "v2_k_tiles", "v2_scale_bytes", "DecodeConf", "DECODE_NARROW", "DECODE_WIDE",
    "DECODE_WIDE_MIN_KTILES", "decode_conf", "decode_folds",
    "DECODE_ROUTE_CAP",
    "decode_max_tokens", "default_decode_cut", "expert_weight_bytes", "DECODE_ROUTED_BYTES",
    "DECODE_MIN_CUT",
    "decode_grid", "DECODE_RING",
    "DECODE_ROW_GROUP", "decode_row_group", "decode_ring_stages",
    "DECODE_PDL_MAX_ROUTES", "decode_dependent",
]

# Orthogonal choices, each a small string enum.
FORMATS = ("mxfp4", "nvfp4")
ACTIVATIONS = ("silu", "swigluoai", "relu2")
DTYPES = ("bfloat16", "float16")
W13_LAYOUTS = ("gate_up", "up_gate", "interleaved")
REGIMES = ("decode", "packed")

# Routes per block of the packed regime.  8 is the n of an m16n8k16 mma (tokens
# on the N side); 64 and 128 keep a prefill tile's weight reuse high (128: the
# wgmma GEMM's wide loop, kernels/gemm_wgmma_v2.py); 24 and 48 sit between
# 16 / 32 and 32 / 64 (n24 / n48 wgmma on the ring), so fewer experts spill into
# a second block at a lower padding than the next power of two (BLOCK_MAX_MEAN);
# 144 (n144 on the wide loop) holds a mean of 128 routes and its spread.
# Every block is a multiple of 8 (an n8 mma tile, a group of 8 routes in the
# wgmma image).
BLOCK_SIZES = (8, 16, 24, 32, 48, 64, 128, 144)
# The GEMMs on packed rows (mma, fma: the fallbacks) multiply up to this many
# routes a CTA; a larger block takes one CTA a sub-block of as many
# (gemm_cta_block; a padding-only one exits), so every GEMM takes every B.
PACKED_ROWS_MAX_BLOCK = 64
# The mma GEMM's register cap (PTX .maxnreg) on blocks of 128 (its sub-blocks of
# 64): CTAs of 128 threads, 128 -> 4 CTAs an SM.  ptxas alone gave fc2 130 there
# (qwen3; gpt-oss fc1 / fc2 130 at 64 too): 3 CTAs an SM, qwen3 T = 4096 fc2
# 1.46 ms at B = 64 -> 1.85 ms at 128 (ncu).  H200, PYMOE_GEMM=mma, T = 4096
# (us, uncapped / capped): qwen3 4654 / 4395, gpt-oss 13011 / 11966.  Smaller
# blocks keep ptxas's choice: up to 102 registers at 8 .. 32; at 64 qwen3's 128,
# gpt-oss's 130 (a cap there not measured).
MMA_MAX_REGS = 128
# The automatic B for a mean of ceil(T*k/Eg) routes an expert: the first B whose
# BLOCK_MAX_MEAN[B] holds the mean (None: no limit).  The block GEMMs decode
# every weight once a block, so an expert whose routes spill into a second
# block pays its whole decode twice, while padding costs tensor-core work, which
# small blocks have to spare (a Poisson(mean) expert takes ~1.5 blocks at
# mean = B, ~1.0 at mean = B / 2): blocks of 8 and 16 serve means up to about
# half the block (below).
# Past 8 a larger block also streams a decoded weight across more routes, and
# 16, 24, 32, 48, 64 and 128 (the wide loop: one CTA an SM) cross where the
# bench says.
# H200 (graph, MXFP4 / bf16, us, blocks pinned 32 / 64 / 128, one run each,
# docs/performance.md Speed II step 19), by the mean routes an expert:
#   qwen3-30b-a3b T = 256 (16) 187.5 / 223.9 / 272.2    384 (24) 201.7 / 227.3 / 274.0
#                 512 (32) 256.0 / 233.2 / 278.8        768 (48) 338.8 / 246.4 / 288.5
#                 1024 (64) 413.4 / 342.0 / 332.3
#   gpt-oss-120b  T = 512 (16) 762.4 / 963.6 / 1135.2   768 (24) 802.0 / 975.3 / 1143.5
#                 1024 (32) 1080.9 / 999.8 / 1171.2     1536 (48) 1469.3 / 1045.4 / 1191.5
#                 2048 (64) 1806.6 / 1457.7 / 1337.9
# put 32 up to a mean of 28 and 64 up to 56, and 16 held twice the mean, as 8
# does.  Since then the rings at 32 (six slots) and 64 (five) got deeper; the
# cuts measured again on an H100 (benchmarks/block_cut.py, graph, MXFP4 /
# bf16, us, every T packed; step 40; "b16 / b32" = blocks pinned 16 / 32):
#   b8 / b16   qwen3 T = 64 (4) 144.4 / 151.1   80 (5) 161.4 / 156.5
#              gpt-oss T = 128 (4) 616.3 / 632.8   160 (5) 657.7 / 661.4
#                      192 (6) 677.1 / 666.5
#   b16 / b32  qwen3 T = 128 (8) 157.0 / 168.8   160 (10) 166.2 / 172.0
#                      192 (12) 176.9 / 173.5   224 (14) 182.5 / 175.1
#              gpt-oss T = 256 (8) 645.5 / 689.7   320 (10) 684.4 / 708.7
#                      384 (12) 712.1 / 713.4   448 (14) 734.3 / 718.9
#              deepseek-v3 T = 256 (8) 2158.0 / 2293.1   320 (10) 2288.0 / 2396.5
#                      384 (12) 2361.3 / 2415.3   448 (14) 2483.1 / 2434.4
#   b32 / b64  qwen3 T = 448 (28) 204.8 / 221.0   480 (30) 218.7 / 222.1
#                      512 (32) 235.9 / 222.4
#              gpt-oss T = 896 (28) 847.3 / 943.1   960 (30) 929.3 / 952.3
#                      1024 (32) 991.3 / 952.0
#   b64 / b128 qwen3 T = 768 (48) 246.5 / 286.0   1024 (64) 328.8 / 326.7
#              gpt-oss T = 1536 (48) 1070.2 / 1181.2   2048 (64) 1454.5 / 1296.0
# so 16 up to a mean of 11 (it crosses 32 between 10 and 12 on qwen3, at 12 on
# gpt-oss, between 12 and 14 on deepseek-v3) and 32 up to 30; 8 / 16 (between 4
# and 5) and 64 / 128 (between 48 and 64; 56 not measured again) stay.
# Then blocks of 24 and 48 (step 41, H100, same bench, us; "b16 / b24 / b32" or
# "b32 / b48 / b64", - not timed):
#   b16 / b24       qwen3 T = 96 (6) 154.9 / 157.2   128 (8) 157.9 / 159.7
#                         144 (9) 157.6 / 159.3   160 (10) 163.2 / 160.0
#                   gpt-oss T = 192 (6) 640.8 / 638.4   256 (8) 648.2 / 643.7
#                           288 (9) 649.1 / 645.1   320 (10) 656.1 / 646.4
#   b16 / b24 / b32 qwen3 T = 192 (12) 174.8 / 161.5 / 171.0   256 (16) - / 165.7 / 174.1
#                         320 (20) - / 178.5 / 179.6   384 (24) - / 204.9 / 186.8
#                   gpt-oss T = 384 (12) 683.6 / 651.6 / 699.2   512 (16) 794.0 / 663.8 / 706.3
#                           640 (20) - / 712.4 / 722.4   768 (24) - / 842.5 / 765.6
#                   deepseek-v3 T = 384 (12) 2244.7 / 2190.4 / -   512 (16) 2549.1 / 2230.8 / 2367.7
#   b32 / b48 / b64 qwen3 T = 448 (28) 202.5 / 206.1 / -   480 (30) 219.9 / 210.8 / -
#                         512 (32) 233.5 / 211.7 / 223.0   576 (36) 264.7 / 219.7 / 228.1
#                         640 (40) 288.1 / 235.0 / 234.3   704 (44) - / 258.5 / 240.7
#                   gpt-oss T = 896 (28) 844.4 / 842.6 / -   960 (30) 913.3 / 859.8 / -
#                           1024 (32) 982.7 / 868.2 / 950.0   1152 (36) 1158.9 / 905.6 / 972.4
#                           1280 (40) 1221.3 / 974.5 / 999.6   1536 (48) - / 1250.1 / 1067.6
#                   deepseek-v3 T = 1024 (32) - / 2909.2 / 3209.7
# so 16 up to 9 (qwen3 crosses 24 between 9 and 10; gpt-oss favours 24 by under
# 1% from a mean of 6), 24 up to 20, 32 up to 28 (qwen3 favours it by 1.8% there,
# gpt-oss ties), 48 up to 40 (qwen3 ties there, gpt-oss favours 48 by 2.5%), 64 up
# to 56: b64 / b128 at qwen3 T = 832 (52) 263.4 / 294.0, 896 (56) 274.3 / 301.8,
# 960 (60) 296.5 / 312.2; gpt-oss T = 1664 (52) 1117.0 / 1194.1, 1792 (56)
# 1204.6 / 1223.6, 1920 (60) 1295.2 / 1265.5 (a mean of 60 splits the layers).
# Then blocks of 144 (step 42): at a mean of 128 (256, 512) about half the
# experts spill a few routes into one more block of 128 and decode their weights
# again for them (gpt-oss T = 4096 about 240 us of 2092); 144 holds 128 +- 11
# routes in one block 92% of the time.  H100, same bench, b128 / b144:
#   gpt-oss     T = 2048 (64) 1318.5 / 1418.1   3584 (112) 1646.3 / 1695.5
#                   4096 (128) 2049.2 / 1814.3
#   qwen3       T = 2048 (128) 525.5 / 475.2   4096 (256) 881.4 / 842.1
#                   8192 (512) 1588.5 / 1576.0
#   deepseek-v3 T = 4096 (128) 7066.6 / 5998.4
# so 128 up to a mean of 120 (where 21% of the experts spill at 128 and 144's
# wider tile costs about what 128's spills do; not measured there), 144 past it.
BLOCK_MAX_MEAN = {8: 4, 16: 9, 24: 20, 32: 28, 48: 40, 64: 56, 128: 120, 144: None}

# T <= the cut runs the direct decode regime: no route packing; every CTA reads
# topk_ids itself, takes one active expert and a few 16-row weight tiles of
# layout v2, and streams them once for all of that expert's routes.
# DECODE_MAX_TOKENS is the cut's ceiling (and the cut of decode_max_tokens /
# regime_for when no shape is known); it was the measured cut against the
# packed-row GEMMs (H200, us at T = 64, decode vs packed: gpt-oss-120b 1273 vs
# 1910, qwen3-30b-a3b 392 vs 486, deepseek-v3 5180 vs 6310).
DECODE_MAX_TOKENS = 64
# Caps' default cut is lower for large experts: decode streams an expert's
# weights once a CTA group, and its cost grows with the routed weight bytes
# T * top_k * expert_weight_bytes, which the packed regime reads once an expert.
# With the v2 wgmma GEMM, step 6 of docs/performance.md (H200, graph,
# MXFP4/bf16, us, decode vs every T packed):
#     gpt-oss-120b  T=8 256.5 / 255.2   12 346.2 / 328.2   16 449.7 / 394.0
#     qwen3-30b-a3b T=8 111.4 / 131.8   16 169.3 / 176.5   24 204.2 / 195.3
# put the cut at 400 MB routed (qwen3 T = 19, gpt-oss T = 8).  The packed
# regime has since got faster at small T (the route packer's match ranks and
# dependent launches, step 20; the ring at every block, step 19) and decode
# has not; step 21 measured (same units):
#     qwen3-30b-a3b T=1 28.0 / 34.0   2 40.7 / 39.9   3 52.3 / 47.2
#                   4 60.9 / 50.6   8 106.6 / 77.6   16 168.4 / 101.1
#     gpt-oss-120b  T=1 48.1 / 57.7   2 74.0 / 69.6   3 103.9 / 87.4
#                   4 121.2 / 105.5   8 223.8 / 170.4
# Decode now wins at T = 1 only (20 MB routed on qwen3, 53 MB on gpt-oss):
# 30 MB keeps smaller experts (fewer bytes a token, where the packed regime's
# four launches weigh more) in decode a little longer; nothing below 20 MB a
# token is measured.  DECODE_MIN_CUT keeps T = 1 in decode for any expert.
DECODE_ROUTED_BYTES = 30_000_000
DECODE_MIN_CUT = 1
# An expert's route list lives in shared memory: at most DECODE_ROUTE_CAP routes
# (T*k) per decode call, so a large top_k moves the cut down.
DECODE_ROUTE_CAP = 1024
assert DECODE_ROUTE_CAP <= 2**15 - 1          # the decode kernels keep routes as int16
# Programmatic dependent launches (sm_90, launch.pdl_enabled): decode_fc2 and the
# combine go out dependent on the kernel before them while a decode call has at
# most DECODE_PDL_MAX_ROUTES routes (T*k).  H200, graph replay, MXFP4 / bf16,
# compiled on the H200, us (without / with; docs/performance.md step 9):
# gpt-oss-120b T = 1 53.2 / 49.3, T = 2 76.1 / 74.1, T = 8 224.4 / 222.0;
# qwen3-30b-a3b T = 1 32.8 / 29.2, T = 2 46.8 / 42.1, T = 8 111.6 / 105.8.  Past
# 64 routes it loses: qwen3 T = 16 (128 routes) 170.9 / 182.8 (one run on PTX
# built off the GPU).  The packed regime's combine as a dependent launch: flat
# (gpt-oss T = 16 362.1 / 363.6, T = 64 707.5 / 708.5), so it stays ordinary.
DECODE_PDL_MAX_ROUTES = 64

# Arena offsets are aligned to 128 bytes: a full L2 line / 8 x 16-byte vector
# loads, and more than the 16 bytes any kernel's vector load needs.
ALIGN = 128

# Prepared weight rows are padded along K to a multiple of K_ALIGN values: 16
# bytes of FP4, one MXFP4 group, two NVFP4 groups, one 16-byte load.
K_ALIGN = 32

# The packed regime's block GEMM (fc1, fc2) on a GPU: 'mma' (tensor cores,
# mma.sync m16n8k16), 'wgmma' (Hopper's warpgroup MMA, sm_90a only) or 'fma'
# (CUDA cores; the only one the simulator can run, it has no inline PTX).
# Chosen once per key (LaunchKey.gemm, from PYMOE_GEMM; its default 'auto' is
# settled by pick_gemm: wgmma on sm_90 where the scales fold, else mma).
GEMMS = ("mma", "fma", "wgmma")
# wgmma.mma_async exists on sm_90a only (not on sm_100 / sm_120).
WGMMA_CC = (9, 0)
# The wgmma GEMM reads weight layout v2 at every block (kernels/
# gemm_wgmma_v2.py: 64 K and 4 wgmma an m-tile a k-tile), everything copied by
# cp.async into a ring in the caller's fp32 accumulator tile (dynamic shared
# memory): blocks up to 64 a ring of WGMMA_V2_RING[B] slots, each a k-tile's
# weights, scale words and activation image (9 KB at B = 32, MXFP4), fed
# slots - 2 k-tiles ahead; blocks of 128 the wide loop (below).  Blocks of 64 loaded
# through registers until the ring's image took the 32-byte swizzle (a copy
# then fetches each sector once: performance.md Speed II steps 18-19).  H200,
# graph replay, us (one run; MXFP4 / bf16), blocks of 64 through registers ->
# on the ring:
#   qwen3-30b-a3b T = 512 (mean 32): 299.2 -> 233.2   1024 (64): 436.4 -> 342.0
#   gpt-oss-120b  T = 1024 (32): 1322.4 -> 999.8      2048 (64): 1893.4 -> 1457.7
# Six slots (4 k-tiles ahead) at B = 32, where they cost no CTA an SM (54 KB at
# MXFP4, 3 CTAs an SM under the 80-register cap: 162 KB); four at 8 and 16: six ran
# slower at 8 (16 not timed; six spill 112 / 120 bytes there); at 64 six cost a CTA
# an SM (step 19: 7-9% slower), five (below) do not.  H100,
# graph, us (performance.md step 37; four everywhere / six up to 32 / six at 32 only):
#   deepseek-v3   T = 64 (B = 8) 1894.6 / 1953.9 / 1893.1   512 (32) 2525.0 / 2444.6 / 2443.6
#   gpt-oss-120b  T = 64 (8) 559.5 / 567.7 / 560.2          512 (32) 770.3 / 720.1 / 720.3
#   qwen3-30b-a3b T = 8 (8) 84.3 / 88.0 / 84.3   64 (8) 150.3 / 153.5 / 150.3
#                 256 (32) 186.9 / 176.0 / 176.0
# Blocks of 24 and 48 (step 41) take six slots as 32 does: 48 KB / 66 KB at
# MXFP4, 3 CTAs an SM under the 80-register cap (local ptxas: 0-4 / 20-32 bytes
# of spills).
# Five at 64 (3 k-tiles ahead; 65 KB MXFP4 / 70 KB NVFP4, 3 CTAs an SM still fit
# under the 80-register cap; local ptxas: fc1 / fc2 spill 16 / 8 bytes against
# 12 / 0 at four).  H100, graph, us, four -> five, three runs (steps 38, 39: main
# first, main first, five first): qwen3-30b-a3b T = 512 (B = 64) 227.4 -> 224.8,
# 226.3 -> 224.4, 226.6 -> 224.2; gpt-oss-120b T = 1024 (64) 966.2 -> 954.8,
# 967.7 -> 961.7, 968.6 -> 959.5; the controls (blocks of 32 / 128) within 0.2%.
WGMMA_V2_RING = {8: 4, 16: 4, 24: 6, 32: 6, 48: 6, 64: 5}
# ... with WGMMA_V2_WARPGROUPS warpgroups a CTA on that one B ring: each
# multiplies its own 64 weight rows (warps 4g..4g+3: row tiles of the CTA's
# 64 g .. 64 g + 63), so the block's activations are staged (and the ring fenced
# and barriered) once for all of them; the CTA's tile_n grows by as much.
WGMMA_V2_WARPGROUPS = {8: 2, 16: 2, 24: 2, 32: 2, 48: 2, 64: 2, 128: 2, 144: 2}
# ... and each warpgroup multiplies WGMMA_V2_MTILES tiles of 64 weight rows
# (m64 wgmma) by the block: blocks of 128 are the wide loop (kernels/
# gemm_wgmma_v2.py), two m64 x n128 accumulators a warpgroup (128 fp32
# registers a thread, one CTA an SM), 256 weight rows a CTA on one image of the
# block's activations, fed WGMMA_V2_WIDE_RING - 2 k-tiles ahead by cp.async:
# triton_kernels' Hopper MXFP4 tile (128 x 256 x 128, 1 CTA an SM: ncu,
# performance.md Speed II step 13) on layout v2; where it pays against blocks
# of 64: BLOCK_MAX_MEAN.
WGMMA_V2_MTILES = {8: 1, 16: 1, 24: 1, 32: 1, 48: 1, 64: 1, 128: 2, 144: 2}
WGMMA_V2_WIDE_RING = 6
# ... capped in registers (PTX .maxnreg) so no key loses a CTA an SM to a few
# registers: CTAs of 2 x 128 threads, 64 -> 4 CTAs share an SM's 64 K
# registers, 72 / 80 -> 3 (local ptxas: no spills at B <= 16 under 64 or at
# B = 32 under 80; 16-40 bytes at B = 64, one local access a k-tile at most).
# H200, B = 32 (gpt-oss T = 512 / qwen3 T = 256, us): cap 64 1365 / 362, 72
# 1109 / 324; one warpgroup a CTA under 72 / 80: 1178 / 333, 1209 / 346.
# B = 32 went from 72 to 80 with the scale pairs of both rows (e8m0_rows),
# which spill 12-16 bytes under 72 (performance.md step 27).
WGMMA_V2_MAX_REGS = {8: 64, 16: 64, 24: 80, 32: 80, 48: 80, 64: 80, 128: None, 144: None}
# ... and at least 80 in fc1 with the router weight on its input (the staged
# activations rounded through registers): under 64 / 72 at blocks of 16 / 32
# local ptxas serializes its wgmma (C7512, "insufficient register resources";
# bf16 MXFP4 since its register-made scales, fp16 since step 26's).  80 keeps
# blocks of 32 at 3 CTAs an SM and takes blocks of 16 from 4 to 3.
WGMMA_V2_ROI_MIN_REGS = 80
# wgmma folds MXFP4's E8M0 scale into the 16-bit weights (exact packed
# multiply).  fp16: 2^(byte - 127) times every E2M1 value (0.5 .. 6) is a finite
# fp16 value on its grid for bytes 104 .. 140 (0.5 * 2^-23 = fp16's least
# subnormal, 6 * 2^13 < 65504), and the v2 GEMM multiplies the decoder's FP4 x
# 2^-14 by 2^(byte - 113) once, made in registers as a normal fp16 value up to
# byte 128 (2^15): 104 .. 128, scales 2^-23 .. 2 (129 .. 140 take mma).  bf16:
# the v2 GEMM multiplies the decoder's FP4 x
# 2^-126 by the table value 2^(byte - 9) once (the accumulators take back 2^8):
# the table value is finite up to byte 136 and every product FP4 x 2^(byte - 135)
# is on bf16's grid from byte 3 (0.5 x 2^-132 = 2^-133, its least subnormal);
# the packed-row GEMM (B = 128) multiplies FP4 by 2^(byte - 127), exact on 0 ..
# 252, so 3 .. 136 serves both.  Byte 255 (NaN) gives NaN either way.
WGMMA_FOLD_BYTES = {"bfloat16": (3, 136), "float16": (104, 128)}

# gpt-oss's swigluoai constants (model.py): gate * sigmoid(1.702 * gate) * (up + 1)
# with gate <= 7 and |up| <= 7.
SWIGLUOAI_ALPHA = 1.702
SWIGLUOAI_LIMIT = 7.0

# ---- Kernel tiles: every tile size a kernel or the planner uses, and nothing
# else anywhere.  Kernels read them from their LaunchKey (tile_n) or from here.
#
# Block GEMM (fc1, fc2): a CTA of GEMM_THREADS = 4 warps multiplies the B routes
# of one block by GEMM_TILE_ROWS weight rows (warp w: rows 16w..16w+15, one
# m16 tile of mma.sync).  Gated fc1 tiles hold half gate rows, half up rows, so
# they produce GEMM_TILE_ROWS / 2 intermediate columns.
GEMM_THREADS = 128
GEMM_TILE_ROWS = 64
FC2_TILE_N = GEMM_TILE_ROWS          # fc2: output columns per CTA
COMBINE_THREADS = 128                # combine: threads per CTA, each COMBINE_VEC columns
COMBINE_VEC = 4                      # H % 8 == 0 (formats): a thread's columns all fit
COMBINE_TILE_N = COMBINE_THREADS * COMBINE_VEC    # output columns per CTA
COMBINE_MAX_K = 256                  # top_k up to this: route validity once a CTA
COMBINE_CHUNK = 4                    # combine: routes whose rows a thread loads at once
# Decode regime on layout v2 (kernels/decode.py): a CTA of W warps splits K of
# one 16-row tile (warp w takes k-tiles w, w + W, ...); tokens ride on the
# mma's N side, NT n-tiles of 8 routes per pass over the weights (W, NT:
# decode_conf).  A warp takes DECODE_ROW_GROUP row tiles side by side (i,
# i + 1: one activation load, one loop and one producer step serve both) when
# the projection's row tile count is even, else one (decode_row_group).
# Each warp streams its tiles through a ring of DECODE_RING tiles (512 weight
# bytes + their scales each) in shared memory, filled by cp.async: DECODE_RING /
# group stages of one k-tile of the group, so DECODE_RING - group tiles (3 to
# 3.5 KB a warp) are in flight while it computes one stage.
# The CTA shape (decode_conf) depends on the projection and its K: a narrow
# CTA of 4 warps, two n-tiles a pass and no register cap (4 pair CTAs an SM),
# or, for decode_fc2 with at least DECODE_WIDE_MIN_KTILES k-tiles, a wide one
# that splits K 8 ways with one n-tile a pass (its fragment code then fits
# max_regs = 80, which keeps 3 CTAs of 256 threads an SM: about twice the warps
# a scheduler).  Measured at T = 1 (H200, graph, performance.md step 31; us,
# narrow -> wide): decode_fc2 alone gpt-oss-120b (45 k-tiles) 20.8 -> 18.3,
# deepseek-v3 (32) 44.8 -> 39.0, qwen3-30b-a3b (12) 13.6 -> 12.8, but the whole
# qwen3 layer 28.1 -> 29.4 (its fc2 warps take 1 or 2 k-tiles each, and a wide
# fc2 CTA no longer fits beside decode_fc1's to start early); decode_fc1 wide
# ran slower (ncu, qwen3 and deepseek, step 31).  The ring (weights, scales) and the
# split-K partials are static arrays in a narrow CTA (42 KB with the tables; the
# NVFP4 pair kernels 47.3 KB, under the 48 KB of static shared memory) and
# dynamic shared memory in a wide one (56-64 KB).  Dynamic in the narrow CTA too
# cost qwen3-30b-a3b's layer 2 us at T = 1 (H100, graph, 32.3 against 30.3,
# step 32; the same registers and bytes, so why is not known).
DECODE_RING = 8
DECODE_ROW_GROUP = 2


class DecodeConf(NamedTuple):
    """A decode kernel's CTA: warps (K split that many ways), ntiles (n-tiles of
    8 routes a pass), max_regs (.maxnreg, None: no cap), and the CTAs an SM
    holds (decode_grid's wave) for single row tiles and for pairs."""
    warps: int
    ntiles: int
    max_regs: int | None
    ctas_per_sm: int
    pair_ctas_per_sm: int


DECODE_NARROW = DecodeConf(4, 2, None, 5, 4)
DECODE_WIDE = DecodeConf(8, 1, 80, 3, 3)
DECODE_WIDE_MIN_KTILES = 32


def decode_conf(which: str, k_tiles: int) -> DecodeConf:
    """The CTA shape of projection ``which``'s decode kernel (w13 / w2) over
    k_tiles k-tiles of K (v2_k_tiles)."""
    if which not in ("w13", "w2"):
        raise ValueError(f"which: {which!r}; expected 'w13' or 'w2'")
    return DECODE_WIDE if which == "w2" and k_tiles >= DECODE_WIDE_MIN_KTILES else DECODE_NARROW


assert DECODE_RING & (DECODE_RING - 1) == 0 and DECODE_RING >= 2 * DECODE_ROW_GROUP
# ---- Weight layout v2 (pymoe/ref/layout.py is the only code that knows the
# order): per expert, tiles of V2_TILE_ROWS rows x V2_TILE_K values, 512 bytes,
# one 16-byte run (V2_LANE_WORDS uint32) per lane of a warp = that lane's mma.sync
# m16n8k16 A fragments for the tile's 4 k-steps.  Gated w13 tiles hold 8 gate rows
# then the 8 up rows of the same intermediate columns.
V2_TILE_ROWS = 16
V2_TILE_K = 64
V2_LANE_WORDS = 4
# Route packing: CTAs of ROUTE_PACK_THREADS (a power of two), each scattering one
# tile of about ROUTE_PACK_TILE consecutive routes (route_pack_grid) in rounds of
# ROUTE_PACK_THREADS; expert counters and cursors live in shared memory (each CTA
# counts every route itself: no scratch, no grid-wide sync).
ROUTE_PACK_THREADS = 1024
ROUTE_PACK_MAX_EXPERTS = 1024
# ... a round's stable ranks: up to ROUTE_PACK_RANK_EXPERTS experts by a warp
# match and a per-expert prefix over the warps, past it by a sort (kernels/
# route_pack.py).
ROUTE_PACK_RANK_EXPERTS = 256
ROUTE_PACK_TILE = 1024
ROUTE_PACK_MAX_CTAS = 128
# Small blocks: no route_pack launch.  Each packed fc1 CTA packs its own block
# (kernels/block_pack.py make_block_pack: it counts every route of the call,
# scans the experts' padded counts, ranks its expert's routes) and the CTAs of
# n-tile 0 write the route buffers route_pack would have (fc2 reads them after
# its dependent-launch wait).  Up to SELF_PACK_MAX_BLOCK, i.e. at most
# BLOCK_MAX_MEAN[16] routes an expert on average, so every CTA's count stays a
# few routes a thread; up to SELF_PACK_MAX_EXPERTS local experts (a static
# histogram); only where a block is one CTA (gemm_block_ctas == 1); and only
# while fc1 has at most SELF_PACK_MAX_CTAS CTAs that hold routes (about two
# waves on an H200), since each pays its own pack's latency before its first
# weight copy.  Those CTAs are counted as fc1 n-tiles x the experts R routes
# hold on average when drawn uniformly (expected_active_experts; a skewed
# routing holds fewer), not min(R, E): qwen3 T = 16 holds ~82 of 128 experts,
# not 128, and self-packed it ran 89.9 against 92.2 us (step 25), while T = 32
# (~112) lost 1%.  docs/performance.md step 24: the route packer cost 7-12 us of a
# graph replay at T = 2 .. 512 (tools/launch_share.py); the self-pack, measured
# beside it (us, graph, main -> self-pack, fc1 CTAs with routes ~ min(R, E) x
# fc1 n-tiles):
#   qwen3-30b-a3b (12 n-tiles)  T 2 39.9 -> 35.4 (192), 4 48.8 -> 43.9 (384),
#     8 72.0 -> 69.9 (768), 16 91.6 -> 89.9 (1536), 32 118.6 -> 120.5 (1536),
#     64 130.2 -> 136.2, 128 141.8 -> 155.0
#   gpt-oss-120b (45 n-tiles)   T 2 64.3 -> 59.8 (360), 4 98.6 -> 97.3 (720),
#     8 150.3 -> 151.3 (1440), 16 225.8 -> 233.9, 64 454.2 -> 493.9
SELF_PACK_MAX_BLOCK = 16
SELF_PACK_MAX_EXPERTS = 256
SELF_PACK_MAX_CTAS = 1024
DEQUANT_THREADS = 128                # dequant: K values (threads) per CTA
assert GEMM_TILE_ROWS == 16 * (GEMM_THREADS // 32), "one 16-row mma tile per warp"


def v2_row_tiles(which: str, activation: str, hidden_size: int,
                 intermediate_size: int) -> int:
    """Row tiles of a projection in layout v2: gated w13 ceil(I/8) (8 gate + 8 up
    rows each), relu2 w13 ceil(I/16), w2 ceil(H/16)."""
    if which == "w13":
        per = V2_TILE_ROWS // 2 if is_gated(activation) else V2_TILE_ROWS
        return -(-intermediate_size // per)
    return -(-hidden_size // V2_TILE_ROWS)


def v2_k_tiles(k_dim: int) -> int:
    return -(-k_dim // V2_TILE_K)


def v2_scale_bytes(fmt: str) -> int:
    """Scale bytes per v2 tile: 16 rows x 64/g groups (32 MXFP4, 64 NVFP4)."""
    return V2_TILE_ROWS * (V2_TILE_K // scale_group(fmt))


def expert_weight_bytes(fmt: str, activation: str, hidden_size: int,
                        intermediate_size: int) -> int:
    """One expert's FP4 weights and scale bytes (w13 and w2)."""
    n = (fc1_rows(activation, intermediate_size) + intermediate_size) * hidden_size
    return n // 2 + n // scale_group(fmt)


def default_decode_cut(top_k: int, fmt: str, activation: str, hidden_size: int,
                       intermediate_size: int) -> int:
    """Caps' decode regime's last T when not pinned: the T whose routed weight
    bytes reach DECODE_ROUTED_BYTES, within DECODE_MIN_CUT..DECODE_MAX_TOKENS
    and the route cap."""
    per_token = top_k * expert_weight_bytes(fmt, activation, hidden_size, intermediate_size)
    cut = max(DECODE_MIN_CUT, min(DECODE_MAX_TOKENS, DECODE_ROUTED_BYTES // per_token))
    return max(1, min(cut, decode_route_limit(top_k)))


def decode_max_tokens(top_k: int, pin: int | None = None) -> int:
    """The largest T of the decode regime for this top_k (0: none).  ``pin``
    (Caps.decode_max_tokens) replaces DECODE_MAX_TOKENS; the route cap holds."""
    if pin is not None:
        return min(int(pin), decode_route_limit(top_k))
    return max(1, min(DECODE_MAX_TOKENS, decode_route_limit(top_k)))


def decode_route_limit(top_k: int) -> int:
    """The most tokens a decode call can take: T * k <= DECODE_ROUTE_CAP."""
    return DECODE_ROUTE_CAP // max(1, top_k)


def decode_row_group(row_tiles: int) -> int:
    """Row tiles a decode warp streams side by side: DECODE_ROW_GROUP when it
    divides the projection's row tile count, else 1 (either format)."""
    if row_tiles % DECODE_ROW_GROUP:
        return 1
    return DECODE_ROW_GROUP


def decode_ring_stages(row_tiles: int) -> int:
    """Stages of a decode warp's ring (each one k-tile of its row group)."""
    return DECODE_RING // decode_row_group(row_tiles)


def decode_grid(which: str, row_tiles: int, k_tiles: int, num_routes: int, num_experts: int,
                num_sms: int = 132) -> tuple[int, int]:
    """(grid x, grid y) of projection ``which``'s decode kernel: y = one CTA row
    per possible active expert (min(R, E)); x CTAs share the row groups
    (decode_row_group) evenly, one wave in all of decode_conf's CTAs an
    SM (pair_ctas_per_sm for the pair kernels, which fit only that many; each
    CTA pays the routing scan once for several groups)."""
    conf = decode_conf(which, k_tiles)
    group = decode_row_group(row_tiles)
    units = row_tiles // group
    per_sm = conf.pair_ctas_per_sm if group > 1 else conf.ctas_per_sm
    gy = max(1, min(num_routes, num_experts))
    want = max(1, (per_sm * num_sms) // gy)
    per = -(-units // min(units, want))
    return -(-units // per), gy


def decode_dependent(num_routes: int) -> bool:
    """Whether a decode call's decode_fc2 and combine are dependent launches
    (programmatic on sm_90): at most DECODE_PDL_MAX_ROUTES routes."""
    return num_routes <= DECODE_PDL_MAX_ROUTES


def fc1_tile_n(activation: str) -> int:
    """fc1: intermediate columns per CTA (32 gate + 32 up rows, or 64 relu2 rows)."""
    return GEMM_TILE_ROWS // 2 if is_gated(activation) else GEMM_TILE_ROWS


def padded_k(k_dim: int) -> int:
    """K of a prepared weight row: K rounded up to K_ALIGN values."""
    return -(-k_dim // K_ALIGN) * K_ALIGN


def swiglu_params(activation: str, alpha: float | None = None,
                  limit: float | None = None) -> tuple[float | None, float | None]:
    """(alpha, limit) an activation runs with: swigluoai defaults to gpt-oss's
    (1.702, 7.0); silu keeps an optional limit and has no alpha; relu2 neither."""
    if activation == "swigluoai":
        return (SWIGLUOAI_ALPHA if alpha is None else float(alpha),
                SWIGLUOAI_LIMIT if limit is None else float(limit))
    if activation == "silu":
        return None, (None if limit is None else float(limit))
    return None, None


def is_gated(activation: str) -> bool:
    return activation != "relu2"


def fc1_rows(activation: str, intermediate_size: int) -> int:
    """F: rows of w13 (gate and up stacked for gated activations)."""
    return 2 * intermediate_size if is_gated(activation) else intermediate_size


def gate_rows(activation: str, intermediate_size: int) -> int:
    """Rows of w13 scaled by the gate's NVFP4 global (column 0 of w13_global):
    the first I rows when gated (prepared order: gate then up), all when not."""
    return intermediate_size if is_gated(activation) else fc1_rows(activation,
                                                                  intermediate_size)


def scale_group(fmt: str) -> int:
    """Values per scale along K: 32 for MXFP4 (E8M0), 16 for NVFP4 (E4M3)."""
    return 32 if fmt == "mxfp4" else 16


def num_scale_groups(fmt: str, k_dim: int) -> int:
    g = scale_group(fmt)
    return -(-k_dim // g)


def regime_for(num_tokens: int, top_k: int = 1, cut: int | None = None) -> str:
    """'decode' (direct, no route packing) for small T, else 'packed'; ``cut``
    pins the regime's last T (decode_max_tokens)."""
    return "decode" if num_tokens <= decode_max_tokens(top_k, cut) else "packed"


def select_block_size(num_tokens: int, top_k: int, num_route_experts: int,
                      pin: int | None = None) -> int:
    """Block size B for T tokens: the first B whose BLOCK_MAX_MEAN holds the mean
    routes an expert ceil(T*k/Eg).  Monotone non-decreasing in T, which is what
    lets ``block_size_ranges`` work in closed form.  A pin wins.
    """
    if pin is not None:
        return pin
    mean = -(-(num_tokens * top_k) // num_route_experts)
    for b in BLOCK_SIZES:
        cap = BLOCK_MAX_MEAN[b]
        if cap is None or mean <= cap:
            return b
    return BLOCK_SIZES[-1]


def block_size_ranges(max_tokens: int, top_k: int, num_route_experts: int,
                      pin: int | None = None, lo: int | None = None
                      ) -> list[tuple[int, int, int]]:
    """[(B, t_lo, t_hi)] covering the packed-regime T in lo..max_tokens.

    ceil(T*k/Eg) <= M  <=>  T*k <= M*Eg  <=>  T <= M*Eg // k  (M = BLOCK_MAX_MEAN[B]),
    so B's range ends there.
    """
    if lo is None:
        lo = decode_max_tokens(top_k) + 1
    if max_tokens < lo:
        return []
    if pin is not None:
        return [(pin, lo, max_tokens)]
    out = []
    t = lo
    for b in BLOCK_SIZES:
        cap = BLOCK_MAX_MEAN[b]
        hi = max_tokens if cap is None or b == BLOCK_SIZES[-1] else min(
            max_tokens, (cap * num_route_experts) // top_k)
        if hi >= t:
            out.append((b, t, hi))
            t = hi + 1
        if t > max_tokens:
            break
    return out


def reachable_block_sizes(max_tokens: int, top_k: int, num_route_experts: int,
                          pin: int | None = None, cut: int | None = None
                          ) -> tuple[int, ...]:
    """Block sizes ``select_block_size`` returns for the packed T in 1..max_tokens
    (``cut``: the decode regime's last T when pinned, as in token_buckets)."""
    return tuple(b for b, _, _ in block_size_ranges(
        max_tokens, top_k, num_route_experts, pin, lo=decode_max_tokens(top_k, cut) + 1))


def packed_slots(num_routes: int, num_experts: int, block: int) -> int:
    """Packed slot capacity: R valid routes, each expert padded up to B.

    At most min(R, E) experts are non-empty and each wastes at most B-1 slots:
    R + min(R, E)*(B-1)  (== min(R*B, R + E*(B-1))), rounded up to whole blocks
    so a block's CTA never indexes past the buffers.
    """
    s = num_routes + min(num_routes, num_experts) * (block - 1)
    return -(-s // block) * block


def num_blocks(slots: int, block: int) -> int:
    return -(-slots // block)


def token_buckets(max_tokens: int, top_k: int, num_route_experts: int,
                  pin: int | None = None, cut: int | None = None
                  ) -> list[tuple[str, int | None, int, int]]:
    """[(regime, B or None, t_lo, t_hi)]: every T in 1..max_tokens in exactly one
    bucket; a bucket's scratch is largest at its t_hi (capacities grow with T).
    ``pin``: the packed block (Caps.block_size_m); ``cut``: the decode regime's
    last T (Caps.decode_max_tokens; 0 = every T packed)."""
    out: list[tuple[str, int | None, int, int]] = []
    last = decode_max_tokens(top_k, cut)
    if max_tokens >= 1 and last >= 1:
        out.append(("decode", None, 1, min(max_tokens, last)))
    for b, lo, hi in block_size_ranges(max_tokens, top_k, num_route_experts, pin,
                                       lo=last + 1):
        out.append(("packed", b, lo, hi))
    return out


@dataclass(frozen=True)
class TensorShape:
    """One scratch tensor a kernel touches: name, numpy dtype name, shape."""
    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def itemsize(self) -> int:
        return {"int32": 4, "float32": 4, "bfloat16": 2, "float16": 2,
                "uint8": 1}[self.dtype]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize


def scratch_shapes(regime: str, num_tokens: int, top_k: int, num_experts: int,
                   hidden_size: int, intermediate_size: int, dtype: str,
                   block: int | None = None) -> list[TensorShape]:
    """Every scratch tensor the kernels of ``regime`` touch for T tokens.

    decode:  intermediate[R, I]           (route r = t*k + j, direct)
             route_out[R, H] fp32         route -> weight * (W2 @ a + b2)
    packed:  expert_offsets[E+1]          exclusive prefix of padded counts
             packed_route_count[1]        == expert_offsets[E]
             packed_route_indices[S]      slot -> flat route t*k+j, sentinel R
             block_expert_ids[S/B]        block -> expert, -1 past the total
             intermediate[S, I]           slot -> activation (0 in padding)
             route_out[R, H] fp32         route -> weight * (W2 @ a + b2)
    """
    r = num_tokens * top_k
    if regime == "decode":
        return [TensorShape("intermediate", dtype, (r, intermediate_size)),
                TensorShape("route_out", "float32", (r, hidden_size))]
    if block is None:
        raise ValueError("packed regime needs a block size")
    s = packed_slots(r, num_experts, block)
    return [
        TensorShape("expert_offsets", "int32", (num_experts + 1,)),
        TensorShape("packed_route_count", "int32", (1,)),
        TensorShape("packed_route_indices", "int32", (s,)),
        TensorShape("block_expert_ids", "int32", (num_blocks(s, block),)),
        TensorShape("intermediate", dtype, (s, intermediate_size)),
        TensorShape("route_out", "float32", (r, hidden_size)),
    ]


@dataclass(frozen=True)
class LaunchKey:
    """What a compiled kernel depends on.  Never the live T beyond its bucket:
    grids are launch arguments, not compile-time constants.

    kernel: route_pack / fc1 / fc2 / combine / decode_fc1 / decode_fc2, or
    dequant_w13 / dequant_w2 (the debugging twin, outside any plan)
    tile_n: output columns per CTA (the kernel's grid and tile follow it)
    gemm: the block GEMM of fc1 / fc2 ('mma', 'fma' or 'wgmma', GEMMS); for MXFP4
    decode_fc1 / decode_fc2 'wgmma' where the call's packed GEMM is wgmma, i.e.
    the scale bytes fold (decode_folds); '' for the rest
    """
    kernel: str
    format: str
    activation: str
    dtype: str
    hidden_size: int
    intermediate_size: int
    block: int = 0               # routes per block (packed fc1/fc2), 0 otherwise
    tile_n: int = 0
    has_bias: bool = False
    router_on_input: bool = False
    swiglu_limit: float | None = None
    swiglu_alpha: float | None = None
    gemm: str = ""
    self_pack: bool = False      # packed fc1 packs its own block (self_packs): no route_pack


def self_packs(gemm: str, block: int, num_experts: int | None, num_routes: int | None = None,
               activation: str = "silu", intermediate_size: int = 0) -> bool:
    """Whether a packed call of ``num_routes`` routes over ``num_experts`` local
    experts, block GEMM ``gemm`` at block ``block``, has fc1 pack its blocks
    itself (no route_pack launch): blocks up to SELF_PACK_MAX_BLOCK, a block one
    CTA, and at most SELF_PACK_MAX_CTAS fc1 CTAs holding routes
    (expected_active_experts(R, E) blocks of ceil(I / fc1 tile_n) CTAs).  None (routes or experts not known): no."""
    if num_experts is None or num_routes is None:
        return False
    if not (block <= SELF_PACK_MAX_BLOCK and 1 <= num_experts <= SELF_PACK_MAX_EXPERTS
            and gemm_block_ctas(gemm, block) == 1):
        return False
    tiles = -(-intermediate_size // (fc1_tile_n(activation) * gemm_m_tiles(gemm, block)))
    return (expected_active_experts(num_routes, num_experts) * max(tiles, 1)
            <= SELF_PACK_MAX_CTAS)


def expected_active_experts(num_routes: int, num_experts: int) -> int:
    """The experts that ``num_routes`` routes drawn uniformly over ``num_experts``
    hold on average, rounded up: ceil(E (1 - (1 - 1/E)^R)), at most min(R, E).
    Monotone in R (so a token bucket's ends bound it)."""
    if num_routes <= 0 or num_experts <= 0:
        return 0
    if num_experts == 1:
        return 1
    mean = num_experts * -math.expm1(num_routes * math.log1p(-1.0 / num_experts))
    return min(num_routes, num_experts, math.ceil(mean - 1e-9))


def launch_keys(regime: str, block: int | None, *, format: str, activation: str,
                dtype: str, hidden_size: int, intermediate_size: int,
                has_bias: bool, router_on_input: bool,
                swiglu_limit: float | None, swiglu_alpha: float | None, gemm: str,
                num_experts: int | None = None, num_routes: int | None = None
                ) -> tuple[LaunchKey | None, ...]:
    """The launches ``run`` makes for one call, in order.  ``gemm`` (one of
    GEMMS) goes into the packed fc1 / fc2 keys: it changes their argument types.
    Packed: (route_pack, fc1, fc2, combine), route_pack None where fc1 packs its
    own blocks (self_packs, for a call of ``num_routes`` routes over
    ``num_experts`` local experts)."""
    if gemm not in GEMMS:
        raise ValueError(f"gemm={gemm!r}: expected one of {GEMMS}")
    common = dict(format=format, activation=activation, dtype=dtype,
                  hidden_size=hidden_size, intermediate_size=intermediate_size,
                  has_bias=has_bias, router_on_input=router_on_input,
                  swiglu_limit=swiglu_limit, swiglu_alpha=swiglu_alpha)
    # route_pack depends on nothing of the layer, combine on dtype and H only: their
    # keys say so, so one compiled kernel serves every layer that shares them
    combine = LaunchKey("combine", format="", activation="", dtype=dtype,
                        hidden_size=hidden_size, intermediate_size=0, tile_n=COMBINE_TILE_N)
    if regime == "decode":
        half = V2_TILE_ROWS // 2 if is_gated(activation) else V2_TILE_ROWS
        # MXFP4 scales fold (decode_folds) where the packed GEMM is wgmma, except
        # in a narrow decode_fc2 (the figures above decode_folds)
        fold = gemm == "wgmma" and format == "mxfp4"
        fold2 = fold and decode_conf("w2", v2_k_tiles(intermediate_size)).warps \
            > DECODE_NARROW.warps
        return (LaunchKey("decode_fc1", tile_n=half, gemm="wgmma" if fold else "", **common),
                LaunchKey("decode_fc2", tile_n=V2_TILE_ROWS, gemm="wgmma" if fold2 else "",
                          **common), combine)
    b = int(block)
    if b not in BLOCK_SIZES:
        raise ValueError(f"block={b}: the block GEMMs take blocks of {BLOCK_SIZES} routes")
    own = self_packs(gemm, b, num_experts, num_routes, activation, intermediate_size)
    return (None if own else LaunchKey("route_pack", format="", activation="", dtype="",
                                       hidden_size=0, intermediate_size=0),
            LaunchKey("fc1", block=b, tile_n=fc1_tile_n(activation) * gemm_m_tiles(gemm, b),
                      gemm=gemm, self_pack=own, **common),
            LaunchKey("fc2", block=b, tile_n=FC2_TILE_N * gemm_m_tiles(gemm, b), gemm=gemm,
                      **common), combine)


# Where MXFP4 decode keys fold their scales (decode_folds): decode_fc1, and
# decode_fc2 only on the wide CTA.  H100, T = 1, graph, us (performance.md
# step 36; main / fold everywhere / fold but the narrow decode_fc2):
#   qwen3-30b-a3b  29.2 / 30.8 / 29.0   gpt-oss-120b 49.3 / 47.7 / 47.9
#   deepseek-v3   106.0 / 102.5 / 102.7
# qwen3's narrow decode_fc2 folded (86 registers, was 123) runs as fast alone
# (13.7 / 13.8) but 1.6 us slower chained after decode_fc1 (not explained).
def decode_folds(key: LaunchKey) -> bool:
    """Whether a decode kernel folds MXFP4's E8M0 scales into the decoded
    weights' packed multiply (common.e8m0_rows / f16_rows, as the v2 GEMM does),
    instead of adding each 32-group's fresh fragment times its fp32 scale from
    a shared table: its key says 'wgmma', which launch_keys gives decode_fc1,
    and decode_fc2 on its wide CTA, where the call's GEMM is wgmma (pick_gemm:
    sm_90 and scale bytes that fold exactly, wgmma_scale_fold_ok).  Each group still
    accumulates into a fresh fragment, added in fp32: every product and sum is
    the table path's times a power of two, so the output bits are the same."""
    return key.format == "mxfp4" and key.gemm == "wgmma"


def route_pack_grid(num_routes: int) -> tuple[int, int]:
    """(CTAs, tile) of the route packer for R routes: CTA c scatters routes
    [c * tile, min((c + 1) * tile, R)); tile is a multiple of ROUTE_PACK_THREADS
    (whole rounds), at least ROUTE_PACK_TILE until ROUTE_PACK_MAX_CTAS CTAs."""
    r = max(1, int(num_routes))
    ctas = min(-(-r // ROUTE_PACK_TILE), ROUTE_PACK_MAX_CTAS)
    per = -(-r // ctas)
    tile = -(-per // ROUTE_PACK_THREADS) * ROUTE_PACK_THREADS
    return -(-r // tile), tile


def wgmma_scale_fold_ok(format: str, dtype: str, lo: int, hi: int) -> bool:
    """Whether the wgmma GEMM's folded scales are exact for weights whose scale
    bytes other than 255 (NaN, which stays NaN) span lo .. hi.  NVFP4's E4M3
    scales always are (at most 4 significant bits, 2^-9 .. 448)."""
    if format != "mxfp4":
        return True
    a, b = WGMMA_FOLD_BYTES[dtype]
    return a <= lo and hi <= b


def gemm_reads_v2(gemm: str, block: int) -> bool:
    """Whether the block GEMM ``gemm`` at block size ``block`` reads the weights
    in layout v2 (DeviceWeights.w13_v2 ...) rather than the packed rows."""
    return gemm == "wgmma" and block in WGMMA_V2_MTILES


def gemm_cta_block(gemm: str, block: int) -> int:
    """Routes a packed fc1 / fc2 CTA multiplies: the block, or on the GEMMs that
    read packed rows a sub-block of at most PACKED_ROWS_MAX_BLOCK (block //
    gemm_cta_block CTAs a block, along the grid's y)."""
    if gemm_reads_v2(gemm, block) or block <= PACKED_ROWS_MAX_BLOCK:
        return block
    return max(b for b in BLOCK_SIZES if b <= PACKED_ROWS_MAX_BLOCK and block % b == 0)


def gemm_block_ctas(gemm: str, block: int) -> int:
    """CTAs a block of a packed fc1 / fc2 grid (along y): 1, or its sub-blocks."""
    return block // gemm_cta_block(gemm, block)


def gemm_max_regs(gemm: str, block: int, router_on_input: bool = False) -> int | None:
    """The register cap (PTX .maxnreg) of a packed fc1 / fc2 kernel: the v2
    GEMM's WGMMA_V2_MAX_REGS by block (at least WGMMA_V2_ROI_MIN_REGS for fc1
    with the router weight on its input: ``router_on_input``), MMA_MAX_REGS for
    mma's blocks of 128, None (ptxas decides) for the others."""
    if gemm_reads_v2(gemm, block):
        cap = WGMMA_V2_MAX_REGS[block]
        if router_on_input and cap is not None:
            cap = max(cap, WGMMA_V2_ROI_MIN_REGS)
        return cap
    return MMA_MAX_REGS if gemm == "mma" and block == 128 else None


def gemm_warpgroups(gemm: str, block: int) -> int:
    """Warpgroups (of GEMM_THREADS) a packed fc1 / fc2 CTA runs: each takes
    GEMM_TILE_ROWS weight rows, so tile_n and the CTA's threads scale with it."""
    return WGMMA_V2_WARPGROUPS[block] if gemm_reads_v2(gemm, block) else 1


def gemm_m_tiles(gemm: str, block: int) -> int:
    """Tiles of GEMM_TILE_ROWS weight rows a packed fc1 / fc2 CTA multiplies
    (its warpgroups x WGMMA_V2_MTILES): tile_n and the accumulator tile's rows
    a route scale with it."""
    mt = WGMMA_V2_MTILES[block] if gemm_reads_v2(gemm, block) else 1
    return gemm_warpgroups(gemm, block) * mt


# Words between two routes' rows in the wgmma v2 accumulator tile past its
# gemm_m_tiles x GEMM_TILE_ROWS: a warp's fragment store writes rows g (lanes' g
# = 0..7) of routes 2t (t = 0..3), so with a stride that is a multiple of 32
# words the four t land in one bank (ncu: 4-way conflicts on 75% of fc1's
# shared-store wavefronts); a stride of 4 mod 16 puts them 8 banks apart.  A
# multiple of 4, so a route's rows stay 16-byte aligned for the epilogues'
# ld.shared.v4.
ACC_PAD = 4


def acc_route_words(gemm: str, block: int) -> int:
    """fp32 words between consecutive routes in a packed fc1 / fc2 CTA's
    accumulator tile: its gemm_m_tiles x GEMM_TILE_ROWS rows, + ACC_PAD where the
    GEMM reads layout v2 (the packed-row GEMMs store at GEMM_TILE_ROWS)."""
    rows = GEMM_TILE_ROWS * gemm_m_tiles(gemm, block)
    return rows + ACC_PAD if gemm_reads_v2(gemm, block) else rows


def gemm_threads(gemm: str, block: int) -> int:
    """Threads a packed fc1 / fc2 CTA runs: GEMM_THREADS a warpgroup."""
    return GEMM_THREADS * gemm_warpgroups(gemm, block)


def pick_gemm(variant: str, cc: tuple[int, int] | None, format: str, dtype: str,
              scale_bytes: tuple[int, int] | None) -> tuple[str, ...]:
    """The block GEMM(s) a call on device ``cc`` may use: ``variant`` as
    env.gemm_variant() gives it; 'auto' means wgmma on WGMMA_CC when the weights'
    MXFP4 scale bytes ``scale_bytes`` (lo, hi) fold exactly (wgmma_scale_fold_ok),
    else mma.  ``scale_bytes`` None (weights not known yet, e.g. prewarm without
    them) returns every GEMM the weights could select, so prewarm covers them all.
    An explicit 'wgmma' on another device, or on weights it cannot fold, raises."""
    if variant not in ("auto",) + GEMMS:
        raise ValueError(f"gemm variant {variant!r}: expected 'auto' or one of {GEMMS}")
    if variant == "wgmma":
        if cc is not None and tuple(cc) != WGMMA_CC:
            raise ValueError(f"PYMOE_GEMM=wgmma needs an sm_{WGMMA_CC[0]}{WGMMA_CC[1]} GPU "
                             f"(Hopper); this device is sm_{cc[0]}{cc[1]}. Use "
                             "PYMOE_GEMM=auto or mma")
        if scale_bytes is not None and not wgmma_scale_fold_ok(format, dtype, *scale_bytes):
            a, b = WGMMA_FOLD_BYTES[dtype]
            raise ValueError(
                f"PYMOE_GEMM=wgmma folds MXFP4 scales into {dtype} weights, exact for "
                f"E8M0 bytes {a}..{b} (2^{a - 127}..2^{b - 127}); these weights' scale "
                f"bytes span {scale_bytes[0]}..{scale_bytes[1]}. Use PYMOE_GEMM=auto or mma")
    if variant != "auto":
        return (variant,)
    if cc is None or tuple(cc) != WGMMA_CC:
        return ("mma",)
    if scale_bytes is None:
        return ("wgmma",) if format != "mxfp4" else ("wgmma", "mma")
    return ("wgmma",) if wgmma_scale_fold_ok(format, dtype, *scale_bytes) else ("mma",)


def dequant_launch_key(which: str, *, format: str, activation: str, hidden_size: int,
                       intermediate_size: int) -> LaunchKey:
    """The debugging dequant kernel's key: it depends on the projection's shape and
    format only (float32 out, no activation dtype)."""
    if which not in ("w13", "w2"):
        raise ValueError(f"which={which!r}: expected 'w13' or 'w2'")
    return LaunchKey(f"dequant_{which}", format=format, activation=activation,
                     dtype="float32", hidden_size=hidden_size,
                     intermediate_size=intermediate_size, tile_n=DEQUANT_THREADS)
