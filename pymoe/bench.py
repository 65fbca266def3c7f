"""``python -m pymoe bench``: the layer's time against the memory floor.

    python -m pymoe bench --preset gpt-oss-120b,qwen3-30b-a3b --tokens 1,8,64,512
    python -m pymoe bench --preset tiny --backend ref          # no GPU: the reference

Per (preset, T, mode) row: the median time of ``--repeats`` timed runs, the floor
(bytes of the experts the routing selects, packed FP4 + scales, read once,
divided by the copy bandwidth measured in the same run), TB/s (those bytes over
the time), TFLOP/s (2*T*k*(F*H + H*I) over the time) and the % of the floor.

GPU (``--backend cuda``): every launch is resolved first (tqdm bar), then per T
``--rotate`` input sets (x, ids, weights) are bound to one arena and each gets
its own captured graph; ``graph`` rows time graph replays, ``eager`` rows time
``pymoe.run`` (CUDA events around each call; eager rows also report the host
time of ``run``).  Before every timed call a buffer twice the L2 is rewritten,
so weights come from HBM, and the input set rotates.  The first call of every T
is checked against the reference on its first rows (rows are independent).
CPU (``--backend ref``): eager wall-clock time of the reference; the floor
comes from a host copy.  ``--csv`` writes the rows; ``--plot`` draws time vs T
on log axes with the floor (matplotlib: ``pip install 'pymoe[bench]'``).
The peers' side-by-side harness (Marlin, triton_kernels) lives outside the
package: docs/performance.md says how to run it.
"""
from __future__ import annotations

import csv
import time
from dataclasses import asdict, dataclass

import numpy as np

from . import geometry as geo
from .dtypes import from_float32, to_float32
from .moe import fused_moe, route_topk, run
from .plan import Caps, plan as make_plan
from .presets import PRESETS
from .testing import REL_L2_TOL, compare
from .weights import ExpertWeights, prepare_weights

__all__ = ["Row", "random_layer", "floor_bytes", "layer_flops", "bench", "write_csv",
           "plot", "format_table"]

CHECK_ROWS = 8          # tokens checked against the reference per T (rows are independent)
L2_FLUSH_BYTES = 256 << 20


@dataclass
class Row:
    preset: str
    T: int
    mode: str               # graph / eager (GPU) or ref (CPU)
    backend: str
    format: str
    dtype: str
    regime: str
    us: float               # median time of one forward
    host_us: float          # eager: host time of run(); NaN otherwise
    floor_us: float
    tb_s: float
    tflop_s: float
    pct_floor: float        # floor / time, in %
    check_rel_l2: float     # first rows vs the reference (NaN when not checked)
    ok: bool


def random_layer(preset, fmt: str = "mxfp4", seed: int = 0,
                 num_experts: int | None = None) -> ExpertWeights:
    """Random packed FP4 weights and scales of a preset's shape (no float weights:
    quantizing a real-sized layer would dominate).  Scales 2^(b-127) near
    1/(3 sqrt(K)) keep activations O(1) through both projections."""
    rng = np.random.default_rng(seed)
    e = num_experts or preset.num_experts
    h, i = preset.hidden_size, preset.intermediate_size
    f = geo.fc1_rows(preset.activation, i)
    g = geo.scale_group(fmt)

    def packed(n, k):
        q = rng.integers(0, 256, (e, n, k // 2), dtype=np.uint8)
        if fmt == "mxfp4":
            b = int(round(127 - np.log2(3 * np.sqrt(k))))
            return q, rng.integers(b - 1, b + 1, (e, n, -(-k // g)), dtype=np.uint8), None
        s = rng.integers(0x30, 0x38, (e, n, k // g), dtype=np.uint8)   # e4m3 0.5..0.94
        return q, s, (1.0 / (3 * np.sqrt(k)) * np.ones(e)).astype(np.float32)

    q13, s13, g13 = packed(f, h)
    q2, s2, g2 = packed(h, i)
    b13 = rng.standard_normal((e, f)).astype(np.float32) * .1 if preset.bias else None
    b2 = rng.standard_normal((e, h)).astype(np.float32) * .1 if preset.bias else None
    alpha, limit = geo.swiglu_params(preset.activation)
    return prepare_weights(q13, q2, format=fmt, w13_scales=s13, w2_scales=s2,
                           w13_global=g13, w2_global=g2, activation=preset.activation,
                           w13_layout=preset.w13_layout, w13_bias=b13, w2_bias=b2,
                           swiglu_alpha=alpha, swiglu_limit=limit)


def floor_bytes(experts: ExpertWeights, topk_ids) -> int:
    """Bytes the call must read at least: packed weights + scales of every
    distinct valid expert in ``topk_ids`` (host array), once."""
    ids = np.asarray(topk_ids).reshape(-1)
    touched = np.unique(ids[(ids >= 0) & (ids < experts.num_experts)]).size
    return touched * experts.expert_bytes()


def layer_flops(t: int, top_k: int, experts: ExpertWeights) -> float:
    h, i = experts.hidden_size, experts.intermediate_size
    return 2.0 * t * top_k * (experts.fc1_rows * h + h * i)


def _inputs(rng, t: int, preset, num_experts: int, dtype: str):
    x = from_float32(rng.standard_normal((t, preset.hidden_size)).astype(np.float32), dtype)
    w, ids = route_topk(rng.standard_normal((t, num_experts)), preset.top_k)
    return x, w, ids


def _check(ew_host, x, w, ids, y, dtype: str) -> float:
    """rel. L2 of the first CHECK_ROWS rows of ``y`` against the reference."""
    n = min(CHECK_ROWS, x.shape[0])
    want = fused_moe(x[:n], ew_host, w[:n], ids[:n], backend="ref")
    got = np.asarray(y[:n].get() if hasattr(y, "get") else y[:n])
    c = compare(to_float32(got.view(want.dtype), dtype), to_float32(want, dtype))
    return float(c["rel_l2"])


def _row(preset, t, mode, backend, ew, ids, us, host_us, bw, rel, dtype, regime) -> Row:
    nbytes = floor_bytes(ew, ids)
    floor_us = nbytes / bw * 1e6
    tol = REL_L2_TOL[dtype]
    return Row(preset=preset.name, T=t, mode=mode, backend=backend, format=ew.format,
               dtype=dtype, regime=regime, us=us, host_us=host_us, floor_us=floor_us,
               tb_s=nbytes / (us * 1e-6) / 1e12, tflop_s=layer_flops(t, preset.top_k, ew)
               / (us * 1e-6) / 1e12, pct_floor=100.0 * floor_us / us, check_rel_l2=rel,
               ok=bool(np.isnan(rel) or rel < tol))


def host_copy_bandwidth(nbytes: int = 256 << 20) -> float:
    """Bytes/s of a host memory copy (read + write counted), median of 5."""
    a = np.ones(nbytes, np.uint8)
    b = np.empty_like(a)
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(b, a)
        ts.append(time.perf_counter() - t0)
    return 2 * nbytes / float(np.median(ts))


def device_copy_bandwidth(nbytes: int = 1 << 31) -> float:
    """Bytes/s of a device-to-device copy (read + write counted), this run."""
    import cupy as cp
    a = cp.empty(nbytes, cp.uint8)
    b = cp.empty_like(a)
    for _ in range(3):
        b[...] = a
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    for _ in range(10):
        b[...] = a
    e1.record()
    e1.synchronize()
    return 2 * nbytes * 10 / (cp.cuda.get_elapsed_time(e0, e1) / 1e3)


def _bench_ref(preset, tokens, ew, dtype, repeats, rng, bw, block_size=None,
               decode_max_tokens=None) -> list[Row]:
    rows = []
    caps = Caps.for_weights(ew, max_tokens=max(tokens), top_k=preset.top_k, dtype=dtype,
                            block_size_m=block_size, decode_max_tokens=decode_max_tokens)
    p = make_plan(caps)
    scratch = np.empty(p.scratch_nbytes, np.uint8)
    for t in tokens:
        x, w, ids = _inputs(rng, t, preset, ew.num_experts, dtype)
        b = p.bind(scratch=scratch, x=x, experts=ew, topk_weights=w, topk_ids=ids)
        ts = []
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            run(b)
            ts.append(time.perf_counter() - t0)
        us = float(np.median(ts)) * 1e6
        rows.append(_row(preset, t, "ref", "ref", ew, ids, us, us, bw, float("nan"), dtype,
                         b.regime))
    return rows


def _bench_cuda(preset, tokens, ew_host, dtype, repeats, rng, bw, modes, rotate,
                progress, block_size=None, decode_max_tokens=None) -> list[Row]:
    import cupy as cp

    from . import cuda
    ew = cuda.to_device(ew_host)
    caps = Caps.for_weights(ew, max_tokens=max(tokens), top_k=preset.top_k, dtype=dtype,
                            block_size_m=block_size, decode_max_tokens=decode_max_tokens)
    p = make_plan(caps)
    cuda.prewarm(p, experts=ew, progress=progress)      # the tqdm bar while it compiles
    scratch = cuda.allocate_scratch(p)
    flush = cp.empty(L2_FLUSH_BYTES, cp.uint8)
    s = cp.cuda.Stream(non_blocking=True)
    rows = []
    for t in tokens:
        sets = []
        for _ in range(max(1, rotate)):
            x, w, ids = _inputs(rng, t, preset, ew.num_experts, dtype)
            with s:
                xd, wd, idd = cp.asarray(x), cp.asarray(w), cp.asarray(ids)
                out = cp.empty_like(xd)
            b = p.bind(scratch=scratch, x=xd, experts=ew, topk_weights=wd, topk_ids=idd,
                       out=out)
            sets.append((x, w, ids, b))
        run(sets[0][3], stream=s)                       # first call: checked
        s.synchronize()
        rel = _check(ew_host, *sets[0][:3], sets[0][3].out, dtype)
        graphs = []
        if "graph" in modes:
            for *_, b in sets:
                run(b, stream=s)
                s.begin_capture()
                run(b, stream=s)
                graphs.append(s.end_capture())
        for mode in modes:
            ts, hs = [], []
            for r in range(repeats):
                i = r % len(sets)
                with s:
                    flush.fill(r & 0xFF)                # weights come from HBM, not L2
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record(s)
                if mode == "graph":
                    graphs[i].launch(s)
                else:
                    h0 = time.perf_counter()
                    run(sets[i][3], stream=s)
                    hs.append(time.perf_counter() - h0)
                e1.record(s)
                e1.synchronize()
                ts.append(cp.cuda.get_elapsed_time(e0, e1) * 1e3)
            host = float(np.median(hs)) * 1e6 if hs else float("nan")
            rows.append(_row(preset, t, mode, "cuda", ew_host, sets[0][2],
                             float(np.median(ts)), host, bw, rel, dtype, sets[0][3].regime))
    return rows


def bench(presets, tokens, *, backend: str = "auto", fmt: str = "mxfp4",
          dtype: str = "bfloat16", modes=("graph", "eager"), repeats: int = 30,
          rotate: int = 4, num_experts: int | None = None, seed: int = 0,
          progress: bool = True, block_size: int | None = None,
          decode_max_tokens: int | None = None) -> tuple[list[Row], float]:
    """(rows, copy bandwidth B/s) for every preset x T (see the module docstring);
    ``block_size`` pins the packed regime's block of routes (Caps.block_size_m),
    ``decode_max_tokens`` the decode regime's last T (Caps.decode_max_tokens)."""
    if backend == "auto":
        from . import cuda
        backend = "cuda" if cuda.is_available() else "ref"
    if backend == "cuda":
        from . import cuda
        cuda.require_gpu("pymoe bench --backend cuda")
        bw = device_copy_bandwidth()
    else:
        bw = host_copy_bandwidth()
    rng = np.random.default_rng(seed + 1)
    rows = []
    for name in presets:
        pr = PRESETS[name]
        ew = random_layer(pr, fmt, seed, num_experts)
        if backend == "cuda":
            rows += _bench_cuda(pr, tokens, ew, dtype, repeats, rng, bw, modes, rotate,
                                progress, block_size, decode_max_tokens)
        else:
            rows += _bench_ref(pr, tokens, ew, dtype, repeats, rng, bw, block_size,
                               decode_max_tokens)
    return rows, bw


def write_csv(rows: list[Row], path: str) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(asdict(rows[0])))
        w.writeheader()
        w.writerows(asdict(r) for r in rows)


def plot(rows: list[Row], path: str) -> None:
    """Time vs T on log axes, one line per (preset, mode), the floor dashed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n, name in enumerate(dict.fromkeys(r.preset for r in rows)):
        color = f"C{n}"
        mine = [r for r in rows if r.preset == name]
        for m, mode in enumerate(dict.fromkeys(r.mode for r in mine)):
            rs = sorted((r for r in mine if r.mode == mode), key=lambda r: r.T)
            ax.plot([r.T for r in rs], [r.us for r in rs], marker="os^"[m % 3], color=color,
                    label=f"{name} {mode}")
        fl = sorted({(r.T, r.floor_us) for r in mine})
        ax.plot([t for t, _ in fl], [f for _, f in fl], ls="--", color=color, lw=1)
    ax.plot([], [], ls="--", color="gray", label="floors (bytes / copy bandwidth)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("tokens T")
    ax.set_ylabel("time per layer (µs)")
    ax.grid(True, which="both", alpha=.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def format_table(rows: list[Row], bw: float) -> str:
    lines = [f"copy bandwidth {bw / 1e12:.2f} TB/s (read + write)",
             f"{'preset':16} {'T':>5} {'mode':6} {'regime':7} {'us':>10} {'host us':>8} "
             f"{'floor us':>9} {'%floor':>7} {'TB/s':>6} {'TFLOP/s':>8} {'check':>9}"]
    for r in rows:
        chk = "-" if np.isnan(r.check_rel_l2) else f"{r.check_rel_l2:.1e}"
        lines.append(f"{r.preset:16} {r.T:>5} {r.mode:6} {r.regime:7} {r.us:>10.1f} "
                     f"{r.host_us:>8.1f} {r.floor_us:>9.1f} {r.pct_floor:>6.1f}% "
                     f"{r.tb_s:>6.2f} {r.tflop_s:>8.1f} {chk:>9}"
                     + ("" if r.ok else "  FAILED check"))
    return "\n".join(lines)
