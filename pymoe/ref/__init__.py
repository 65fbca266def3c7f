"""NumPy reference interpreter: one module per kernel, the numerics of record.

Twins: ``pymoe.ref.<m>.<f>`` and ``pymoe.cuda.<m>.<f>`` share module names,
function names and signatures (route_pack, fc1, fc2 + combine, decode_fc1 /
decode_fc2, dequant); ``expert`` and ``routes`` hold the math they share.

``run(binding)`` executes a Binding made by ``Plan.bind`` over a NumPy arena,
writing every intermediate buffer the GPU twin writes, so a differential test can
compare them all.
"""
from __future__ import annotations

import numpy as np

from . import decode, dequant, fc1, fc2, route_pack

__all__ = ["run", "route_pack", "fc1", "fc2", "decode", "dequant"]


def run(b, *, stream=None):
    """Execute binding ``b``; returns ``out`` (allocated when the binding has
    none).  ``stream``: accepted for the twins' one signature, ignored."""
    c, ew, v = b.caps, b.experts, b.views
    out = b.out
    if out is None:
        out = np.empty(b.x.shape, b.x.dtype)
    if not b.num_tokens:
        return out
    y = out.view(np.uint16) if c.dtype == "bfloat16" else out
    x = b.x.view(np.uint16) if c.dtype == "bfloat16" else b.x
    # NaN / inf inputs propagate as IEEE arithmetic says (docs/design.md section
    # 1); NumPy's warnings about them are not news to the caller
    with np.errstate(invalid="ignore", over="ignore", divide="ignore", under="ignore"):
        _run(b, c, ew, v, x, y)
    return out


def _run(b, c, ew, v, x, y) -> None:
    if b.regime == "decode":
        k1, k2, kc = b.keys
        decode.decode_fc1(x, b.topk_ids, b.expert_map, ew, b.topk_weights, v["intermediate"],
                          key=k1)
        decode.decode_fc2(v["intermediate"], b.topk_ids, b.expert_map, ew, b.topk_weights,
                          v["route_out"], key=k2)
        fc2.combine(v["route_out"], b.topk_ids, b.expert_map, ew.num_experts, y, key=kc)
        return
    kp, k1, k2, kc = b.keys
    routes = None
    if kp is None:                  # fc1 packs its own blocks (geometry.self_packs)
        routes = (b.topk_ids, b.expert_map, v["expert_offsets"], v["packed_route_count"])
    else:
        route_pack.route_pack(b.topk_ids, b.expert_map, ew.num_experts, b.block,
                              v["expert_offsets"], v["packed_route_indices"],
                              v["block_expert_ids"], v["packed_route_count"], key=kp)
    fc1.fc1(x, ew, b.topk_weights, v["packed_route_indices"], v["block_expert_ids"],
            v["intermediate"], top_k=c.top_k, key=k1, routes=routes)
    fc2.fc2(v["intermediate"], ew, b.topk_weights, v["packed_route_indices"],
            v["block_expert_ids"], v["route_out"], key=k2)
    fc2.combine(v["route_out"], b.topk_ids, b.expert_map, ew.num_experts, y, key=kc)
