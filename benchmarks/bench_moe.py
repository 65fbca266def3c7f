"""pymoe vs the HBM floor, the tensor-core ceiling and a torch baseline, side by side.

For each (preset, T): the median of CUDA-event timed repeats after warm-up of
  pymoe   the CUDA twin (W4A16: FP4 weights, bf16 activations), eager run()
          (packed regime: tensor-core block GEMM, PYMOE_GEMM=mma)
  fma     packed regime only: the same call with PYMOE_GEMM=fma (the plain
          CUDA-core block GEMM), for the side-by-side ratio
  floor   bytes of the experts the call touches (packed weights + scales, read
          once) / the device-to-device copy bandwidth measured in this run
  torch   a torch W16A16 baseline on the same routing: weights pre-dequantized
          to bf16, per-expert index_select + matmul + silu/swiglu + index_add
Prints a table (last) and writes CSV.  Inputs are random, never zeros.

    python benchmarks/bench_moe.py [--csv bench_moe.csv] [--repeats 50]
"""
from __future__ import annotations

import argparse
import csv
import os

import cupy as cp
import numpy as np

import pymoe
from pymoe.bench import device_copy_bandwidth, random_layer
from pymoe.presets import PRESETS


def time_ms(fn, repeats):
    for _ in range(5):
        fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(repeats):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1))
    return float(np.median(ts))


def torch_weights(ew):
    """Every expert's weights as bf16 torch tensors, dequantized on the GPU once
    per preset (pymoe.cuda.dequant.dequant, float32 -> bf16)."""
    import torch
    from pymoe.cuda.dequant import dequant
    return {n: torch.from_dlpack(dequant(ew, n)).bfloat16() for n in ("w13", "w2")}


def torch_baseline(ew, tw_all, x_bits, w, ids):
    """Returns a callable running a bf16 torch MoE (dequantized weights)."""
    import torch
    dev = torch.device("cuda")
    used = np.unique(ids.get())
    w13 = {int(e): tw_all["w13"][int(e)] for e in used}
    w2 = {int(e): tw_all["w2"][int(e)] for e in used}
    b13 = None if ew.w13_bias is None else torch.tensor(ew.w13_bias, device=dev)
    b2 = None if ew.w2_bias is None else torch.tensor(ew.w2_bias, device=dev)
    x = torch.from_dlpack(x_bits).view(torch.bfloat16)
    tw = torch.from_dlpack(w)
    ti = torch.from_dlpack(ids).long()
    inter = ew.intermediate_size

    def run():
        y = torch.zeros(x.shape, dtype=torch.float32, device=dev)
        for e in w13:
            tok, j = torch.nonzero(ti == e, as_tuple=True)
            h = x[tok] @ w13[e].T
            if b13 is not None:
                h = h + b13[e]
            g, u = h[:, :inter].float(), h[:, inter:].float()
            if ew.activation == "swigluoai":
                g, u = g.clamp(max=7.0), u.clamp(-7.0, 7.0)
                a = g * torch.sigmoid(1.702 * g) * (u + 1)
            else:
                a = torch.nn.functional.silu(g) * u
            h2 = a.bfloat16() @ w2[e].T
            if b2 is not None:
                h2 = h2 + b2[e]
            y.index_add_(0, tok, h2.float() * tw[tok, j, None])
        return y.bfloat16()
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default="bench_moe.csv")
    ap.add_argument("--repeats", type=int, default=50)
    a = ap.parse_args()
    bw = device_copy_bandwidth()
    rows = []
    for preset, tokens in (("gpt-oss-20b", (1, 4, 8, 64, 512, 4096)),
                           ("qwen3-30b-a3b", (1, 8, 64, 512, 4096))):
        pr = PRESETS[preset]
        ew_h = random_layer(pr, "mxfp4")
        ew = pymoe.cuda.to_device(ew_h)
        try:
            tw_all = torch_weights(ew)
        except ImportError:
            tw_all = None
        caps = pymoe.Caps.for_weights(ew, max_tokens=max(tokens), top_k=pr.top_k)
        plan = pymoe.plan(caps)
        pymoe.cuda.prewarm(plan, progress=False)
        scratch = pymoe.cuda.allocate_scratch(plan)
        rng = np.random.default_rng(1)
        for t in tokens:
            x = cp.asarray((rng.standard_normal((t, pr.hidden_size)).astype(np.float32)
                            .view(np.uint32) >> 16).astype(np.uint16))
            w, ids = pymoe.route_topk(rng.standard_normal((t, pr.num_experts)), pr.top_k)
            w, ids = cp.asarray(w), cp.asarray(ids)
            out = cp.empty_like(x)
            b = plan.bind(scratch=scratch, x=x, experts=ew, topk_weights=w, topk_ids=ids,
                          out=out)
            ms = time_ms(lambda: pymoe.run(b), a.repeats)
            fma_ms = float("nan")
            if b.regime == "packed":
                os.environ["PYMOE_GEMM"] = "fma"
                try:
                    bf = plan.bind(scratch=scratch, x=x, experts=ew, topk_weights=w,
                                   topk_ids=ids, out=out)
                    fma_ms = time_ms(lambda: pymoe.run(bf), max(5, a.repeats // 5))
                finally:
                    os.environ.pop("PYMOE_GEMM")
            touched = len(np.unique(ids.get()))
            nbytes = touched * ew_h.expert_bytes()
            floor_ms = nbytes / bw * 1e3
            flops = 2 * t * pr.top_k * (ew.fc1_rows * pr.hidden_size
                                        + pr.hidden_size * pr.intermediate_size)
            tms = float("nan")
            if tw_all is not None:
                tms = time_ms(torch_baseline(ew_h, tw_all, x, w, ids), max(5, a.repeats // 5))
            rows.append(dict(preset=preset, T=t, regime=b.regime, pymoe_ms=ms,
                             floor_ms=floor_ms, floor_frac=floor_ms / ms,
                             tflops=flops / ms / 1e9, fma_ms=fma_ms, vs_fma=fma_ms / ms,
                             torch_ms=tms, vs_torch=tms / ms))
    with open(a.csv, "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    print(f"copy bandwidth {bw / 1e12:.2f} TB/s (read + write)")
    print(f"{'preset':14} {'T':>5} {'regime':7} {'pymoe ms':>9} {'floor ms':>9} "
          f"{'%floor':>7} {'TFLOP/s':>8} {'fma ms':>8} {'fma/pymoe':>9} {'torch ms':>9} "
          f"{'torch/pymoe':>11}")
    for r in rows:
        print(f"{r['preset']:14} {r['T']:>5} {r['regime']:7} {r['pymoe_ms']:>9.3f} "
              f"{r['floor_ms']:>9.3f} {100 * r['floor_frac']:>6.1f}% {r['tflops']:>8.1f} "
              f"{r['fma_ms']:>8.3f} {r['vs_fma']:>9.2f} {r['torch_ms']:>9.3f} "
              f"{r['vs_torch']:>11.2f}")


if __name__ == "__main__":
    main()
