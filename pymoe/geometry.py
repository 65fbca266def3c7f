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

__all__ = [
    "BLOCK_SIZES", "DECODE_MAX_TOKENS", "REGIMES", "FORMATS", "ACTIVATIONS",
    "DTYPES", "W13_LAYOUTS", "ALIGN", "regime_for", "select_block_size",
    "block_size_ranges", "reachable_block_sizes", "packed_slots", "num_blocks",
    "token_buckets", "scratch_shapes", "TensorShape", "LaunchKey", "launch_keys",
    "dequant_launch_key",
    "is_gated", "fc1_rows", "gate_rows", "scale_group", "num_scale_groups", "K_ALIGN",
    "padded_k", "GEMMS", "SWIGLUOAI_ALPHA", "SWIGLUOAI_LIMIT", "swiglu_params",
    "GEMM_THREADS", "GEMM_TILE_ROWS", "fc1_tile_n", "FC2_TILE_N", "COMBINE_TILE_N",
    "DECODE_THREADS", "DECODE_ROWS", "DECODE_LANES", "DECODE_FC1_TILE_N",
    "DECODE_FC2_TILE_N", "DECODE_KSTAGE", "ROUTE_PACK_THREADS", "ROUTE_PACK_MAX_EXPERTS",
    "DEQUANT_THREADS",
]

# Orthogonal choices, each a small string enum.
FORMATS = ("mxfp4", "nvfp4")
ACTIVATIONS = ("silu", "swigluoai", "relu2")
DTYPES = ("bfloat16", "float16")
W13_LAYOUTS = ("gate_up", "up_gate", "interleaved")
REGIMES = ("decode", "packed")

# Routes per block of the packed regime.  8 is the n of an m16n8k16 mma (tokens
# on the N side); 64 keeps a prefill tile's weight reuse high.
BLOCK_SIZES = (8, 16, 32, 64)

# T <= DECODE_MAX_TOKENS runs the direct decode regime: every route reads its
# expert straight from topk_ids, no route packing.  Measured on the H200
# (benchmarks/regime_cut.py, docs/performance.md): with the tensor-core block
# GEMM the packed regime is faster from T = 2 (gpt-oss-20b: 0.199 vs 0.278 ms;
# at T = 8 0.372 vs 0.997 ms); decode wins only at T = 1 (0.156 vs 0.176 ms).
DECODE_MAX_TOKENS = 1

# Arena offsets are aligned to 128 bytes: a full L2 line / 8 x 16-byte vector
# loads, and more than the 16 bytes any kernel's vector load needs.
ALIGN = 128

# Prepared weight rows are padded along K to a multiple of K_ALIGN values: 16
# bytes of FP4, one MXFP4 group, two NVFP4 groups, one 16-byte load.
K_ALIGN = 32

# The packed regime's block GEMM (fc1, fc2) on a GPU: 'mma' (tensor cores,
# mma.sync m16n8k16) or 'fma' (CUDA cores; the only one the simulator can run,
# it has no inline PTX).  Chosen once per key (LaunchKey.gemm, from PYMOE_GEMM).
GEMMS = ("mma", "fma")

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
COMBINE_TILE_N = 128                 # combine: output columns (= threads) per CTA
# Decode GEMV (decode_fc1/decode_fc2): DECODE_ROWS weight rows x DECODE_LANES
# K-lanes per pass.  Small column tiles give many CTAs: a T=1 decode_fc2 of
# H=2880 has H/8 = 360 CTAs for 132 SMs (90 at 32).  docs/performance.md.
DECODE_THREADS = 128
DECODE_ROWS, DECODE_LANES = 8, 16
DECODE_FC1_TILE_N = 8                # intermediate columns per CTA (16 rows gated)
DECODE_FC2_TILE_N = 8                # output columns per CTA
DECODE_KSTAGE = 8192                 # activations staged per pass: 32 KiB of fp32
# Route packing: one CTA; expert counters and cursors live in shared memory.
ROUTE_PACK_THREADS = 256
ROUTE_PACK_MAX_EXPERTS = 1024
DEQUANT_THREADS = 128                # dequant: K values (threads) per CTA
assert GEMM_TILE_ROWS == 16 * (GEMM_THREADS // 32), "one 16-row mma tile per warp"
assert DECODE_ROWS * DECODE_LANES == DECODE_THREADS


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


def regime_for(num_tokens: int) -> str:
    """'decode' (direct, no route packing) for small T, else 'packed'."""
    return "decode" if num_tokens <= DECODE_MAX_TOKENS else "packed"


def select_block_size(num_tokens: int, top_k: int, num_route_experts: int,
                      pin: int | None = None) -> int:
    """Block size B for T tokens: the smallest allowed B holding the mean routes
    per expert ceil(T*k/Eg), capped at the largest.  Monotone non-decreasing in
    T, which is what lets ``block_size_ranges`` work in closed form.  A pin wins.
    """
    if pin is not None:
        return pin
    mean = -(-(num_tokens * top_k) // num_route_experts)
    for b in BLOCK_SIZES:
        if b >= mean:
            return b
    return BLOCK_SIZES[-1]


def block_size_ranges(max_tokens: int, top_k: int, num_route_experts: int,
                      pin: int | None = None, lo: int = DECODE_MAX_TOKENS + 1
                      ) -> list[tuple[int, int, int]]:
    """[(B, t_lo, t_hi)] covering the packed-regime T in lo..max_tokens.

    ceil(T*k/Eg) <= B  <=>  T <= B*Eg // k, so B's range ends there.
    """
    if max_tokens < lo:
        return []
    if pin is not None:
        return [(pin, lo, max_tokens)]
    out = []
    t = lo
    for b in BLOCK_SIZES:
        hi = max_tokens if b == BLOCK_SIZES[-1] else min(
            max_tokens, (b * num_route_experts) // top_k)
        if hi >= t:
            out.append((b, t, hi))
            t = hi + 1
        if t > max_tokens:
            break
    return out


def reachable_block_sizes(max_tokens: int, top_k: int, num_route_experts: int,
                          pin: int | None = None) -> tuple[int, ...]:
    """Block sizes ``select_block_size`` returns for the packed T in 1..max_tokens."""
    return tuple(b for b, _, _ in block_size_ranges(
        max_tokens, top_k, num_route_experts, pin))


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
                  pin: int | None = None) -> list[tuple[str, int | None, int, int]]:
    """[(regime, B or None, t_lo, t_hi)]: every T in 1..max_tokens in exactly one
    bucket; a bucket's scratch is largest at its t_hi (capacities grow with T)."""
    out: list[tuple[str, int | None, int, int]] = []
    if max_tokens >= 1:
        out.append(("decode", None, 1, min(max_tokens, DECODE_MAX_TOKENS)))
    for b, lo, hi in block_size_ranges(max_tokens, top_k, num_route_experts, pin):
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
    packed:  expert_offsets[E+1]          exclusive prefix of padded counts
             packed_route_count[1]        == expert_offsets[E]
             packed_route_indices[S]      slot -> flat route t*k+j, sentinel R
             block_expert_ids[S/B]        block -> expert, -1 past the total
             intermediate[S, I]           slot -> activation (0 in padding)
             route_out[R, H] fp32         route -> weight * (W2 @ a + b2)
    """
    r = num_tokens * top_k
    if regime == "decode":
        return [TensorShape("intermediate", dtype, (r, intermediate_size))]
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
    gemm: the block GEMM of fc1 / fc2 ('mma' or 'fma', GEMMS), '' for the rest
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


def launch_keys(regime: str, block: int | None, *, format: str, activation: str,
                dtype: str, hidden_size: int, intermediate_size: int,
                has_bias: bool, router_on_input: bool,
                swiglu_limit: float | None, swiglu_alpha: float | None, gemm: str
                ) -> tuple[LaunchKey, ...]:
    """The launches ``run`` makes for one call, in order.  ``gemm`` (one of
    GEMMS) goes into the packed fc1 / fc2 keys: it changes their argument types."""
    if gemm not in GEMMS:
        raise ValueError(f"gemm={gemm!r}: expected one of {GEMMS}")
    common = dict(format=format, activation=activation, dtype=dtype,
                  hidden_size=hidden_size, intermediate_size=intermediate_size,
                  has_bias=has_bias, router_on_input=router_on_input,
                  swiglu_limit=swiglu_limit, swiglu_alpha=swiglu_alpha)
    if regime == "decode":
        return (LaunchKey("decode_fc1", tile_n=DECODE_FC1_TILE_N, **common),
                LaunchKey("decode_fc2", tile_n=DECODE_FC2_TILE_N, **common))
    b = int(block)
    # route_pack depends on nothing of the layer, combine on dtype and H only: their
    # keys say so, so one compiled kernel serves every layer that shares them
    return (LaunchKey("route_pack", format="", activation="", dtype="", hidden_size=0,
                      intermediate_size=0),
            LaunchKey("fc1", block=b, tile_n=fc1_tile_n(activation), gemm=gemm, **common),
            LaunchKey("fc2", block=b, tile_n=FC2_TILE_N, gemm=gemm, **common),
            LaunchKey("combine", format="", activation="", dtype=dtype,
                      hidden_size=hidden_size, intermediate_size=0, tile_n=COMBINE_TILE_N))


def dequant_launch_key(which: str, *, format: str, activation: str, hidden_size: int,
                       intermediate_size: int) -> LaunchKey:
    """The debugging dequant kernel's key: it depends on the projection's shape and
    format only (float32 out, no activation dtype)."""
    if which not in ("w13", "w2"):
        raise ValueError(f"which={which!r}: expected 'w13' or 'w2'")
    return LaunchKey(f"dequant_{which}", format=format, activation=activation,
                     dtype="float32", hidden_size=hidden_size,
                     intermediate_size=intermediate_size, tile_n=DEQUANT_THREADS)
