"""Checkpoint import: safetensors without torch, gpt-oss / ModelOpt / compressed-tensors.

Lifecycle: open a checkpoint (one file, a sharded index, or a directory), let a
``LayoutNames`` preset find one layer's expert tensors, and prepare them once::

    import pymoe, pymoe.io
    ew = pymoe.io.load_moe_layer("gpt-oss-20b/", 3)                   # layout="auto"
    layers = pymoe.io.load_model_layers("gpt-oss-20b/")               # tqdm bar
    w, ids = pymoe.route_topk(router_logits, k=4)
    y = pymoe.fused_moe(x, layers[3], w, ids, backend="auto")

Reading needs NumPy only: BF16 comes back as uint16 bits, FP8 as uint8 bytes,
and every tensor is a zero-copy view of an ``np.memmap``.  ``save_safetensors``
writes any of those dtypes from raw bits (tests, synthetic checkpoints).
"""
from .checkpoint import (DTYPES, INDEX_NAME, Checkpoint, SafetensorsFile, TensorInfo,
                         open_checkpoint, save_safetensors, save_sharded)
from .layouts import (COMPRESSED_TENSORS, GPT_OSS, LAYOUTS, MODELOPT, LayoutNames,
                      detect_layout, load_model_layers, load_moe_layer)

__all__ = [
    "COMPRESSED_TENSORS", "DTYPES", "GPT_OSS", "INDEX_NAME", "LAYOUTS", "MODELOPT",
    "Checkpoint", "LayoutNames", "SafetensorsFile", "TensorInfo", "detect_layout",
    "load_model_layers", "load_moe_layer", "open_checkpoint", "save_safetensors",
    "save_sharded",
]
