"""NumPy reference interpreter: one file per kernel, the numerics of record.

``run(binding)`` executes a Binding made by ``Plan.bind`` over a NumPy arena,
writing every intermediate buffer the GPU twin writes, so a differential test can
compare them all.
"""
from __future__ import annotations

import numpy as np

from .decode import decode_fc1, decode_fc2
from .dequant import dequant
from .fc1 import fc1
from .fc2 import combine, fc2
from .route_pack import route_pack

__all__ = ["run", "route_pack", "fc1", "fc2", "combine", "decode_fc1", "decode_fc2",
           "dequant"]


def run(b, out) -> None:
    """Execute binding ``b`` into ``out`` (storage view [T, H])."""
    c, ew, v = b.caps, b.experts, b.views
    x = b.x.view(np.uint16) if c.dtype == "bfloat16" else b.x
    on_input = c.apply_router_weight_on_input
    if b.regime == "decode":
        decode_fc1(x, b.topk_ids, b.expert_map, ew, b.topk_weights, v["intermediate"],
                   dtype=c.dtype, apply_router_weight_on_input=on_input)
        decode_fc2(v["intermediate"], b.topk_ids, b.expert_map, ew, b.topk_weights, out,
                   dtype=c.dtype, apply_router_weight_on_input=on_input)
        return
    route_pack(b.topk_ids, b.expert_map, ew.num_experts, b.block, v["expert_offsets"],
               v["packed_route_indices"], v["block_expert_ids"], v["packed_route_count"])
    fc1(x, ew, b.topk_weights, v["packed_route_indices"], v["expert_offsets"],
        v["intermediate"], top_k=c.top_k, dtype=c.dtype, apply_router_weight_on_input=on_input)
    fc2(v["intermediate"], ew, b.topk_weights, v["packed_route_indices"],
        v["expert_offsets"], v["route_out"], dtype=c.dtype,
        apply_router_weight_on_input=on_input)
    combine(v["route_out"], b.topk_ids, b.expert_map, ew.num_experts, out, dtype=c.dtype)
