"""Named MoE layer shapes (one routed-expert layer of each model)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Preset", "PRESETS"]


@dataclass(frozen=True, kw_only=True)
class Preset:
    name: str
    num_experts: int
    top_k: int
    hidden_size: int
    intermediate_size: int
    activation: str = "silu"
    w13_layout: str = "gate_up"
    bias: bool = False
    format: str = "mxfp4"


PRESETS = {p.name: p for p in [
    Preset(name="tiny", num_experts=8, top_k=2, hidden_size=256, intermediate_size=128),
    Preset(name="qwen3-30b-a3b", num_experts=128, top_k=8, hidden_size=2048,
           intermediate_size=768),
    Preset(name="gpt-oss-20b", num_experts=32, top_k=4, hidden_size=2880,
           intermediate_size=2880, activation="swigluoai", w13_layout="interleaved",
           bias=True),
    Preset(name="gpt-oss-120b", num_experts=128, top_k=4, hidden_size=2880,
           intermediate_size=2880, activation="swigluoai", w13_layout="interleaved",
           bias=True),
    Preset(name="deepseek-v3", num_experts=256, top_k=8, hidden_size=7168,
           intermediate_size=2048),
    Preset(name="mixtral-8x7b", num_experts=8, top_k=2, hidden_size=4096,
           intermediate_size=14336),
]}
