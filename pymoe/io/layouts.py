"""Checkpoint layouts: find one MoE layer's expert tensors and prepare them.

Shape legend: E experts, H hidden, I intermediate, F = 2I (gated) or I (relu2).

Two shapes of layout, both named by a ``LayoutNames`` record (all names follow
``prefix``, whose ``{layer}`` is filled in):

    stacked (gpt-oss): one tensor per projection holds every expert
        gate_up_proj_blocks  U8   [E, F, H/32, 16]   -> w13 (rows interleaved g,u,g,u..)
        gate_up_proj_scales  U8   [E, F, H/32]       -> w13_scales (E8M0)
        gate_up_proj_bias    BF16 [E, F]             -> w13_bias
        down_proj_{blocks,scales,bias}               -> w2, w2_scales, w2_bias
    per expert (ModelOpt, compressed-tensors): "{e}.{proj}.{tensor}"
        {e}.w1|gate_proj.weight        U8      [I, H/2]    gate rows
        {e}.w3|up_proj.weight          U8      [I, H/2]    up rows
        {e}.w2|down_proj.weight        U8      [H, I/2]
        ....weight_scale               F8_E4M3 [>=rows, >=K/16]  (padding is sliced off)
        ....weight_scale_2             F32     []          global (CT: weight_global_scale,
                                                           stored as 1/global)

Stacked tensors reach ``prepare_weights`` as zero-copy memmap views.  Per-expert
tensors must be stacked into [E, F, H/2] first: that one copy is unavoidable
(each expert lives at its own file offset), and it happens once per layer.

    >>> import pymoe.io
    >>> ew = pymoe.io.load_moe_layer("gpt-oss-20b/", 0)                 # doctest: +SKIP
    >>> layers = pymoe.io.load_model_layers("gpt-oss-20b/")             # doctest: +SKIP
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Callable, Iterable

import numpy as np

from ..geometry import (ACTIVATIONS, FORMATS, SWIGLUOAI_ALPHA, SWIGLUOAI_LIMIT, W13_LAYOUTS,
                        is_gated, num_scale_groups)
from ..weights import ExpertWeights, prepare_weights
from .checkpoint import Checkpoint, open_checkpoint

__all__ = ["LayoutNames", "GPT_OSS", "MODELOPT", "COMPRESSED_TENSORS", "LAYOUTS",
           "detect_layout", "load_moe_layer", "load_model_layers"]

_U8 = ("U8",)
_SCALE_DTYPES = {"mxfp4": ("U8", "F8_E8M0"), "nvfp4": ("F8_E4M3", "U8")}
_FLOAT = ("BF16", "F16", "F32")


@dataclass(frozen=True, kw_only=True)
class LayoutNames:
    """Where a layer's expert tensors live and how to prepare them.

    Stacked layouts set ``w13``/``w13_scales``/``w2``/``w2_scales`` (and the
    NVFP4 ``*_global``, optional ``*_bias``); per-expert layouts set ``gate``,
    ``up``, ``down``: alternative projection names, the first one found in the
    checkpoint wins.  ``expert`` places an expert's projection after ``prefix``.
    ``global_is_reciprocal``: the file stores 1/global (compressed-tensors).
    """
    name: str = "custom"
    format: str
    activation: str = "silu"
    w13_layout: str = "gate_up"
    swiglu_alpha: float | None = None
    swiglu_limit: float | None = None
    prefix: str = "model.layers.{layer}.mlp.experts."
    # stacked: one tensor per projection, every expert ([E, ...])
    w13: str | None = None
    w13_scales: str | None = None
    w13_global: str | None = None
    w13_bias: str | None = None
    w2: str | None = None
    w2_scales: str | None = None
    w2_global: str | None = None
    w2_bias: str | None = None
    # per expert: prefix + expert.format(expert=e, proj=p) + tensor
    expert: str = "{expert}.{proj}."
    gate: tuple[str, ...] = ()
    up: tuple[str, ...] = ()
    down: tuple[str, ...] = ()
    weight: str = "weight"
    weight_scale: str = "weight_scale"
    weight_global: str | None = "weight_scale_2"
    global_is_reciprocal: bool = False

    def __post_init__(self):
        for arg, value, allowed in (("format", self.format, FORMATS),
                                    ("activation", self.activation, ACTIVATIONS),
                                    ("w13_layout", self.w13_layout, W13_LAYOUTS)):
            if value not in allowed:
                raise ValueError(f"LayoutNames {self.name!r}: {arg}={value!r}, expected "
                                 f"one of {allowed}")
        for arg in ("gate", "up", "down"):
            if isinstance(getattr(self, arg), str):
                object.__setattr__(self, arg, (getattr(self, arg),))
        nv = self.format == "nvfp4"
        if self.stacked:
            need = ["w13", "w13_scales", "w2", "w2_scales"] + (
                ["w13_global", "w2_global"] if nv else [])
            if self.gate or self.up or self.down:
                raise ValueError(f"LayoutNames {self.name!r}: set either the stacked names "
                                 "(w13, w2, ...) or the per-expert ones (gate, up, down)")
        else:
            need = ["up", "down"] + (["gate"] if is_gated(self.activation) else []) + (
                ["weight_global"] if nv else [])
        missing = [n for n in need if not getattr(self, n)]
        if missing:
            raise ValueError(f"LayoutNames {self.name!r}: {', '.join(missing)} must be set "
                             f"for a {'stacked' if self.stacked else 'per-expert'} "
                             f"{self.format} layout")

    @property
    def stacked(self) -> bool:
        return self.w13 is not None


GPT_OSS = LayoutNames(
    name="gpt-oss", format="mxfp4", activation="swigluoai", w13_layout="interleaved",
    swiglu_alpha=SWIGLUOAI_ALPHA, swiglu_limit=SWIGLUOAI_LIMIT,
    w13="gate_up_proj_blocks", w13_scales="gate_up_proj_scales", w13_bias="gate_up_proj_bias",
    w2="down_proj_blocks", w2_scales="down_proj_scales", w2_bias="down_proj_bias")
MODELOPT = LayoutNames(                      # NVFP4 and W4A16_NVFP4 (input_scale unused)
    name="modelopt", format="nvfp4", gate=("w1", "gate_proj"), up=("w3", "up_proj"),
    down=("w2", "down_proj"))
COMPRESSED_TENSORS = replace(              # nvfp4-pack-quantized
    MODELOPT, name="compressed-tensors", weight="weight_packed",
    weight_global="weight_global_scale", global_is_reciprocal=True)
LAYOUTS = {n.name: n for n in (GPT_OSS, MODELOPT, COMPRESSED_TENSORS)}
# prefixes tried by layout="auto" when none is given (HF's MoE and Mixtral's names)
_AUTO_PREFIXES = ("model.layers.{layer}.mlp.experts.",
                  "model.layers.{layer}.block_sparse_moe.experts.")


# ----------------------------------------------------------------------------- checks

def _tensor(ck: Checkpoint, name: str, dtypes: tuple, ndim=None) -> np.ndarray:
    t = ck.info(name)                      # ValueError "missing tensor 'name'" if absent
    if t.dtype not in dtypes:
        raise ValueError(f"tensor {name!r}: dtype {t.dtype}, expected {' or '.join(dtypes)}")
    ndims = ndim if isinstance(ndim, tuple) else (ndim,)
    if ndim is not None and len(t.shape) not in ndims:
        raise ValueError(f"tensor {name!r}: shape {list(t.shape)}, expected "
                         f"{' or '.join(map(str, ndims))} dims")
    return ck.get(name)


def _float32(ck: Checkpoint, name: str) -> np.ndarray:
    _tensor(ck, name, _FLOAT)
    return ck.get_float32(name)


def _experts_of(name: str, a, num_experts: int, ref: str) -> None:
    if a.shape[0] != num_experts:
        raise ValueError(f"tensor {name!r}: {a.shape[0]} experts (shape {list(a.shape)}), "
                         f"but {ref} has {num_experts}: inconsistent expert count")


def _shape(name: str, a, want: tuple, at_least: bool = False) -> None:
    ok = a.ndim == len(want) and all(
        (s >= w) if at_least else (s == w) for s, w in zip(a.shape, want))
    if not ok:
        raise ValueError(f"tensor {name!r}: shape {list(a.shape)}, expected {list(want)}"
                         + (" (or larger: padded)" if at_least else ""))


def _global(ck: Checkpoint, name: str, names: LayoutNames) -> np.ndarray:
    g = _float32(ck, name)
    if names.global_is_reciprocal:
        if not np.all(np.isfinite(g) & (g != 0)):
            raise ValueError(f"tensor {name!r}: global scale {g.ravel()[:4].tolist()} "
                             "cannot be inverted (stored as 1/global)")
        # float32 division is correctly rounded: the same 1/g vLLM and torch compute
        g = np.float32(1.0) / g
    return g


# ----------------------------------------------------------------------------- layer specs

@dataclass(frozen=True)
class _Layer:
    """A resolved layer: its layout, name prefix, expert count, per-expert projections."""
    layer: int
    names: LayoutNames
    prefix: str
    num_experts: int
    projs: tuple = ()            # per expert: (gate or None, up, down) names found


def _fill(template: str, layer: int) -> str:
    return template.replace("{layer}", str(layer))


def _expert_key(names: LayoutNames, pfx: str, e: int, proj: str, tensor: str) -> str:
    return pfx + names.expert.format(expert=e, proj=proj) + tensor


def _pick_proj(ck, names, pfx, role: str, alts, e0: int) -> str:
    for p in alts:
        if _expert_key(names, pfx, e0, p, names.weight) in ck:
            return p
    keys = " or ".join(repr(_expert_key(names, pfx, e0, p, names.weight)) for p in alts)
    raise ValueError(f"missing tensor {keys} ({names.name} {role} projection)")


def _expert_ids(ck: Checkpoint, names: LayoutNames, pfx: str) -> list[int]:
    """Expert ids present under pfx: the first field of the expert template."""
    head = names.expert.split("{expert}")[0]
    start = pfx + head
    ids = set()
    for k in ck.keys():
        if k.startswith(start):
            tok = k[len(start):].split(".", 1)[0]
            if tok.isdigit():
                ids.add(int(tok))
    return sorted(ids)


def _matches(ck: Checkpoint, names: LayoutNames, pfx: str) -> bool:
    if names.stacked:
        return pfx + names.w13 in ck
    tensors = [names.weight, names.weight_scale] + (
        [names.weight_global] if names.weight_global else [])
    return any(all(_expert_key(names, pfx, 0, p, t) in ck for t in tensors)
               for p in (names.gate or names.up))


def detect_layout(checkpoint, layer: int = 0, *, prefix: str | None = None) -> LayoutNames:
    """The preset whose tensors layer ``layer`` holds, with the prefix it was found under.

    Probes expert 0's tensor names only (a header lookup, no data read)."""
    ck = checkpoint if isinstance(checkpoint, Checkpoint) else open_checkpoint(checkpoint)
    prefixes = (prefix,) if prefix is not None else _AUTO_PREFIXES
    for pfx in prefixes:
        for names in LAYOUTS.values():
            if _matches(ck, names, _fill(pfx, layer)):
                return replace(names, prefix=pfx)
    raise ValueError(f"layer {layer}: no known layout ({', '.join(LAYOUTS)}) under prefix "
                     f"{' or '.join(repr(_fill(p, layer)) for p in prefixes)} in {ck.root}; "
                     "pass layout=LayoutNames(...)")


# config.json keys that give the routed-expert count (gpt-oss / Mixtral, DeepSeek /
# Kimi, Qwen3-MoE), at the top level or under "text_config"
_CONFIG_EXPERT_KEYS = ("num_local_experts", "n_routed_experts", "num_experts")


def config_num_experts(ck: Checkpoint) -> tuple[int, str] | None:
    """(E, where) from the checkpoint's config.json when it names the expert count."""
    root = ck.root if os.path.isdir(ck.root) else os.path.dirname(os.path.abspath(ck.root))
    path = os.path.join(root, "config.json")
    if not os.path.exists(path):
        return None
    import json
    try:
        with open(path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable JSON config ({e})") from None
    for scope, d in (("", cfg), ("text_config.", cfg.get("text_config") or {})):
        for k in _CONFIG_EXPERT_KEYS:
            v = d.get(k) if isinstance(d, dict) else None
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v, f"{path}: {scope}{k}"
    return None


def _resolve(ck: Checkpoint, layer: int, layout, num_experts, prefix) -> _Layer:
    if isinstance(layout, LayoutNames):
        names = layout if prefix is None else replace(layout, prefix=prefix)
    elif layout == "auto":
        names = detect_layout(ck, layer, prefix=prefix)
    elif layout in LAYOUTS:
        names = LAYOUTS[layout] if prefix is None else replace(LAYOUTS[layout], prefix=prefix)
    else:
        raise ValueError(f"layout={layout!r}: expected 'auto', one of {tuple(LAYOUTS)} or "
                         "a LayoutNames")
    pfx = _fill(names.prefix, layer)
    where = f"num_experts={num_experts}"
    if num_experts is None:
        cfg = config_num_experts(ck)
        if cfg is not None:
            num_experts, where = cfg[0], f"{cfg[1]}={cfg[0]}"
    if names.stacked:
        info = ck.info(pfx + names.w13)
        e = info.shape[0] if info.shape else 0
        if num_experts is not None and e != num_experts:
            raise ValueError(f"tensor {info.name!r}: {e} experts (shape {list(info.shape)}), "
                             f"expected {where}")
        return _Layer(layer, names, pfx, e)
    ids = _expert_ids(ck, names, pfx)
    # gaps (experts 0, 1, 3) surface at load time as "missing tensor ...experts.2..."
    e = (ids[-1] + 1 if ids else 0) if num_experts is None else int(num_experts)
    if e == 0:
        first = _expert_key(names, pfx, 0, (names.gate or names.up)[0], names.weight)
        raise ValueError(f"missing tensor {first!r}: no experts under {pfx!r}")
    if ids and ids[-1] >= e:
        start = pfx + names.expert.split("{expert}")[0] + f"{ids[-1]}."
        k = next(k for k in ck.keys() if k.startswith(start))
        raise ValueError(f"tensor {k!r}: expert {ids[-1]}, but {where}: "
                         "inconsistent expert count")
    if ids and ids[-1] < e - 1:       # the last experts are missing (config says more)
        missing = _expert_key(names, pfx, e - 1, (names.gate or names.up)[0], names.weight)
        raise ValueError(f"missing tensor {missing!r}: {where} but the checkpoint holds "
                         f"experts up to {ids[-1]} only")
    gate = _pick_proj(ck, names, pfx, "gate", names.gate, 0) if is_gated(names.activation) else None
    up = _pick_proj(ck, names, pfx, "up", names.up, 0)
    down = _pick_proj(ck, names, pfx, "down", names.down, 0)
    return _Layer(layer, names, pfx, e, (gate, up, down))


# ----------------------------------------------------------------------------- loading

def _load_stacked(ck: Checkpoint, L: _Layer, tick: Callable[[int], None]) -> ExpertWeights:
    n, p, E = L.names, L.prefix, L.num_experts
    name = {k: (p + getattr(n, k)) if getattr(n, k) else None
            for k in ("w13", "w13_scales", "w13_global", "w13_bias",
                      "w2", "w2_scales", "w2_global", "w2_bias")}
    sdt = _SCALE_DTYPES[n.format]
    w13 = _tensor(ck, name["w13"], _U8, ndim=(3, 4))       # [E, F, H/2] or [E, F, H/32, 16]
    w2 = _tensor(ck, name["w2"], _U8, ndim=(3, 4))         # [E, H, I/2] or [E, H, I/32, 16]
    s13 = _tensor(ck, name["w13_scales"], sdt, ndim=3)     # [E, F, >=G13]
    s2 = _tensor(ck, name["w2_scales"], sdt, ndim=3)       # [E, H, >=G2]
    for k, a in (("w2", w2), ("w13_scales", s13), ("w2_scales", s2)):
        _experts_of(name[k], a, E, repr(name["w13"]))
    for k, a in (("w13", w13), ("w2", w2)):
        if a.ndim == 4 and a.shape[3] != 16:
            raise ValueError(f"tensor {name[k]!r}: shape {list(a.shape)}, expected "
                             "[E, N, K/32, 16] blocks or [E, N, K/2] bytes")
    # H = w2's rows, I = w13's rows (/2 gated): row counts are never padded.  Each
    # projection's K must then match; a w2 stored [E, I, H] is named as transposed.
    def kdims(k_dim: int, nd: int) -> tuple:
        return (k_dim // 32, 16) if nd == 4 else (k_dim // 2,)
    rows = int(w13.shape[1])
    inter = rows // 2 if is_gated(n.activation) else rows
    h13 = int(np.prod(w13.shape[2:])) * 2                  # H as w13 holds it
    if tuple(w2.shape) == (E, inter) + kdims(h13, w2.ndim) and inter != h13:
        raise ValueError(f"tensor {name['w2']!r}: shape {list(w2.shape)}, expected "
                         f"{list((E, h13) + kdims(inter, w2.ndim))} ([E, H, I...]); it "
                         "looks transposed ([E, I, H...])")
    hidden = int(w2.shape[1])
    _shape(name["w13"], w13, (E, rows) + kdims(hidden, w13.ndim))
    _shape(name["w2"], w2, (E, hidden) + kdims(inter, w2.ndim))
    _shape(name["w13_scales"], s13, (E, rows, num_scale_groups(n.format, hidden)), at_least=True)
    _shape(name["w2_scales"], s2, (E, hidden, num_scale_groups(n.format, inter)), at_least=True)
    kw = {}
    for k, want in (("w13_bias", (E, rows)), ("w2_bias", (E, hidden))):
        if name[k]:
            b = _float32(ck, name[k])
            if b.ndim:
                _experts_of(name[k], b, E, repr(name["w13"]))
            _shape(name[k], b, want)
            kw[k] = b
    if n.format == "nvfp4":
        g13 = _global(ck, name["w13_global"], n)
        g2 = _global(ck, name["w2_global"], n)
        for k, g in (("w13_global", g13), ("w2_global", g2)):
            if g.size != 1 and g.ndim:
                _experts_of(name[k], g, E, repr(name["w13"]))
        if not (g13.size == 1 or g13.shape in ((E,), (E, 2))):
            raise ValueError(f"tensor {name['w13_global']!r}: shape {list(g13.shape)}, "
                             f"expected [], [{E}] or [{E}, 2]")
        if not (g2.size == 1 or g2.shape == (E,)):
            raise ValueError(f"tensor {name['w2_global']!r}: shape {list(g2.shape)}, "
                             f"expected [] or [{E}]")
        kw.update(w13_global=g13.reshape(()) if g13.size == 1 else g13,
                  w2_global=g2.reshape(()) if g2.size == 1 else g2)
    ew = prepare_weights(w13, w2, format=n.format, w13_scales=s13, w2_scales=s2,
                         activation=n.activation, w13_layout=n.w13_layout,
                         swiglu_alpha=n.swiglu_alpha, swiglu_limit=n.swiglu_limit, **kw)
    tick(E)
    return ew


def _load_per_expert(ck: Checkpoint, L: _Layer, tick: Callable[[int], None]) -> ExpertWeights:
    n, p, E = L.names, L.prefix, L.num_experts
    gate, up, down = L.projs
    sdt = _SCALE_DTYPES[n.format]
    key = lambda e, proj, t: _expert_key(n, p, e, proj, t)      # noqa: E731
    w0 = ck.info(key(0, up, n.weight))
    d0 = ck.info(key(0, down, n.weight))
    for t in (w0, d0):                   # the dtype first: an I32 weight is not a shape error
        if t.dtype not in _U8:
            raise ValueError(f"tensor {t.name!r}: dtype {t.dtype}, expected "
                             f"{' or '.join(_U8)} (packed FP4 pairs)")
    if len(w0.shape) != 2 or len(d0.shape) != 2:
        bad = w0 if len(w0.shape) != 2 else d0
        raise ValueError(f"tensor {bad.name!r}: shape {list(bad.shape)}, expected "
                         "[out, in/2] packed FP4")
    inter, hidden = w0.shape[0], 2 * w0.shape[1]
    if d0.shape != (hidden, inter // 2):
        raise ValueError(f"tensor {d0.name!r}: shape {list(d0.shape)}, expected "
                         f"{[hidden, inter // 2]} (from {w0.name!r}: {list(w0.shape)})")
    halves = (gate, up) if gate is not None else (up,)
    rows = len(halves) * inter
    g13n, g2n = num_scale_groups(n.format, hidden), num_scale_groups(n.format, inter)
    # stacking copies: per-expert tensors sit at separate file offsets (see module doc)
    w13 = np.empty((E, rows, hidden // 2), np.uint8)    # [E, F, H/2] gate rows, up rows
    s13 = np.empty((E, rows, g13n), np.uint8)           # [E, F, G13]
    w2 = np.empty((E, hidden, inter // 2), np.uint8)    # [E, H, I/2]
    s2 = np.empty((E, hidden, g2n), np.uint8)           # [E, H, G2]
    glob = n.format == "nvfp4"
    g13 = np.empty((E, 2), np.float32)                  # [E, 2] (gate, up)
    g2 = np.empty((E,), np.float32)
    for e in range(E):
        parts = [(proj, w13[e, h * inter:(h + 1) * inter], s13[e, h * inter:(h + 1) * inter],
                  (inter, hidden // 2), g13n) for h, proj in enumerate(halves)]
        parts.append((down, w2[e], s2[e], (hidden, inter // 2), g2n))
        for i, (proj, w_out, s_out, wshape, groups) in enumerate(parts):
            wn, sn = key(e, proj, n.weight), key(e, proj, n.weight_scale)
            w = _tensor(ck, wn, _U8)
            _shape(wn, w, wshape)
            s = _tensor(ck, sn, sdt, ndim=2)
            _shape(sn, s, (wshape[0], groups), at_least=True)
            w_out[...] = w
            s_out[...] = s[:wshape[0], :groups]        # padded scale grids: logical part
            if glob:
                gn = key(e, proj, n.weight_global)
                g = _global(ck, gn, n)
                if g.size != 1:
                    raise ValueError(f"tensor {gn!r}: shape {list(g.shape)}, expected a "
                                     "scalar ([] or [1])")
                if i == len(parts) - 1:
                    g2[e] = g.reshape(())
                else:
                    g13[e, i] = g.reshape(())
        if glob and len(halves) == 1:
            g13[e, 1] = g13[e, 0]
        tick(1)
    return prepare_weights(w13, w2, format=n.format, w13_scales=s13, w2_scales=s2,
                           w13_global=g13 if glob else None, w2_global=g2 if glob else None,
                           activation=n.activation, w13_layout=n.w13_layout,
                           swiglu_alpha=n.swiglu_alpha, swiglu_limit=n.swiglu_limit)


def _load(ck: Checkpoint, L: _Layer, tick=lambda n: None) -> ExpertWeights:
    return (_load_stacked if L.names.stacked else _load_per_expert)(ck, L, tick)


def _open(checkpoint) -> Checkpoint:
    if isinstance(checkpoint, Checkpoint):
        return checkpoint
    if not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(f"checkpoint: {type(checkpoint).__name__}, expected a path or a "
                        "pymoe.io.Checkpoint")
    return open_checkpoint(checkpoint)


def load_moe_layer(checkpoint, layer: int, *, layout: str | LayoutNames = "auto",
                   num_experts: int | None = None, prefix: str | None = None) -> ExpertWeights:
    """Read layer ``layer``'s experts and return them prepared (``prepare_weights``).

    checkpoint: a .safetensors file, a ``model.safetensors.index.json``, a
        directory holding either, or an open ``Checkpoint``.
    layout: 'auto' (by the tensor names present), 'gpt-oss', 'modelopt',
        'compressed-tensors', or a ``LayoutNames``.
    num_experts: expected E; a checkpoint with another count raises ValueError.
    prefix: overrides the layout's prefix ('{layer}' is filled in).
    Missing tensors, wrong dtypes or shapes and inconsistent expert counts raise
    ValueError naming the tensor.
    """
    ck = _open(checkpoint)
    return _load(ck, _resolve(ck, int(layer), layout, num_experts, prefix))


def _layer_ids(ck: Checkpoint, layout, prefix) -> list[int]:
    """Layers holding experts: integers at '{layer}' of the prefix, in order."""
    if prefix is not None:
        templates = (prefix,)
    elif isinstance(layout, LayoutNames):
        templates = (layout.prefix,)
    elif layout in LAYOUTS:
        templates = (LAYOUTS[layout].prefix,)
    else:
        templates = _AUTO_PREFIXES
    for t in templates:
        if "{layer}" not in t:
            raise ValueError(f"prefix {t!r} has no '{{layer}}' field: pass layers=")
        head, tail = t.split("{layer}", 1)
        ids = set()
        for k in ck.keys():
            if k.startswith(head):
                tok = k[len(head):].split(".", 1)[0]
                if tok.isdigit() and k.startswith(tail, len(head) + len(tok)):
                    ids.add(int(tok))
        if ids:
            return sorted(ids)
    raise ValueError(f"no MoE layers under {' or '.join(map(repr, templates))} in {ck.root}")


def load_model_layers(checkpoint, layers: Iterable[int] | None = None, *,
                      layout: str | LayoutNames = "auto", num_experts: int | None = None,
                      prefix: str | None = None,
                      progress: bool = True) -> dict[int, ExpertWeights]:
    """Prepare the experts of several layers: {layer: ExpertWeights}, in order.

    layers: layer indices (default: every layer that has experts under the
    prefix).  Other arguments as ``load_moe_layer``.  Shows a tqdm bar counting
    experts when tqdm is importable and ``progress`` is true.
    """
    ck = _open(checkpoint)
    ids = _layer_ids(ck, layout, prefix) if layers is None else [int(i) for i in layers]
    specs = [_resolve(ck, i, layout, num_experts, prefix) for i in ids]
    bar = None
    if progress:
        try:
            from tqdm import tqdm
            bar = tqdm(total=sum(s.num_experts for s in specs), unit="expert",
                       desc=f"preparing {len(specs)} MoE layers")
        except ImportError:
            pass
    tick = bar.update if bar is not None else (lambda n: None)
    try:
        return {s.layer: _load(ck, s, tick) for s in specs}
    finally:
        if bar is not None:
            bar.close()
