"""Expert weights: quantize or adopt FP4 weights once, in pymoe's prepared layout.

Shape legend: E experts, H hidden, I intermediate, F = 2I (gated) or I (relu2),
G13 = ceil(H/g), G2 = ceil(I/g) scale groups (g = 32 MXFP4, 16 NVFP4).

Prepared layout (what both twins read).  K is padded to Kp = ceil(K/32)*32 so
every row starts 16-byte aligned and one 16-byte load holds 32 FP4 values (one
MXFP4 group, two NVFP4 groups); padding nibbles are code 0 (+0.0) and padding
NVFP4 scales are 0, so the tail can never leak into results::

    w13        uint8 [E, F, Hp/2]  FP4 pairs, element 2j in the low nibble
    w13_scales uint8 [E, F, G13]   E8M0 (MXFP4) or E4M3 bits (NVFP4), G13 = Hp/g
    w2         uint8 [E, H, Ip/2]
    w2_scales  uint8 [E, H, G2]    G2 = Ip/g
    w13_global float32 [E, 2]      NVFP4 only: column 0 scales gate rows (all
                                   rows for relu2), column 1 up rows
    w2_global  float32 [E]         NVFP4 only
    w13_bias   float32 [E, F]      optional
    w2_bias    float32 [E, H]      optional

Float weights are quantized here and must be finite (NaN / inf: ValueError).
Packed weights are adopted as they are; a scale byte that means NaN (E8M0 255,
E4M3 0x7F / 0xFF) makes its group NaN, as the format specs say, and
prepare_weights warns (``NaNScaleWarning``, naming the tensor, the count and the
first index) when one sits in a group the layer uses.

w13 rows are always stored gate rows then up rows; ``w13_layout`` records how
the caller gave them.  Re-ordering rows is a permutation of bytes, so the same
weights prepared from two layouts are bit-identical and so are the results.

    >>> import numpy as np, pymoe
    >>> w13 = np.random.randn(4, 2 * 64, 128).astype(np.float32)
    >>> w2 = np.random.randn(4, 128, 64).astype(np.float32)
    >>> ew = pymoe.prepare_weights(w13, w2)        # MXFP4, silu, gate_up
    >>> (ew.num_experts, ew.hidden_size, ew.intermediate_size)
    (4, 128, 64)
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import formats
from .geometry import (ACTIVATIONS, FORMATS, W13_LAYOUTS, fc1_rows, is_gated,
                       num_scale_groups, padded_k, swiglu_params)

__all__ = ["ExpertWeights", "prepare_weights", "NaNScaleWarning"]


class NaNScaleWarning(UserWarning):
    """Packed weights carry a NaN scale byte in a used group: those outputs are NaN."""


@dataclass(frozen=True, kw_only=True, eq=False)
class ExpertWeights:
    """Prepared FP4 expert weights (see the module docstring for the layout)."""
    format: str
    activation: str
    w13_layout: str
    num_experts: int
    hidden_size: int
    intermediate_size: int
    w13: Any
    w13_scales: Any
    w2: Any
    w2_scales: Any
    w13_global: Any = None
    w2_global: Any = None
    w13_bias: Any = None
    w2_bias: Any = None
    swiglu_limit: float | None = None
    swiglu_alpha: float | None = None
    device: str = "cpu"

    @property
    def has_bias(self) -> bool:
        return self.w13_bias is not None or self.w2_bias is not None

    @property
    def fc1_rows(self) -> int:
        return fc1_rows(self.activation, self.intermediate_size)

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in self.arrays().values())

    def arrays(self) -> dict[str, Any]:
        names = ("w13", "w13_scales", "w2", "w2_scales", "w13_global",
                 "w2_global", "w13_bias", "w2_bias")
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def with_arrays(self, device: str, **arrays) -> "ExpertWeights":
        """The same weights with other arrays (e.g. a copy on another device)."""
        return replace(self, device=device, **arrays)

    def expert_bytes(self) -> int:
        """Bytes of packed weights plus scales one expert streams (w13 + w2)."""
        per = sum(int(a.nbytes) for n, a in self.arrays().items()
                  if n in ("w13", "w13_scales", "w2", "w2_scales"))
        return per // self.num_experts

    def __repr__(self) -> str:
        return (f"ExpertWeights(format={self.format!r}, activation={self.activation!r}, "
                f"E={self.num_experts}, H={self.hidden_size}, I={self.intermediate_size}, "
                f"w13_layout={self.w13_layout!r}, bias={self.has_bias}, device={self.device!r})")


def _pad_k(packed, scales, fmt, k_dim):
    """Pad K to a multiple of 32 values (zero codes, zero NVFP4 scales)."""
    kp = padded_k(k_dim)
    if kp == k_dim:
        return packed, scales
    pw = [(0, 0)] * (packed.ndim - 1) + [(0, (kp - k_dim) // 2)]
    packed = np.pad(packed, pw)
    g = num_scale_groups(fmt, kp)
    if scales.shape[-1] < g:
        scales = np.pad(scales, [(0, 0)] * (scales.ndim - 1) + [(0, g - scales.shape[-1])])
    return packed, scales


def _check_choice(name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name}={value!r}: expected one of {allowed}")


def _to_gate_up(a, layout: str, inter: int, axis: int = 1):
    """Rows of w13 (any layout) -> gate rows then up rows (a copy)."""
    if a is None or layout == "gate_up":
        return a
    a = np.asarray(a)
    if layout == "up_gate":
        idx = np.r_[inter:2 * inter, 0:inter]
    else:  # interleaved: even rows gate, odd rows up
        idx = np.r_[0:2 * inter:2, 1:2 * inter:2]
    return np.take(a, idx, axis=axis)


def _host(name, a):
    if a is None:
        return None
    if hasattr(a, "__cuda_array_interface__") or type(a).__module__.startswith("cupy"):
        raise TypeError(f"{name}: prepare_weights takes host (NumPy) arrays; "
                        "move device arrays with .get() first")
    if type(a).__module__.startswith("torch"):
        a = a.detach().cpu().numpy()
    return np.asarray(a)


def _scale_bytes(name, s, fmt):
    s = _host(name, s)
    if s is None:
        raise ValueError(f"{name} is required when the weights are packed uint8")
    if s.dtype != np.uint8:
        if s.dtype.itemsize == 1 and fmt == "nvfp4" and "e4m3" in s.dtype.name:
            s = s.view(np.uint8)
        elif s.dtype.itemsize == 1 and fmt == "mxfp4" and "e8m0" in s.dtype.name:
            s = s.view(np.uint8)
        else:
            raise TypeError(f"{name}: dtype {s.dtype} is not scale bytes; expected uint8"
                            f" ({'E8M0' if fmt == 'mxfp4' else 'E4M3'} bits)")
    return s


def _packed(name, w, scales_name, scales, fmt, rows, k_dim, num_experts):
    """Validate one packed weight: [E, N, K/2] (or gpt-oss [E, N, K/32, 16])."""
    if w.ndim == 4:   # gpt-oss blocks [E, N, K/32, 16]
        w = w.reshape(w.shape[0], w.shape[1], -1)
    if w.ndim != 3 or w.shape[:2] != (num_experts, rows) or w.shape[2] * 2 != k_dim:
        raise ValueError(f"{name}: shape {tuple(w.shape)}, expected "
                         f"{(num_experts, rows, k_dim // 2)} (packed FP4 pairs)")
    mult = 8 if fmt == "mxfp4" else 16
    if k_dim % mult:
        raise ValueError(f"{name}: shape {tuple(w.shape)} holds K={k_dim} values per row; "
                         f"K must be a multiple of {mult} for {fmt}")
    s = _scale_bytes(scales_name, scales, fmt)
    g = num_scale_groups(fmt, k_dim)
    if s.ndim != 3 or s.shape[0] != num_experts or s.shape[1] < rows or s.shape[2] < g:
        raise ValueError(f"{scales_name}: shape {tuple(s.shape)}, expected "
                         f"{(num_experts, rows, g)} (padded rows/columns allowed)")
    # padded or strided scale grids: read the logical part as it is
    s = np.ascontiguousarray(s[:, :rows, :g])
    nan = (s == 255) if fmt == "mxfp4" else ((s & 0x7F) == 0x7F)
    if nan.any():
        i = tuple(int(v) for v in np.argwhere(nan)[0])
        import warnings
        warnings.warn(NaNScaleWarning(
            f"{scales_name}: {int(nan.sum())} NaN scale byte(s) "
            f"({'E8M0 255' if fmt == 'mxfp4' else 'E4M3 0x7F/0xFF'}) in used groups, first "
            f"at [expert, row, group] {list(i)}: those groups' outputs will be NaN"),
            stacklevel=3)
    return np.ascontiguousarray(w), s


def _global(name, g, num_experts, cols):
    if g is None:
        raise ValueError(f"{name} is required for packed NVFP4 weights")
    g = np.asarray(_host(name, g), dtype=np.float32)
    if g.ndim == 0:
        g = np.full((num_experts,), g, np.float32)
    if cols == 2 and g.shape == (num_experts,):
        g = np.stack([g, g], axis=1)
    want = (num_experts, 2) if cols == 2 else (num_experts,)
    if g.shape != want:
        raise ValueError(f"{name}: shape {g.shape}, expected {want}" +
                         (" or (E,)" if cols == 2 else ""))
    bad = ~(np.isfinite(g) & (g > 0))
    if bad.any():
        i = np.argwhere(bad)[0]
        raise ValueError(f"{name}: global scales must be finite and > 0, got {g[tuple(i)]} "
                         f"at index {tuple(int(v) for v in i)}")
    return np.ascontiguousarray(g)


def prepare_weights(w13, w2, *, format: str = "mxfp4", w13_scales=None,
                    w2_scales=None, w13_global=None, w2_global=None,
                    activation: str = "silu", w13_layout: str = "gate_up",
                    w13_bias=None, w2_bias=None, swiglu_limit: float | None = None,
                    swiglu_alpha: float | None = None) -> ExpertWeights:
    """Turn expert weights into pymoe's prepared layout.

    w13: float [E, F, H] (quantized here) or packed uint8 [E, F, H/2] /
         gpt-oss blocks [E, F, H/32, 16] with ``w13_scales`` [E, F, ceil(H/g)].
    w2:  float [E, H, I] or packed uint8 [E, H, I/2] with ``w2_scales``.
    w13_global / w2_global: NVFP4 fp32 globals, [E] (w13 also [E, 2] = gate, up).
    w13_bias [E, F], w2_bias [E, H]: any float dtype, kept as float32.
    activation: silu | swigluoai | relu2; w13_layout: gate_up | up_gate | interleaved.
    swigluoai defaults to gpt-oss's alpha and limit (geometry.SWIGLUOAI_ALPHA/LIMIT).
    """
    _check_choice("format", format, FORMATS)
    _check_choice("activation", activation, ACTIVATIONS)
    _check_choice("w13_layout", w13_layout, W13_LAYOUTS)
    if not is_gated(activation) and w13_layout != "gate_up":
        raise ValueError(f"w13_layout={w13_layout!r} needs a gated activation; "
                         f"activation={activation!r} has no gate/up halves")
    if swiglu_alpha is not None and activation != "swigluoai":
        raise ValueError(f"swiglu_alpha applies to activation='swigluoai' only, "
                         f"got activation={activation!r}")
    if swiglu_limit is not None and activation == "relu2":
        raise ValueError("swiglu_limit applies to gated activations, not relu2")
    swiglu_alpha, swiglu_limit = swiglu_params(activation, swiglu_alpha, swiglu_limit)
    w13, w2 = _host("w13", w13), _host("w2", w2)
    if w13 is None or w2 is None:
        raise ValueError("w13 and w2 are required")
    packed = w13.dtype == np.uint8
    if (w2.dtype == np.uint8) != packed:
        raise TypeError(f"w13 dtype {w13.dtype} and w2 dtype {w2.dtype}: give both "
                        "as float (to quantize) or both as packed uint8")
    for name, a in (("w13", w13), ("w2", w2)):
        if not packed and not _is_float(a):
            raise TypeError(f"{name}: dtype {a.dtype}, expected a float or uint8 array")
    num_experts = int(w13.shape[0]) if w13.ndim >= 1 else 0
    if packed:
        if w2.ndim == 4:
            w2 = w2.reshape(w2.shape[0], w2.shape[1], -1)
        if w2.ndim != 3:
            raise ValueError(f"w2: shape {w2.shape}, expected [E, H, I/2]")
        hidden, inter = int(w2.shape[1]), int(w2.shape[2]) * 2
        rows = fc1_rows(activation, inter)
        h_from_w13 = (w13.shape[2] * (32 if w13.ndim == 4 else 2)) if w13.ndim >= 3 else -1
        if h_from_w13 != hidden:
            raise ValueError(f"w13: shape {tuple(w13.shape)} gives H={h_from_w13}, but "
                             f"w2: shape {tuple(w2.shape)} gives H={hidden}")
        w13, s13 = _packed("w13", w13, "w13_scales", w13_scales, format, rows, hidden,
                           num_experts)
        w2, s2 = _packed("w2", w2, "w2_scales", w2_scales, format, hidden, inter,
                         num_experts)
        if format == "nvfp4":
            g13 = _global("w13_global", w13_global, num_experts, 2)
            g2 = _global("w2_global", w2_global, num_experts, 1)
        else:
            g13 = g2 = None
            if w13_global is not None or w2_global is not None:
                raise ValueError("w13_global/w2_global apply to format='nvfp4' only")
    else:
        if w13.ndim != 3 or w2.ndim != 3:
            raise ValueError(f"w13: shape {w13.shape}, w2: shape {w2.shape}: expected "
                             "[E, F, H] and [E, H, I]")
        hidden, inter = int(w2.shape[1]), int(w2.shape[2])
        rows = fc1_rows(activation, inter)
        if w13.shape != (num_experts, rows, hidden) or w2.shape[0] != num_experts:
            raise ValueError(f"w13: shape {tuple(w13.shape)}, expected "
                             f"{(w2.shape[0], rows, hidden)} for activation={activation!r}"
                             f" with w2: shape {tuple(w2.shape)}")
        for name, s in (("w13_scales", w13_scales), ("w2_scales", w2_scales),
                        ("w13_global", w13_global), ("w2_global", w2_global)):
            if s is not None:
                raise ValueError(f"{name} given with float weights: float weights are "
                                 "quantized here; pass packed uint8 weights with scales")
        mult = 8 if format == "mxfp4" else 16
        for name, k_dim in (("w13", hidden), ("w2", inter)):
            if k_dim % mult:
                raise ValueError(f"{name}: K={k_dim} (its last dim) must be a multiple of "
                                 f"{mult} for {format}")
        w13f = np.asarray(w13, dtype=np.float32)
        w2f = np.asarray(w2, dtype=np.float32)
        for name, a in (("w13", w13f), ("w2", w2f)):
            _require_finite(name, a)
        if format == "mxfp4":
            w13, s13 = formats.quantize_mxfp4(w13f)
            w2, s2 = formats.quantize_mxfp4(w2f)
            g13 = g2 = None
        else:
            if is_gated(activation):
                # one global per half, as ModelOpt checkpoints carry gate and up
                gi = _to_gate_up(w13f, w13_layout, inter)
                pg, sg, gg = formats.quantize_nvfp4(gi[:, :inter])
                pu, su, gu = formats.quantize_nvfp4(gi[:, inter:])
                w13 = np.concatenate([pg, pu], axis=1)
                s13 = np.concatenate([sg, su], axis=1)
                g13 = np.stack([gg, gu], axis=1).astype(np.float32)
            else:
                w13, s13, gg = formats.quantize_nvfp4(w13f)
                g13 = np.stack([gg, gg], axis=1).astype(np.float32)
            w2, s2, g2 = formats.quantize_nvfp4(w2f)
            g2 = np.asarray(g2, np.float32).reshape(num_experts)
    layout_data = "gate_up" if (not packed and format == "nvfp4") else w13_layout
    w13, s13 = _pad_k(w13, s13, format, hidden)
    w2, s2 = _pad_k(w2, s2, format, inter)
    b13 = None if w13_bias is None else np.asarray(_host("w13_bias", w13_bias), np.float32)
    b2 = None if w2_bias is None else np.asarray(_host("w2_bias", w2_bias), np.float32)
    if b13 is not None and b13.shape != (num_experts, rows):
        raise ValueError(f"w13_bias: shape {b13.shape}, expected {(num_experts, rows)}")
    if b2 is not None and b2.shape != (num_experts, hidden):
        raise ValueError(f"w2_bias: shape {b2.shape}, expected {(num_experts, hidden)}")
    if is_gated(activation):
        w13 = _to_gate_up(w13, layout_data, inter)
        s13 = _to_gate_up(s13, layout_data, inter)
    b13 = _to_gate_up(b13, w13_layout, inter) if is_gated(activation) else b13
    return ExpertWeights(
        format=format, activation=activation, w13_layout=w13_layout,
        num_experts=num_experts, hidden_size=hidden, intermediate_size=inter,
        w13=np.ascontiguousarray(w13), w13_scales=np.ascontiguousarray(s13),
        w2=np.ascontiguousarray(w2), w2_scales=np.ascontiguousarray(s2),
        w13_global=g13, w2_global=g2,
        w13_bias=None if b13 is None else np.ascontiguousarray(b13),
        w2_bias=None if b2 is None else np.ascontiguousarray(b2),
        swiglu_limit=swiglu_limit, swiglu_alpha=swiglu_alpha)


def _require_finite(name: str, a: np.ndarray) -> None:
    """Policy for float weights: NaN or +-inf is refused (MXFP4 and NVFP4 would
    encode them differently, and no checkpoint means them).  Packed weights are
    taken as they are: their scale bytes carry NaN as each spec says."""
    bad = ~np.isfinite(a)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"{name}: non-finite value {a[i]} at index {i} "
                         f"({int(bad.sum())} in all); float weights must be finite")


def _is_float(a) -> bool:
    """True for float arrays, including ml_dtypes' bfloat16 (kind 'V')."""
    return a.dtype.kind == "f" or a.dtype.name == "bfloat16"
