"""Dequant (CUDA twin of pymoe/ref/dequant.py): prepared FP4 weights -> float32
on the device, for debugging and tests.  The kernel is
pymoe/cuda/kernels/dequant.py.
"""
from __future__ import annotations

import numpy as np

from ..geometry import dequant_launch_key, fc1_rows, gate_rows
from .device_weights import to_device
from .kernels.intrinsics import SIM
from .launch import launch_stream, resolve

__all__ = ["dequant"]


def dequant(experts, which: str, expert: int | None = None, *,
            apply_global: bool = True, stream=None):
    """float32 [E, N, K] (or [N, K] for one expert) as a CuPy array (a NumPy
    array under the simulator); same contract as pymoe.ref.dequant.dequant."""
    if which not in ("w13", "w2"):
        raise ValueError(f"which={which!r}: expected 'w13' or 'w2'")
    if expert is not None and not 0 <= int(expert) < experts.num_experts:
        raise ValueError(f"expert={expert}: expected 0 <= expert < {experts.num_experts}")
    if not getattr(experts, "has_packed_rows", True):
        raise ValueError("experts: uploaded with packed_rows=False; dequant reads the "
                         "packed rows: pass the host weights or a full upload")
    ew = to_device(experts)
    key = dequant_launch_key(which, format=ew.format, activation=ew.activation,
                             hidden_size=ew.hidden_size,
                             intermediate_size=ew.intermediate_size)
    inter = ew.intermediate_size
    rows, kdim = ((fc1_rows(ew.activation, inter), ew.hidden_size) if which == "w13"
                  else (ew.hidden_size, inter))
    n_exp = ew.num_experts if expert is None else 1
    row0 = 0 if expert is None else int(expert) * rows
    xp = np if SIM else __import__("cupy")
    out = xp.empty((n_exp * rows, kdim), xp.float32)
    words = ew.w13_words if which == "w13" else ew.w2_words
    g = getattr(ew, which + "_global")
    g_rows = gate_rows(ew.activation, inter) if which == "w13" else rows
    gcols = 2 if which == "w13" else 1
    st = launch_stream(stream)
    if out.size:
        resolve(key, st).prepare(
            (n_exp * rows, -(-kdim // key.tile_n)),
            (words, getattr(ew, which + "_scales"), g, rows, g_rows, gcols,
             int(bool(apply_global)), row0, out))(st)
    shape = (rows, kdim) if expert is not None else (n_exp, rows, kdim)
    return out.reshape(shape)
