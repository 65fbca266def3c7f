"""Planner: Caps -> Plan (priced arena layout) -> Binding (views over one arena).

Lifecycle (the one grammar for stateful work)::

    caps = pymoe.Caps(max_tokens=64, top_k=4, num_experts=32, hidden_size=2880,
                      intermediate_size=2880, activation="swigluoai",
                      w13_layout="interleaved", has_bias=True)
    nbytes = pymoe.required_nbytes(caps)       # pure: no GPU, numba or cupy
    plan = pymoe.plan(caps)
    scratch = np.empty(plan.scratch_nbytes, np.uint8)   # or pymoe.cuda.allocate_scratch(plan)
    b = plan.bind(scratch=scratch, x=x, experts=ew, topk_weights=w, topk_ids=ids)
    y = pymoe.run(b)                             # any T <= max_tokens, same scratch

The arena is sized for every T in 1..max_tokens over the *reachable* block sizes
only, the decode and packed regimes overlaid at offset 0 (one call runs one
regime), so the arena is the maximum over token buckets, not their sum.
``bind`` validates and slices views; it never allocates, so it is capture safe.
Only the standard library, NumPy and pymoe's own host modules (geometry,
dtypes, env, interop) are imported here; cupy only when handed device arrays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from . import env
from . import geometry as geo
from .dtypes import activation_dtype
from .interop import array_kind, as_cupy, data_address

__all__ = ["Caps", "Plan", "PlanTensor", "Binding", "plan", "required_nbytes"]


def _req_int(name, v, lo=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"Caps.{name}={v!r}: expected an int")
    if v < lo:
        raise ValueError(f"Caps.{name}={v}: must be >= {lo}")


def _req_choice(name, v, allowed):
    if v not in allowed:
        raise ValueError(f"Caps.{name}={v!r}: expected one of {allowed}")


@dataclass(frozen=True, kw_only=True)
class Caps:
    """What one MoE layer can be asked to do; everything the arena depends on."""
    max_tokens: int
    top_k: int
    num_experts: int
    hidden_size: int
    intermediate_size: int
    format: str = "mxfp4"
    activation: str = "silu"
    dtype: str = "bfloat16"
    w13_layout: str = "gate_up"
    block_size_m: int | None = None
    decode_max_tokens: int | None = None
    global_num_experts: int | None = None
    apply_router_weight_on_input: bool = False
    has_bias: bool = False
    swiglu_limit: float | None = None
    swiglu_alpha: float | None = None

    def __post_init__(self):
        for n in ("max_tokens", "top_k", "num_experts", "hidden_size", "intermediate_size"):
            _req_int(n, getattr(self, n))
        _req_choice("format", self.format, geo.FORMATS)
        _req_choice("activation", self.activation, geo.ACTIVATIONS)
        _req_choice("dtype", self.dtype, geo.DTYPES)
        _req_choice("w13_layout", self.w13_layout, geo.W13_LAYOUTS)
        mult = 8 if self.format == "mxfp4" else 16
        for n in ("hidden_size", "intermediate_size"):
            if getattr(self, n) % mult:
                raise ValueError(f"Caps.{n}={getattr(self, n)}: must be a multiple of "
                                 f"{mult} for format={self.format!r}")
        if self.block_size_m is not None and self.block_size_m not in geo.BLOCK_SIZES:
            raise ValueError(f"Caps.block_size_m={self.block_size_m!r}: expected None or "
                             f"one of {geo.BLOCK_SIZES}")
        if self.decode_max_tokens is not None:
            lim = geo.decode_route_limit(self.top_k)
            if (not isinstance(self.decode_max_tokens, int)
                    or isinstance(self.decode_max_tokens, bool)
                    or not 0 <= self.decode_max_tokens <= lim):
                raise ValueError(f"Caps.decode_max_tokens={self.decode_max_tokens!r}: "
                                 f"expected None (the measured cut) or an int in 0..{lim} "
                                 f"(T * top_k <= {geo.DECODE_ROUTE_CAP} routes)")
        if self.global_num_experts is not None:
            _req_int("global_num_experts", self.global_num_experts)
            if self.global_num_experts < self.num_experts:
                raise ValueError(f"Caps.global_num_experts={self.global_num_experts} < "
                                 f"num_experts={self.num_experts}")
        if self.top_k > self.num_route_experts:
            raise ValueError(f"Caps.top_k={self.top_k}: must be <= the number of experts "
                             f"routes choose from ({self.num_route_experts})")
        for n in ("apply_router_weight_on_input", "has_bias"):
            if not isinstance(getattr(self, n), bool):
                raise TypeError(f"Caps.{n}={getattr(self, n)!r}: expected a bool")
        if self.activation == "relu2" and self.w13_layout != "gate_up":
            raise ValueError(f"Caps.w13_layout={self.w13_layout!r}: relu2 is ungated, "
                             "only 'gate_up' applies")

    @classmethod
    def for_weights(cls, experts, *, max_tokens: int, top_k: int,
                    dtype: str = "bfloat16", **kw) -> "Caps":
        """Caps matching prepared ``experts`` (format, sizes, activation, bias)."""
        return cls(max_tokens=max_tokens, top_k=top_k, num_experts=experts.num_experts,
                   hidden_size=experts.hidden_size,
                   intermediate_size=experts.intermediate_size, format=experts.format,
                   activation=experts.activation, dtype=dtype,
                   w13_layout=experts.w13_layout, has_bias=experts.has_bias,
                   swiglu_limit=experts.swiglu_limit, swiglu_alpha=experts.swiglu_alpha,
                   **kw)

    @property
    def num_route_experts(self) -> int:
        """Size of the expert-id space of topk_ids (global under expert parallel)."""
        return self.global_num_experts or self.num_experts

    @property
    def decode_cut(self) -> int:
        """The decode regime's last T: decode_max_tokens where pinned, else
        geometry.default_decode_cut for this layer's shape (0: every T packed)."""
        if self.decode_max_tokens is not None:
            return geo.decode_max_tokens(self.top_k, self.decode_max_tokens)
        return geo.default_decode_cut(self.top_k, self.format, self.activation,
                                      self.hidden_size, self.intermediate_size)

    def gemms(self, cc: tuple[int, int] | None, scale_bytes: tuple[int, int] | None
              ) -> tuple[str, ...]:
        """The block GEMM(s) PYMOE_GEMM selects on a device of compute capability
        ``cc`` for weights whose scale bytes span ``scale_bytes`` (geometry.pick_gemm;
        None = not known: every GEMM the weights could need)."""
        return geo.pick_gemm(env.gemm_variant(), cc, self.format, self.dtype, scale_bytes)

    def reachable_keys(self, gemms: tuple[str, ...]) -> list:
        """Every LaunchKey a call with T in 1..max_tokens can make, for each block
        GEMM in ``gemms`` (what prewarm resolves), in first-use order."""
        keys = []
        for reg, b, lo, hi in self.buckets():
            for g in gemms:             # (decode: MXFP4 keys fold or not by it)
                # (fc1 packs its own blocks up to some T: geometry.self_packs is
                # monotone in the routes, so a bucket's two ends hold both variants)
                for t in (lo, hi):
                    for k in self.launch_keys(reg, b, g, num_tokens=t):
                        if k is not None and k not in keys:
                            keys.append(k)
        return keys

    def block_size_for(self, num_tokens: int) -> int:
        return geo.select_block_size(num_tokens, self.top_k, self.num_route_experts,
                                     self.block_size_m)

    def buckets(self):
        return geo.token_buckets(self.max_tokens, self.top_k, self.num_route_experts,
                                 self.block_size_m, self.decode_cut)

    def shapes_for(self, num_tokens: int) -> tuple[str, int | None, list]:
        """(regime, B, tensors) the kernels touch for T tokens."""
        reg = geo.regime_for(num_tokens, self.top_k, self.decode_cut)
        b = self.block_size_for(num_tokens) if reg == "packed" else None
        return reg, b, geo.scratch_shapes(reg, num_tokens, self.top_k, self.num_experts,
                                          self.hidden_size, self.intermediate_size,
                                          self.dtype, b)

    def launch_keys(self, regime: str, block: int | None, gemm: str | None = None,
                    num_tokens: int | None = None):
        """The call's LaunchKeys with block GEMM ``gemm``; None takes it from
        env.gemm_variant() (PYMOE_GEMM, the one place that reads it), its default
        'auto' seen from no device (mma): bind and prewarm settle 'auto' for their
        device and weights (``gemms``).  Packed: the route_pack key is None where
        fc1 packs its own blocks (geometry.self_packs, for a call of ``num_tokens``
        tokens; None: not known, so route_pack)."""
        if gemm is None:
            gemm = self.gemms(None, None)[0]
        return geo.launch_keys(regime, block, gemm=gemm, format=self.format,
                               activation=self.activation, dtype=self.dtype,
                               hidden_size=self.hidden_size,
                               intermediate_size=self.intermediate_size,
                               has_bias=self.has_bias,
                               router_on_input=self.apply_router_weight_on_input,
                               swiglu_limit=self.swiglu_limit,
                               swiglu_alpha=self.swiglu_alpha, num_experts=self.num_experts,
                               num_routes=None if num_tokens is None
                               else num_tokens * self.top_k)


@dataclass(frozen=True)
class PlanTensor:
    name: str
    regime: str
    offset: int
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return geo.TensorShape(self.name, self.dtype, self.shape).nbytes


def _align(n: int) -> int:
    return -(-n // geo.ALIGN) * geo.ALIGN


@lru_cache(maxsize=256)
def _layout(caps: Caps) -> tuple[tuple[PlanTensor, ...], int]:
    worst: dict[tuple[str, str], geo.TensorShape] = {}
    for reg, b, _lo, hi in caps.buckets():
        for ts in geo.scratch_shapes(reg, hi, caps.top_k, caps.num_experts,
                                     caps.hidden_size, caps.intermediate_size,
                                     caps.dtype, b):
            old = worst.get((reg, ts.name))
            if old is not None:
                ts = geo.TensorShape(ts.name, ts.dtype,
                                     tuple(map(max, old.shape, ts.shape)))
            worst[(reg, ts.name)] = ts
    tensors, total = [], 0
    for reg in geo.REGIMES:          # regimes overlay each other from offset 0
        off = 0
        for (r, _), ts in worst.items():
            if r != reg:
                continue
            tensors.append(PlanTensor(ts.name, reg, off, ts.dtype, ts.shape))
            off = _align(off + ts.nbytes)
        total = max(total, off)
    return tuple(tensors), total


def required_nbytes(caps: Caps) -> int:
    """Scratch bytes for every call with T <= caps.max_tokens.  Pure function:
    no compile, no allocation, no GPU; monotone in max_tokens."""
    if not isinstance(caps, Caps):
        raise TypeError(f"required_nbytes takes a pymoe.Caps, got {type(caps).__name__}")
    return _layout(caps)[1]


def plan(caps: Caps) -> "Plan":
    if not isinstance(caps, Caps):
        raise TypeError(f"plan takes a pymoe.Caps, got {type(caps).__name__}")
    tensors, total = _layout(caps)
    return Plan(caps=caps, layout=tensors, scratch_nbytes=total)


# ---------------------------------------------------------------- binding

def _kind(a) -> str:
    """'host' for NumPy, 'device' for CuPy (what _as_array leaves)."""
    return "host" if isinstance(a, np.ndarray) else "device"


def _as_array(name: str, a):
    """Classify (interop.array_kind: a TypeError naming ``name`` for anything but
    a host or CUDA array); NumPy and CuPy stay as they are, other CUDA arrays
    (torch, __cuda_array_interface__, DLPack) become zero-copy CuPy views."""
    if array_kind(name, a) == "host" or type(a).__module__.startswith("cupy"):
        return a
    return as_cupy(name, a)


def _contig(name, a):
    if not a.flags.c_contiguous:
        raise ValueError(f"{name}: must be C-contiguous (strides {a.strides}, "
                         f"shape {tuple(a.shape)})")


def _act_dtype_ok(name: str, a, want: str) -> bool:
    try:
        return activation_dtype(name, a.dtype) == want
    except TypeError:
        return False


@dataclass(frozen=True, eq=False)
class Binding:
    """A validated call: live arrays and views of the arena.  Run with pymoe.run."""
    plan: "Plan"
    kind: str                      # 'host' (ref backend) or 'device' (cuda)
    regime: str
    num_tokens: int
    block: int | None
    x: Any
    experts: Any
    topk_weights: Any
    topk_ids: Any
    out: Any
    expert_map: Any
    views: dict = field(repr=False)
    keys: tuple = ()
    # backend state derived from this binding once (the CUDA twin keeps its
    # prepared launches here, so a repeated run only enqueues)
    cache: dict = field(default_factory=dict, repr=False)

    @property
    def caps(self) -> Caps:
        return self.plan.caps


@dataclass(frozen=True, eq=False)
class Plan:
    caps: Caps
    layout: tuple[PlanTensor, ...]
    scratch_nbytes: int

    def tensor(self, regime: str, name: str) -> PlanTensor:
        for t in self.layout:
            if t.regime == regime and t.name == name:
                return t
        raise KeyError(f"{regime}/{name} is not in this plan")

    def describe(self, file=None) -> str:
        c = self.caps
        lines = [f"pymoe plan: T<={c.max_tokens} k={c.top_k} E={c.num_experts}"
                 + (f"/{c.global_num_experts}" if c.global_num_experts else "")
                 + f" H={c.hidden_size} I={c.intermediate_size} {c.format} {c.activation}"
                 f" {c.dtype} buckets="
                 + ",".join(f"{r}{'' if b is None else f'/B{b}'}:{lo}-{hi}"
                            for r, b, lo, hi in c.buckets()),
                 f"{'regime':8} {'tensor':22} {'offset':>12} {'dtype':9} "
                 f"{'shape':>16} {'bytes':>12}"]
        for t in self.layout:
            lines.append(f"{t.regime:8} {t.name:22} {t.offset:>12} {t.dtype:9} "
                         f"{str(t.shape):>16} {t.nbytes:>12}")
        lines.append(f"total {self.scratch_nbytes} bytes = "
                     f"{self.scratch_nbytes / 2**20:.2f} MiB")
        s = "\n".join(lines)
        if file is not None:
            print(s, file=file)
        return s

    def bind(self, *, scratch, x, experts, topk_weights, topk_ids, out=None,
             expert_map=None) -> Binding:
        """Validate a call against this plan and slice the arena; never allocates.

        scratch: uint8 [>= scratch_nbytes] (NumPy for the ref backend, CuPy for cuda)
        x: [T, H] bf16/fp16 (bf16 may be given as uint16 bits); T <= max_tokens
        topk_weights: float32 [T, k]; topk_ids: int32/int64 [T, k]
        out: [T, H] like x, optional; expert_map: int32/int64 [global_num_experts]
        """
        c = self.caps
        scratch = _as_array("scratch", scratch)
        x = _as_array("x", x)
        kind = _kind(x)
        if scratch.dtype != np.uint8 or scratch.ndim != 1:
            raise TypeError(f"scratch: expected a 1-D uint8 array, got dtype "
                            f"{scratch.dtype} shape {tuple(scratch.shape)}")
        _contig("scratch", scratch)
        if scratch.nbytes < self.scratch_nbytes:
            raise ValueError(f"scratch has {scratch.nbytes} bytes, requires "
                             f"{self.scratch_nbytes}")
        if x.ndim != 2 or x.shape[1] != c.hidden_size:
            raise ValueError(f"x: shape {tuple(x.shape)}, expected [T, {c.hidden_size}]")
        if not _act_dtype_ok("x", x, c.dtype):
            raise TypeError(f"x: dtype {x.dtype}, expected {c.dtype} (Caps.dtype)")
        _contig("x", x)
        t = int(x.shape[0])
        if t > c.max_tokens:
            raise ValueError(f"x: T={t} tokens exceeds Caps.max_tokens={c.max_tokens}")
        topk_ids = _as_array("topk_ids", topk_ids)
        topk_weights = _as_array("topk_weights", topk_weights)
        if tuple(topk_ids.shape) != (t, c.top_k):
            raise ValueError(f"topk_ids: shape {tuple(topk_ids.shape)}, expected "
                             f"{(t, c.top_k)} (T, top_k)")
        if topk_ids.dtype not in (np.int32, np.int64):
            raise TypeError(f"topk_ids: dtype {topk_ids.dtype}, expected int32 or int64")
        if tuple(topk_weights.shape) != (t, c.top_k):
            raise ValueError(f"topk_weights: shape {tuple(topk_weights.shape)}, expected "
                             f"{(t, c.top_k)} (T, top_k)")
        if topk_weights.dtype != np.float32:
            raise TypeError(f"topk_weights: dtype {topk_weights.dtype}, expected float32")
        _contig("topk_ids", topk_ids)
        _contig("topk_weights", topk_weights)
        arrays = {"scratch": scratch, "topk_ids": topk_ids, "topk_weights": topk_weights}
        if out is not None:
            out = _as_array("out", out)
            if tuple(out.shape) != (t, c.hidden_size):
                raise ValueError(f"out: shape {tuple(out.shape)}, expected "
                                 f"{(t, c.hidden_size)}")
            if not _act_dtype_ok("out", out, c.dtype):
                raise TypeError(f"out: dtype {out.dtype}, expected {c.dtype} like x")
            _contig("out", out)
            arrays["out"] = out
        if c.global_num_experts is not None and expert_map is None:
            raise ValueError(f"expert_map is required: Caps.global_num_experts="
                             f"{c.global_num_experts}")
        if expert_map is not None:
            expert_map = _as_array("expert_map", expert_map)
            if tuple(expert_map.shape) != (c.num_route_experts,):
                raise ValueError(f"expert_map: shape {tuple(expert_map.shape)}, expected "
                                 f"({c.num_route_experts},) (global_num_experts)")
            if expert_map.dtype not in (np.int32, np.int64):
                raise TypeError(f"expert_map: dtype {expert_map.dtype}, expected int32 or "
                                "int64")
            if isinstance(expert_map, np.ndarray):
                validate_expert_map(expert_map, c.num_experts)
            arrays["expert_map"] = expert_map
        self._check_experts(experts, kind)
        for name, a in (*arrays.items(), ("scratch", scratch)):
            if _kind(a) != kind:
                raise TypeError(f"{name}: is a {_kind(a)} array but x is a {kind} array; "
                                "keep every argument on one device")
        if kind == "device":
            dev = x.device.id
            ew_arr = experts.w13 if experts.w13 is not None else experts.w13_v2
            for name, a in (*arrays.items(), ("experts", ew_arr), ("scratch", scratch)):
                if a.device.id != dev:
                    raise ValueError(f"{name}: on device {a.device.id}, x on device {dev}"
                                     + ("; upload the weights to x's device with "
                                        "pymoe.cuda.to_device under cupy.cuda.Device(...)"
                                        if name == "experts" else ""))
            if scratch.data.ptr % geo.ALIGN:
                raise ValueError(f"scratch: data pointer {scratch.data.ptr:#x} is not "
                                 f"{geo.ALIGN}-byte aligned (the planned offsets are); "
                                 "pass the array allocate_scratch returned, unsliced")
        _check_no_overlap({"x": x, "out": out, "scratch": scratch,
                           "topk_weights": topk_weights, "topk_ids": topk_ids,
                           "expert_map": expert_map})
        reg, b, shapes = c.shapes_for(max(t, 1))
        gemm = None
        if kind == "device" and env.gemm_variant() in ("auto", "wgmma"):
            gemm = c.gemms(device_cc(x), experts.scale_bytes)[0]
        keys = c.launch_keys(reg, b, gemm, num_tokens=max(t, 1))
        if kind == "device":
            check_x_words(x, reg, keys)
            check_packed_rows(experts, keys)
        views = {}
        for ts in shapes:
            pt = self.tensor(reg, ts.name)
            views[ts.name] = self._view(scratch, pt, ts)
        return Binding(plan=self, kind=kind, regime=reg, num_tokens=t, block=b, x=x,
                       experts=experts, topk_weights=topk_weights, topk_ids=topk_ids,
                       out=out, expert_map=expert_map, views=views, keys=keys)

    @staticmethod
    def _view(scratch, pt: PlanTensor, ts: geo.TensorShape):
        if any(s > p for s, p in zip(ts.shape, pt.shape)):
            raise AssertionError(f"{ts.name}: live shape {ts.shape} exceeds planned "
                                 f"{pt.shape}")   # geometry bug, never user error
        store = np.uint16 if ts.dtype == "bfloat16" else np.dtype(ts.dtype)
        n = math.prod(ts.shape)
        raw = scratch[pt.offset:pt.offset + ts.nbytes]
        return raw.view(store)[:n].reshape(ts.shape)

    def _check_experts(self, experts, kind):
        c = self.caps
        if not hasattr(experts, "w13_scales") or not hasattr(experts, "num_experts"):
            raise TypeError(f"experts: expected pymoe.ExpertWeights, got "
                            f"{type(experts).__name__}")
        seen = dict(num_experts=experts.num_experts, hidden_size=experts.hidden_size,
                    intermediate_size=experts.intermediate_size, format=experts.format,
                    activation=experts.activation, has_bias=experts.has_bias,
                    swiglu_limit=experts.swiglu_limit, swiglu_alpha=experts.swiglu_alpha)
        for n, v in seen.items():
            if getattr(c, n) != v:
                raise ValueError(f"experts.{n}={v!r} but Caps.{n}={getattr(c, n)!r}")
        want = "cpu" if kind == "host" else "cuda"
        if experts.device != want:
            raise TypeError(f"experts: on {experts.device!r} but x is a {kind} array; "
                            + ("upload once with pymoe.cuda.to_device(experts)"
                               if want == "cuda" else "use host (NumPy) weights"))


def device_cc(x) -> tuple[int, int]:
    """Compute capability of the GPU holding CuPy array ``x``: "90" -> (9, 0)."""
    import cupy
    return tuple(int(v) for v in cupy.cuda.Device(x.device.id).compute_capability)


def check_packed_rows(experts, keys) -> None:
    """Raise (before any launch) when a kernel of ``keys`` reads the packed weight
    rows and ``experts`` were uploaded without them (to_device(packed_rows=False))."""
    if getattr(experts, "has_packed_rows", True):
        return
    for key in keys:
        if (key is not None and key.kernel in ("fc1", "fc2")
                and not geo.gemm_reads_v2(key.gemm, key.block)):
            raise ValueError(
                f"experts: uploaded with packed_rows=False (layout v2 only), but this "
                f"call's {key.kernel} runs the {key.gemm} GEMM at block {key.block}, which "
                "reads the packed rows (the wgmma GEMM reads v2); upload with "
                "pymoe.cuda.to_device(experts) (packed_rows=True) for this GEMM")


def check_x_words(x, regime: str, keys) -> None:
    """The packed regime's tensor-core GEMMs (mma, wgmma) read x as 32-bit words:
    x's data pointer must be 4-byte aligned (rows are, H % 8 == 0).  A view that
    starts at an odd 16-bit element would fault on the GPU, so it is refused here,
    before any launch.  The decode regime and the fma GEMM read 16-bit values."""
    if regime != "packed" or keys[1].gemm not in ("mma", "wgmma"):
        return
    p = data_address(x)
    if p % 4:
        raise ValueError(f"x: data pointer {p:#x} is not 4-byte aligned; the packed "
                         f"regime's {keys[1].gemm} GEMM reads x as 32-bit words: pass an "
                         "aligned x (e.g. a copy)")


def _span(a) -> tuple[int, int]:
    """[start, end) bytes of a C-contiguous NumPy or CuPy array."""
    p = data_address(a)
    return p, p + int(a.nbytes)


def _check_no_overlap(arrays: dict) -> None:
    """What the kernels write (out, scratch) may not share memory with anything
    else they read or write: an aliased ``out`` would overwrite x / ids mid-call."""
    spans = {n: _span(a) for n, a in arrays.items() if a is not None and a.nbytes}
    for w in ("out", "scratch"):
        if w not in spans:
            continue
        lo, hi = spans[w]
        for n, (l2, h2) in spans.items():
            if n != w and lo < h2 and l2 < hi and not (w == "scratch" and n == "out"):
                raise ValueError(f"{w}: overlaps {n} in memory ([{lo:#x}, {hi:#x}) and "
                                 f"[{l2:#x}, {h2:#x})); {w} must be its own buffer")


def validate_expert_map(expert_map: np.ndarray, num_local: int) -> None:
    """global -> local map: values in [-1, num_local), every local id exactly once."""
    m = np.asarray(expert_map)
    if m.size and (m.min() < -1 or m.max() >= num_local):
        raise ValueError(f"expert_map: values must be -1 or in [0, {num_local}), "
                         f"got range [{m.min()}, {m.max()}]")
    counts = np.bincount(m[m >= 0], minlength=num_local)
    if (counts != 1).any():
        bad = int(np.flatnonzero(counts != 1)[0])
        raise ValueError(f"expert_map: local expert {bad} appears {counts[bad]} times, "
                         "expected exactly once")
