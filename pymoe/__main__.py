"""pymoe command line.

    python -m pymoe demo [--preset tiny] [--tokens 16] [--backend auto]
    python -m pymoe plan --preset gpt-oss-120b --max-tokens 64 [--block-size 8]
    python -m pymoe prewarm --preset gpt-oss-20b --max-tokens 256
    python -m pymoe bench --preset gpt-oss-120b,qwen3-30b-a3b --tokens 1,8,64,512
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import pymoe
from pymoe.bench import random_layer
from pymoe.geometry import gate_rows, swiglu_params
from pymoe.presets import PRESETS

# FP4 E2M1 codes, written out here so the demo's float64 check does not share
# pymoe.formats' decoder.
_E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def _deq64(packed, scales, fmt, glob):
    v = np.stack([_E2M1[packed & 15], _E2M1[packed >> 4]], -1).reshape(packed.shape[0], -1)
    if fmt == "mxfp4":
        s = np.where(scales == 255, np.nan, 2.0 ** (scales.astype(np.float64) - 127))
        return v * np.repeat(s, 32, -1)[:, :v.shape[1]]
    b = scales.astype(np.int64)
    ex, man = (b >> 3) & 15, b & 7
    s = np.where(ex == 0, man / 8 * 2.0 ** -6, (1 + man / 8) * 2.0 ** (ex - 7))
    return v * np.repeat(s, 16, -1) * glob


def float64_forward(x64, ew, w, ids):
    """Independent float64 evaluation (docs/design.md section 1, no intermediate
    rounding)."""
    t, k = ids.shape
    y = np.zeros((t, ew.hidden_size))
    inter = ew.intermediate_size
    for e in np.unique(ids[(ids >= 0) & (ids < ew.num_experts)]):
        if ew.format == "nvfp4":
            g = np.asarray(ew.w13_global, np.float64)[e]
            col = np.where(np.arange(ew.fc1_rows) < gate_rows(ew.activation, inter),
                           g[0], g[1])
            w13 = _deq64(ew.w13[e], ew.w13_scales[e], "nvfp4", col[:, None])
            w2 = _deq64(ew.w2[e], ew.w2_scales[e], "nvfp4", float(ew.w2_global[e]))
        else:
            w13 = _deq64(ew.w13[e], ew.w13_scales[e], "mxfp4", 1.0)
            w2 = _deq64(ew.w2[e], ew.w2_scales[e], "mxfp4", 1.0)
        tt, jj = np.nonzero(ids == e)
        h = x64[tt] @ w13.T + (0 if ew.w13_bias is None else ew.w13_bias[e])
        if ew.activation == "relu2":
            a = np.maximum(h, 0) ** 2
        else:
            gate, up = h[:, :inter], h[:, inter:]
            if ew.swiglu_limit is not None:
                gate, up = np.minimum(gate, ew.swiglu_limit), np.clip(
                    up, -ew.swiglu_limit, ew.swiglu_limit)
            a = (gate / (1 + np.exp(-gate)) * up if ew.activation == "silu" else
                 gate / (1 + np.exp(-ew.swiglu_alpha * gate)) * (up + 1))
        h2 = a @ w2.T + (0 if ew.w2_bias is None else ew.w2_bias[e])
        np.add.at(y, tt, w[tt, jj][:, None] * h2)
    return y


def _bf16(a32):
    u = np.ascontiguousarray(a32, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def cmd_demo(a) -> int:
    preset = PRESETS[a.preset]
    backend = a.backend
    if backend == "auto":
        from pymoe import cuda
        backend = "cuda" if cuda.is_available() else "ref"
    t0 = time.perf_counter()
    ew = random_layer(preset, a.format, a.seed, a.num_experts)
    t_prep = time.perf_counter() - t0
    rng = np.random.default_rng(a.seed + 1)
    x_bits = _bf16(rng.standard_normal((a.tokens, preset.hidden_size)))   # bf16 as bits
    w, ids = pymoe.route_topk(rng.standard_normal((a.tokens, ew.num_experts)), preset.top_k)
    rows = []
    if backend == "cuda":
        from pymoe import cuda
        import cupy as cp
        ew_d = cuda.to_device(ew)
        xd, wd, idd = cp.asarray(x_bits), cp.asarray(w), cp.asarray(ids)
        pymoe.fused_moe(xd, ew_d, wd, idd, backend="cuda")     # compile + warm
        cp.cuda.get_current_stream().synchronize()
        t0 = time.perf_counter()
        y = pymoe.fused_moe(xd, ew_d, wd, idd, backend="cuda")
        cp.cuda.get_current_stream().synchronize()
        rows.append(("cuda", time.perf_counter() - t0, _f32(y.get())))
    t0 = time.perf_counter()
    y_ref = pymoe.fused_moe(x_bits, ew, w, ids, backend="ref")
    rows.append(("ref", time.perf_counter() - t0, _f32(y_ref)))
    y64 = float64_forward(_f32(x_bits).astype(np.float64), ew, w.astype(np.float64), ids)
    nrm = np.linalg.norm(y64)
    print(f"preset {preset.name}: T={a.tokens} E={ew.num_experts} k={preset.top_k} "
          f"H={ew.hidden_size} I={ew.intermediate_size} {ew.format} {ew.activation} bf16"
          f"  (weights {ew.nbytes / 2**20:.1f} MiB prepared in {t_prep:.2f} s)")
    print(f"{'backend':8} {'time':>10} {'rel_l2 vs float64':>18} {'rel_l2 vs ref':>14}")
    ok = True
    for name, dt, y in rows:
        err = float(np.linalg.norm(y - y64) / nrm)
        vs_ref = float(np.linalg.norm(y - rows[-1][2]) / np.linalg.norm(rows[-1][2]))
        ok &= err < 1e-2 and vs_ref < 1e-2
        print(f"{name:8} {dt * 1e3:>8.2f}ms {err:>18.2e} {vs_ref:>14.2e}")
    print("OK" if ok else "FAILED: error above the bf16 bound 1e-2")
    return 0 if ok else 1


def _caps(a):
    preset = PRESETS[a.preset]
    alpha, limit = swiglu_params(preset.activation)
    return pymoe.Caps(max_tokens=a.max_tokens, top_k=preset.top_k,
                      num_experts=preset.num_experts, hidden_size=preset.hidden_size,
                      intermediate_size=preset.intermediate_size, format=a.format,
                      activation=preset.activation, w13_layout=preset.w13_layout,
                      has_bias=preset.bias, block_size_m=a.block_size,
                      decode_max_tokens=a.decode_max_tokens,
                      swiglu_limit=limit, swiglu_alpha=alpha)


def cmd_plan(a) -> int:
    print(pymoe.plan(_caps(a)).describe())
    return 0


def cmd_prewarm(a) -> int:
    from pymoe import cuda
    r = cuda.prewarm(pymoe.plan(_caps(a)))
    print(f"compiled {r.compiled}  disk hits {r.disk}  memory hits {r.memory}  "
          f"in {r.seconds:.2f} s")
    return 0


def cmd_bench(a) -> int:
    from pymoe import bench
    rows, bw = bench.bench(a.preset, a.tokens, backend=a.backend, fmt=a.format,
                           dtype=a.dtype, modes=a.mode, repeats=a.repeats, rotate=a.rotate,
                           num_experts=a.num_experts, progress=not a.no_progress,
                           block_size=a.block_size, decode_max_tokens=a.decode_max_tokens)
    if a.csv:
        bench.write_csv(rows, a.csv)
    if a.plot:
        bench.plot(rows, a.plot)
    print(bench.format_table(rows, bw))
    return 0 if all(r.ok for r in rows) else 1


def _int_list(text: str) -> list[int]:
    try:
        v = [int(t) for t in text.split(",") if t]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated ints, got {text!r}") \
            from None
    if not v or min(v) < 1:
        raise argparse.ArgumentTypeError(f"token counts must be >= 1, got {text!r}")
    return v


def _choices_list(allowed):
    def parse(text: str) -> list[str]:
        v = [t for t in text.split(",") if t]
        bad = [t for t in v if t not in allowed]
        if not v or bad:
            raise argparse.ArgumentTypeError(f"{bad or text!r}: expected comma-separated "
                                             f"names from {sorted(allowed)}")
        return v
    return parse


def _int_at_least(lo: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, got {v}")
        return v
    return parse


def _check_args(ap, a) -> None:
    """Cross-argument checks, reported by the subcommand's parser like argparse's
    own (usage, message, exit 2, no traceback)."""
    ap = ap.subparsers[a.cmd]
    preset = PRESETS[a.preset] if a.cmd != "bench" else None
    if a.cmd == "demo" and a.num_experts is not None:
        if not preset.top_k <= a.num_experts <= preset.num_experts:
            ap.error(f"--num-experts {a.num_experts}: preset {preset.name!r} needs "
                     f"top_k={preset.top_k} <= N <= its {preset.num_experts} experts")
    if a.cmd == "demo" and a.backend == "cuda":
        from pymoe import cuda
        if not cuda.is_available():
            ap.error(f"--backend cuda: no CUDA GPU: {cuda.unavailable_reason()}")
    if a.cmd == "bench":
        if a.num_experts is not None:
            k = max(PRESETS[p].top_k for p in a.preset)
            if a.num_experts < k:
                ap.error(f"--num-experts {a.num_experts}: the presets need top_k={k} <= N")
        if a.backend == "cuda":
            from pymoe import cuda
            if not cuda.is_available():
                ap.error(f"--backend cuda: no CUDA GPU: {cuda.unavailable_reason()}")
        if a.plot:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                ap.error("--plot needs matplotlib: pip install 'pymoe[bench]'")
    if a.cmd == "prewarm":
        from pymoe import cuda
        if not cuda.is_available():
            ap.error(f"prewarm needs a CUDA GPU: {cuda.unavailable_reason()}")


def main(argv=None) -> int:
    from pymoe.geometry import BLOCK_SIZES, FORMATS
    ap = argparse.ArgumentParser(prog="python -m pymoe", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="run a random layer and check it against float64")
    ap.subparsers = {"demo": d}
    d.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    d.add_argument("--tokens", type=_int_at_least(1), default=16)
    d.add_argument("--format", choices=list(FORMATS), default="mxfp4")
    d.add_argument("--backend", choices=["auto", "ref", "cuda"], default="auto")
    d.add_argument("--num-experts", type=_int_at_least(1), default=None,
                   help="fewer experts than the preset (to fit a small machine)")
    d.add_argument("--seed", type=_int_at_least(0), default=0)
    for name in ("plan", "prewarm"):
        p = ap.subparsers[name] = sub.add_parser(name)
        p.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
        p.add_argument("--max-tokens", type=_int_at_least(1), default=64)
        p.add_argument("--block-size", type=int, choices=list(BLOCK_SIZES), default=None)
        p.add_argument("--decode-max-tokens", type=_int_at_least(0), default=None,
                       help="pin the decode regime's last T (0: every T packed)")
        p.add_argument("--format", choices=list(FORMATS), default="mxfp4")
    bp = ap.subparsers["bench"] = sub.add_parser(
        "bench", help="time the layer against the memory floor (pymoe/bench.py)")
    bp.add_argument("--preset", type=_choices_list(PRESETS), default=["gpt-oss-120b"],
                    help="comma list of layer shapes: " + ", ".join(sorted(PRESETS))
                    + " (default gpt-oss-120b)")
    bp.add_argument("--tokens", type=_int_list, default=[1, 8, 64, 512],
                    help="comma list of token counts T (default 1,8,64,512)")
    bp.add_argument("--backend", choices=["auto", "ref", "cuda"], default="auto",
                    help="cuda when a GPU is there (auto), else the NumPy reference")
    bp.add_argument("--format", choices=list(FORMATS), default="mxfp4",
                    help="weight format (random weights of the preset's shape)")
    bp.add_argument("--dtype", choices=["bfloat16", "float16"], default="bfloat16",
                    help="activation dtype")
    bp.add_argument("--mode", type=_choices_list(("graph", "eager")), default=["graph", "eager"],
                    help="comma list: graph (CUDA-graph replay) and / or eager calls")
    bp.add_argument("--repeats", type=_int_at_least(1), default=30,
                    help="timed runs a row (the median is reported)")
    bp.add_argument("--rotate", type=_int_at_least(1), default=4,
                    help="input sets cycled through (each its own graph)")
    bp.add_argument("--num-experts", type=_int_at_least(1), default=None,
                    help="fewer experts than the presets (a small machine)")
    bp.add_argument("--block-size", type=int, choices=list(BLOCK_SIZES), default=None,
                    help="pin the packed regime's block of routes (default: chosen per T, "
                    "geometry.BLOCK_MAX_MEAN)")
    bp.add_argument("--decode-max-tokens", type=_int_at_least(0), default=None,
                    help="pin the decode regime's last T (0: every T packed; default: "
                    "Caps.decode_cut, from the layer's routed weight bytes)")
    bp.add_argument("--csv", default=None, help="also write the rows to this CSV file")
    bp.add_argument("--plot", default=None, help="PNG: time vs T, log axes, floor drawn")
    bp.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)
    _check_args(ap, a)
    try:
        return {"demo": cmd_demo, "plan": cmd_plan, "prewarm": cmd_prewarm,
                "bench": cmd_bench}[a.cmd](a)
    except BrokenPipeError:            # `python -m pymoe plan | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
