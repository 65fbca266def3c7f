"""Load one gpt-oss MoE layer from a safetensors checkpoint and run it.

Writes a small synthetic checkpoint in the Hugging Face gpt-oss layout (so it
runs anywhere, no download), loads layer 1 with ``pymoe.io``, runs the layer on
the best backend (cuda when available, else the NumPy reference) and on the
reference, and checks both against a float64 evaluation written out below.

    python examples/load_gpt_oss_layer.py          # exits 1 on a mismatch

Per layer ``model.layers.{i}.mlp.``::

    experts.gate_up_proj_blocks  U8   [E, 2I, H/32, 16]  FP4 pairs, rows g,u,g,u,...
    experts.gate_up_proj_scales  U8   [E, 2I, H/32]      E8M0: 2^(byte - 127)
    experts.gate_up_proj_bias    BF16 [E, 2I]
    experts.down_proj_blocks     U8   [E, H, I/32, 16]
    experts.down_proj_scales     U8   [E, H, I/32]
    experts.down_proj_bias       BF16 [E, H]
    router.weight                BF16 [E, H]   (+ router.bias)
"""
from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

import pymoe
import pymoe.io
from pymoe.testing import compare

E, H, I, K, T, LAYERS = 4, 64, 64, 2, 16, 2     # experts, hidden, intermediate, top-k, tokens
TOL = 1e-2                                       # rel. L2, the bf16 contract


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits (round to nearest even; no NaN here)."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def write_checkpoint(path: str, rng: np.random.Generator) -> dict:
    """Random FP4 bytes, E8M0 scales 2^-6..2^-4, bf16 biases and router; returns the tensors."""
    def u8(lo, hi, *shape):
        return rng.integers(lo, hi, shape, dtype=np.uint8)

    tensors = {}
    for layer in range(LAYERS):
        p = f"model.layers.{layer}.mlp."
        tensors.update({
            p + "experts.gate_up_proj_blocks": (u8(0, 256, E, 2 * I, H // 32, 16), "U8"),
            p + "experts.gate_up_proj_scales": (u8(121, 124, E, 2 * I, H // 32), "U8"),
            p + "experts.gate_up_proj_bias": (bf16_bits(rng.standard_normal((E, 2 * I)) * .1),
                                              "BF16"),
            p + "experts.down_proj_blocks": (u8(0, 256, E, H, I // 32, 16), "U8"),
            p + "experts.down_proj_scales": (u8(121, 124, E, H, I // 32), "U8"),
            p + "experts.down_proj_bias": (bf16_bits(rng.standard_normal((E, H)) * .1), "BF16"),
            p + "router.weight": (bf16_bits(rng.standard_normal((E, H)) / np.sqrt(H)), "BF16"),
            p + "router.bias": (bf16_bits(rng.standard_normal(E) * 0.1), "BF16"),
        })
    pymoe.io.save_safetensors(path, tensors)
    return tensors


# ----------------------------------------------------------------------------- float64 evaluation
# Independent of pymoe.formats: the FP4 table and the E8M0 rule written out again.
FP4 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def decode_mxfp4(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """[E, N, K/32, 16] bytes, [E, N, K/32] -> float64 [E, N, K]."""
    vals = np.stack([FP4[blocks & 0xF], FP4[blocks >> 4]], axis=-1)       # [E, N, G, 16, 2]
    vals = vals.reshape(*blocks.shape[:3], 32) * np.ldexp(1.0, scales.astype(int) - 127)[..., None]
    return vals.reshape(*blocks.shape[:2], -1)


def gpt_oss_layer64(x, topk_weights, topk_ids, t: dict, layer: int) -> np.ndarray:
    """gpt-oss model.py's MLPBlock in float64: interleaved gate/up, clamp 7, alpha 1.702."""
    p = f"model.layers.{layer}.mlp.experts."
    w13 = decode_mxfp4(t[p + "gate_up_proj_blocks"][0], t[p + "gate_up_proj_scales"][0])
    w2 = decode_mxfp4(t[p + "down_proj_blocks"][0], t[p + "down_proj_scales"][0])
    b13, b2 = bf16_value(t[p + "gate_up_proj_bias"][0]), bf16_value(t[p + "down_proj_bias"][0])
    y = np.zeros((x.shape[0], H))
    for ti in range(x.shape[0]):
        for j in range(topk_ids.shape[1]):
            e = topk_ids[ti, j]
            h = w13[e] @ x[ti] + b13[e]                                    # [2I]
            glu, lin = np.minimum(h[0::2], 7.0), np.clip(h[1::2], -7.0, 7.0)
            a = glu / (1 + np.exp(-1.702 * glu)) * (lin + 1)
            y[ti] += topk_weights[ti, j] * (w2[e] @ a + b2[e])
    return y


def main() -> int:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.safetensors")
        t = write_checkpoint(path, rng)
        layer = 1
        ew = pymoe.io.load_moe_layer(path, layer, layout="gpt-oss")
        print(ew)
        x = bf16_bits(rng.standard_normal((T, H)) * 2)                   # [T, H] bf16 bits
        xf = bf16_value(x)
        ck = pymoe.io.open_checkpoint(path)
        router = ck.get_float32(f"model.layers.{layer}.mlp.router.weight")     # [E, H]
        rbias = ck.get_float32(f"model.layers.{layer}.mlp.router.bias")        # [E]
        logits = xf.astype(np.float32) @ router.T + rbias                      # [T, E]
        topk_weights, topk_ids = pymoe.route_topk(logits, k=K)                 # [T, k]
        y64 = gpt_oss_layer64(xf, topk_weights.astype(np.float64), topk_ids, t, layer)
        results = {}
        from pymoe import cuda
        best = "cuda" if cuda.is_available() else "ref"
        for backend in ("auto", "ref"):
            y = pymoe.fused_moe(x, ew, topk_weights, topk_ids, backend=backend)
            y = y.get() if hasattr(y, "get") else np.asarray(y)
            results[backend if backend == "ref" else f"auto ({best})"] = bf16_value(
                y.view(np.uint16))
    names = list(results)
    rows = [(a, "float64", compare(results[a], y64)) for a in names]
    rows.append((names[0], "ref", compare(results[names[0]], results["ref"])))
    print(f"{'backend':<12} {'vs':<8} {'rel_l2':>10} {'max_abs':>10} {'cosine':>10}")
    ok = True
    for a, b, r in rows:
        good = r["rel_l2"] < TOL
        ok &= good
        print(f"{a:<12} {b:<8} {r['rel_l2']:10.2e} {r['max_abs']:10.2e} {r['cosine']:10.6f}"
              f"  {'OK' if good else 'MISMATCH'}")
    print("OK" if ok else f"MISMATCH: rel_l2 >= {TOL}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
