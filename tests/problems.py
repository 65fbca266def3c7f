"""MoE problems as data: a Case draws everything from its seed, so a failure
names a reproducible problem.  Shared by the ref, cuda and simulator tests."""
from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

import pymoe

NP_DTYPE = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


@dataclass(frozen=True)
class Case:
    T: int
    H: int
    I: int
    E: int
    k: int
    dtype: str = "bfloat16"
    format: str = "mxfp4"
    activation: str = "silu"
    layout: str = "gate_up"
    bias: bool = False
    on_input: bool = False
    invalid: tuple = ()          # ids written into some routes (-1, E, 99 ...)
    one_expert: bool = False     # every route to expert 0
    empty_expert: bool = False   # expert E-1 receives nothing
    ep: bool = False             # expert parallel: global 2E ids, map half to -1
    all_invalid: bool = False    # every route invalid: y must be exactly 0
    packed: bool = False         # the packed regime at every T (Caps.decode_max_tokens 0)
    seed: int = 0
    why: str = field(default="", compare=False)

    def __str__(self):
        return (f"T{self.T}-H{self.H}-I{self.I}-E{self.E}-k{self.k}-{self.dtype}-"
                f"{self.format}-{self.activation}-{self.layout}"
                + ("-bias" if self.bias else "") + ("-oninput" if self.on_input else "")
                + (f"-inv{list(self.invalid)}" if self.invalid else "")
                + ("-one" if self.one_expert else "") + ("-empty" if self.empty_expert else "")
                + ("-ep" if self.ep else "") + ("-allinv" if self.all_invalid else "")
                + ("-packed" if self.packed else "") + f"-s{self.seed}")


@dataclass
class Problem:
    case: Case
    x: np.ndarray                  # [T, H] ml_dtypes bf16 / fp16
    topk_weights: np.ndarray       # [T, k] f32
    topk_ids: np.ndarray           # [T, k] i32
    experts: "pymoe.ExpertWeights"
    raw: dict                      # caller-layout tensors for the oracle
    expert_map: np.ndarray | None


def make_problem(c: Case) -> Problem:
    rng = np.random.default_rng(c.seed)
    gated = c.activation != "relu2"
    f = 2 * c.I if gated else c.I
    if c.E * (f * c.H + c.H * c.I) > BIG:
        return _random_packed_problem(c, rng, f)
    # weights ~ N(0, 1/sqrt(K)) keeps activations O(1) through both projections
    w13 = (rng.standard_normal((c.E, f, c.H)) / np.sqrt(c.H)).astype(np.float32)
    w2 = (rng.standard_normal((c.E, c.H, c.I)) / np.sqrt(c.I)).astype(np.float32)
    b13 = rng.standard_normal((c.E, f)).astype(np.float32) * 0.1 if c.bias else None
    b2 = rng.standard_normal((c.E, c.H)).astype(np.float32) * 0.1 if c.bias else None
    # quantize in the caller's layout, hand pymoe packed bytes (the checkpoint path)
    if c.format == "mxfp4":
        q13, s13 = pymoe.quantize_mxfp4(w13)
        q2, s2 = pymoe.quantize_mxfp4(w2)
        g13 = g2 = None
    else:
        q13, s13, g13 = pymoe.quantize_nvfp4(w13)
        q2, s2, g2 = pymoe.quantize_nvfp4(w2)
    ew = pymoe.prepare_weights(q13, q2, format=c.format, activation=c.activation,
                               w13_layout=c.layout, w13_scales=s13, w2_scales=s2,
                               w13_global=g13, w2_global=g2, w13_bias=b13, w2_bias=b2)
    x, w, ids, emap = _inputs(c, rng)
    raw = dict(q13=q13, s13=s13, g13=g13, q2=q2, s2=s2, g2=g2, b13=b13, b2=b2)
    return Problem(c, x, w, ids, ew, raw, emap)


def _inputs(c: Case, rng):
    x = rng.standard_normal((c.T, c.H)).astype(NP_DTYPE[c.dtype])
    n_ids = 2 * c.E if c.ep else c.E
    if c.T:
        ids = np.argsort(rng.random((c.T, n_ids)), axis=1)[:, :c.k].astype(np.int32)
    else:
        ids = np.zeros((0, c.k), np.int32)
    if c.one_expert:
        ids[:, 0] = 0
        if c.k > 1:   # keep ids distinct per token but expert 0 takes every token
            ids[:, 1:] = np.argsort(rng.random((c.T, n_ids - 1)), axis=1)[:, :c.k - 1] + 1
    if c.empty_expert and c.E > c.k:
        ids = np.where(ids == c.E - 1, (ids + 1) % (c.E - 1) if c.E > 1 else ids, ids)
        ids = ids.astype(np.int32)
    if c.invalid and ids.size:
        flat = ids.reshape(-1)
        pos = rng.choice(flat.size, size=min(flat.size, 3 * len(c.invalid)), replace=False)
        for i, p in enumerate(pos):
            flat[p] = c.invalid[i % len(c.invalid)]
    if c.all_invalid:
        ids[:] = -1
    w = rng.random((c.T, c.k)).astype(np.float32) + np.float32(0.05)
    w /= w.sum(axis=1, keepdims=True)
    emap = None
    if c.ep:
        emap = np.full(2 * c.E, -1, np.int32)
        glob = rng.permutation(2 * c.E)[:c.E]
        emap[glob] = np.arange(c.E, dtype=np.int32)
    return x, w, ids, emap


# Problems larger than this many weights skip float quantization: random packed
# bytes and scales (the GPU tests compare against the reference, not the oracle).
BIG = 4_000_000


def _random_packed_problem(c: Case, rng, f: int) -> Problem:
    def packed(n, k):
        q = rng.integers(0, 256, (c.E, n, k // 2), dtype=np.uint8)
        if c.format == "mxfp4":
            b = int(round(127 - np.log2(3 * np.sqrt(k))))
            return q, rng.integers(b - 1, b + 1, (c.E, n, -(-k // 32)), dtype=np.uint8), None
        g = np.full(c.E, 1 / (3 * np.sqrt(k)), np.float32)
        return q, rng.integers(0x30, 0x38, (c.E, n, k // 16), dtype=np.uint8), g
    q13, s13, g13 = packed(f, c.H)
    q2, s2, g2 = packed(c.H, c.I)
    b13 = rng.standard_normal((c.E, f)).astype(np.float32) * 0.1 if c.bias else None
    b2 = rng.standard_normal((c.E, c.H)).astype(np.float32) * 0.1 if c.bias else None
    ew = pymoe.prepare_weights(q13, q2, format=c.format, activation=c.activation,
                               w13_layout=c.layout, w13_scales=s13, w2_scales=s2,
                               w13_global=g13, w2_global=g2, w13_bias=b13, w2_bias=b2)
    x, w, ids, emap = _inputs(c, rng)
    return Problem(c, x, w, ids, ew, None, emap)


def oracle(p: Problem, round_intermediate: bool = True) -> np.ndarray:
    """float64 y from the caller-layout packed tensors, decoded with ml_dtypes."""
    from tests.oracle import dequant_mx, dequant_nv, moe_forward, to_gate_up
    c, r = p.case, p.raw
    if c.format == "mxfp4":
        w13, w2 = dequant_mx(r["q13"], r["s13"]), dequant_mx(r["q2"], r["s2"])
    else:
        w13, w2 = dequant_nv(r["q13"], r["s13"], r["g13"]), dequant_nv(r["q2"], r["s2"], r["g2"])
    gated = c.activation != "relu2"
    w13 = to_gate_up(w13, c.layout if gated else "gate_up", c.I, 1)
    b13 = to_gate_up(r["b13"], c.layout if gated else "gate_up", c.I, 1)
    lim = p.experts.swiglu_limit
    return moe_forward(p.x.astype(np.float64), w13, w2, p.topk_weights.astype(np.float64),
                       p.topk_ids, activation=c.activation, b13=b13, b2=r["b2"], limit=lim,
                       alpha=p.experts.swiglu_alpha, on_input=c.on_input,
                       expert_map=p.expert_map,
                       round_dtype=NP_DTYPE[c.dtype] if round_intermediate else None)
