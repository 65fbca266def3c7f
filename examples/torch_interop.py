"""torch tensors in and out of pymoe, no copies (data pointers checked).

    python examples/torch_interop.py

x (bf16), topk_weights (fp32), topk_ids (int64, as torch.topk returns them) and
out (bf16) are torch CUDA tensors; pymoe views them through DLPack (bf16 as
uint16 bits) and writes ``out`` in place on torch's current stream.  Exits 0 with
a note when torch or a GPU is absent.
"""
import sys

import numpy as np

import pymoe

try:
    import torch
except ImportError:
    print("torch is not installed: nothing to show")
    sys.exit(0)
if not (torch.cuda.is_available() and pymoe.cuda.is_available()):
    print("no CUDA GPU (torch + numba-cuda + cupy): nothing to show")
    sys.exit(0)

E, H, I, k, T = 8, 256, 128, 2, 24
rng = np.random.default_rng(0)
experts = pymoe.prepare_weights(rng.standard_normal((E, 2 * I, H)).astype(np.float32) / 16,
                                rng.standard_normal((E, H, I)).astype(np.float32) / 11)
ew = pymoe.cuda.to_device(experts)

x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16)
logits = torch.randn(T, E, device="cuda")
topk_weights, topk_ids = torch.topk(torch.softmax(logits, -1), k)       # int64 ids
topk_weights = (topk_weights / topk_weights.sum(-1, keepdim=True)).contiguous()
out = torch.full_like(x, float("nan"))

caps = pymoe.Caps.for_weights(ew, max_tokens=64, top_k=k)
plan = pymoe.plan(caps)
scratch = pymoe.cuda.allocate_scratch(plan)
b = plan.bind(scratch=scratch, x=x, experts=ew, topk_weights=topk_weights,
              topk_ids=topk_ids, out=out)
assert b.x.data.ptr == x.data_ptr() and b.out.data.ptr == out.data_ptr(), "copied!"
assert b.topk_ids.data.ptr == topk_ids.data_ptr()
y = pymoe.run(b, stream=torch.cuda.current_stream())     # torch streams are accepted
torch.cuda.synchronize()

ref = pymoe.fused_moe(x.view(torch.int16).cpu().numpy().view(np.uint16), experts,
                      topk_weights.cpu().numpy(), topk_ids.cpu().numpy())
got = out.float().cpu().numpy()
want = (ref.astype(np.uint32) << 16).view(np.float32)
err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
print(f"torch in/out, zero-copy: x ptr {x.data_ptr():#x} == bound {b.x.data.ptr:#x}; "
      f"out written in place; rel_l2 vs ref = {err:.2e}")
sys.exit(0 if err < 1e-2 and not torch.isnan(out).any() else 1)
