"""Synthetic checkpoints in each layout, as {name: (array, safetensors dtype)} dicts,
plus independent decoders (ml_dtypes, float64) of what a layer should load as.

The dicts stay editable so bad-checkpoint tests can drop or mangle one tensor
before writing with ``pymoe.io.save_safetensors``.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from tests.oracle import dequant_mx, fp4_unpack, to_gate_up

GPT_OSS_PREFIX = "model.layers.{layer}.mlp.experts."


def bf16_bits(x) -> np.ndarray:
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)


def bf16_value(bits) -> np.ndarray:
    return np.asarray(bits, np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)


def e4m3_value(b) -> np.ndarray:
    return np.asarray(b, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def gpt_oss_layer(rng, E: int, H: int, I: int, layer: int = 0,
                  special_scales: bool = False) -> dict:
    """gpt-oss MXFP4 tensors of one layer: random FP4 bytes, E8M0 scales 2^-6..2^-4."""
    p = GPT_OSS_PREFIX.format(layer=layer)
    s13 = rng.integers(121, 124, (E, 2 * I, H // 32), dtype=np.uint8)
    s2 = rng.integers(121, 124, (E, H, I // 32), dtype=np.uint8)
    if special_scales:   # OCP edge bytes: 2^-127 (float32 subnormal results), NaN
        s13.flat[:3] = (0, 127, 255)
        s2.flat[-2:] = (0, 1)
    def fp4_bytes(*shape):
        return rng.integers(0, 256, shape, dtype=np.uint8)

    return {
        p + "gate_up_proj_blocks": (fp4_bytes(E, 2 * I, H // 32, 16), "U8"),
        p + "gate_up_proj_scales": (s13, "U8"),
        p + "gate_up_proj_bias": (bf16_bits(rng.standard_normal((E, 2 * I)) * 0.1), "BF16"),
        p + "down_proj_blocks": (fp4_bytes(E, H, I // 32, 16), "U8"),
        p + "down_proj_scales": (s2, "U8"),
        p + "down_proj_bias": (bf16_bits(rng.standard_normal((E, H)) * 0.1), "BF16"),
        f"model.layers.{layer}.mlp.router.weight": (
            bf16_bits(rng.standard_normal((E, H))), "BF16"),
    }


def gpt_oss_expected(t: dict, layer: int = 0) -> dict:
    """float64 w13 [E, 2I, H] (gate rows then up rows), w2, biases, decoded independently."""
    p = GPT_OSS_PREFIX.format(layer=layer)
    b13, s13 = t[p + "gate_up_proj_blocks"][0], t[p + "gate_up_proj_scales"][0]
    b2, s2 = t[p + "down_proj_blocks"][0], t[p + "down_proj_scales"][0]
    inter = b13.shape[1] // 2
    w13 = dequant_mx(b13.reshape(*b13.shape[:2], -1), s13)                 # interleaved rows
    return dict(w13=to_gate_up(w13, "interleaved", inter, 1),
                w2=dequant_mx(b2.reshape(*b2.shape[:2], -1), s2),
                b13=to_gate_up(bf16_value(t[p + "gate_up_proj_bias"][0]), "interleaved", inter, 1),
                b2=bf16_value(t[p + "down_proj_bias"][0]))


def nvfp4_expert_tensors(rng, E: int, H: int, I: int, *, projs=("w1", "w3", "w2"),
                         weight="weight", scale="weight_scale", glob="weight_scale_2",
                         globals_=None, pad=(0, 0), layer: int = 0,
                         prefix="model.layers.{layer}.mlp.experts.", input_scale=False) -> dict:
    """Per-expert NVFP4 tensors (ModelOpt names by default).

    globals_: float32 [E, 3] stored as is (gate, up, down); pad: (rows, groups)
    of padding appended to every weight_scale grid (filled with NaN bytes 0x7F,
    which must never be read).
    """
    p = prefix.format(layer=layer)
    if globals_ is None:
        globals_ = rng.uniform(0.5, 2.0, (E, 3)).astype(np.float32)
    out = {}
    for e in range(E):
        for j, (proj, (n, k)) in enumerate(zip(projs, ((I, H), (I, H), (H, I)))):
            q = f"{p}{e}.{proj}."
            s = np.full((n + pad[0], k // 16 + pad[1]), 0x7F, np.uint8)
            s[:n, :k // 16] = rng.integers(0x28, 0x48, (n, k // 16), dtype=np.uint8)
            out[q + weight] = (rng.integers(0, 256, (n, k // 2), dtype=np.uint8), "U8")
            out[q + scale] = (s, "F8_E4M3")
            out[q + glob] = (np.float32(globals_[e, j]).reshape(()), "F32")
            if input_scale:   # NVFP4 (W4A4) carries it; W4A16 does not; pymoe ignores it
                out[q + "input_scale"] = (np.float32(1.0).reshape(()), "F32")
    return out


def nvfp4_expected(t: dict, E: int, H: int, I: int, *, projs=("w1", "w3", "w2"),
                   weight="weight", scale="weight_scale", glob="weight_scale_2",
                   reciprocal=False, layer: int = 0,
                   prefix="model.layers.{layer}.mlp.experts.") -> dict:
    """float64 w13 [E, 2I, H] (gate, up), w2 [E, H, I]: e2m1 * e4m3 * g (or / g)."""
    p = prefix.format(layer=layer)

    def dec(e, proj, n, k):
        q = f"{p}{e}.{proj}."
        s = e4m3_value(t[q + scale][0][:n, :k // 16])           # logical part of the grid
        v = fp4_unpack(t[q + weight][0]) * np.repeat(s, 16, -1)
        g = float(t[q + glob][0])
        return v / g if reciprocal else v * g

    w13 = np.stack([np.concatenate([dec(e, projs[0], I, H), dec(e, projs[1], I, H)])
                    for e in range(E)])
    w2 = np.stack([dec(e, projs[2], H, I) for e in range(E)])
    return dict(w13=w13, w2=w2)
