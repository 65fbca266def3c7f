"""pymoe: a W4A16 mixture-of-experts layer in pure Python.

FP4 (E2M1) expert weights with MXFP4 (E8M0 per 32) or NVFP4 (E4M3 per 16 + fp32
global) scales, bf16/fp16 activations.  Two twins of every kernel: a NumPy
reference interpreter (``pymoe.ref``) and Numba CUDA kernels (``pymoe.cuda``).

    import numpy as np, pymoe
    ew = pymoe.prepare_weights(w13, w2, format="mxfp4", activation="silu")
    w, ids = pymoe.route_topk(router_logits, k=4)
    y = pymoe.fused_moe(x, ew, w, ids)                 # backend="ref" | "cuda" | "auto"

``import pymoe`` needs NumPy only; numba and cupy load inside ``pymoe.cuda``.
"""
from . import cuda, ep  # light: numba and cupy load on first use inside cuda
from .formats import (dequantize_mxfp4, dequantize_nvfp4, quantize_mxfp4,
                      quantize_nvfp4)
from .moe import fused_moe, route_topk, run
from .plan import Binding, Caps, Plan, plan, required_nbytes, validate_expert_map
from .weights import ExpertWeights, NaNScaleWarning, prepare_weights

__version__ = "0.1.0"

__all__ = [
    "Binding", "Caps", "ExpertWeights", "NaNScaleWarning", "Plan", "dequantize_mxfp4",
    "dequantize_nvfp4",
    "fused_moe", "plan", "prepare_weights", "quantize_mxfp4", "quantize_nvfp4",
    "required_nbytes", "route_topk", "run", "validate_expert_map", "__version__",
]
