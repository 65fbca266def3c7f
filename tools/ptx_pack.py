"""Compile a bench's kernels here (no GPU) and install them into the device's
disk cache there, so a device call spends its minutes timing, not compiling.

    python tools/ptx_pack.py pack DIR --preset gpt-oss-120b,qwen3-30b-a3b \\
        --tokens 64,512,4096 [--format mxfp4] [--dtype bfloat16] [--block-size B]
        [--decode-max-tokens T]      # in the source tree to pack (cwd or --tree)
    python3 tools/ptx_pack.py install DIR [--tree SRC]     # on the device

pack writes one JSON file a LaunchKey ({"key": ..., "ptx": ...}): every key
`pymoe bench` prewarms for those presets and token counts (Caps.reachable_keys
at max(tokens), the GEMMs the random layer's scale bytes select on sm_90;
--preset "" for none), and with --case SPEC (repeatable) the keys one of
tests/cuda/test_wgmma.py's cases binds ("T-H-I-E-K-DTYPE-FORMAT-ACT-LAYOUT[-GEMM]
[-packed]", bias on, GEMM default wgmma, "packed": the packed regime at any T),
with --gpu-suite those of every differential case of tests/cuda/test_gpu.py
(what auto picks on sm_90 for its weights), with --fuzz those of every problem
tests/cuda/test_fuzz.py draws on a GPU; --jobs N compiles N at once.
install recomputes each key's disk-cache path on the device (its numba, driver
and the tree's source hash) and writes the entry there, so the bench's prewarm
reads it from disk.  A key the pack missed is still compiled on the device.
Each entry records the source hash it was compiled from ("src"); install skips
entries of another source (an edit after packing), and pack compiles them again.

With `pip install nvidia-nvvm==13.0.88` here, Numba uses the H200's own NVVM
release (CUDA 13.0, build CL-36424714: PTX ISA 9.0, the same header as the
device's compile), and pack says which release made each pack. On 2026-12-02
(docs/performance.md step 18) install --check found that PTX equal to the H200's
own compile but for symbol names (the mangled kernel name, Numba's shared-array
counter), which --check leaves out. With the default wheel (toolkit 13.5, PTX
ISA 9.5) the device's driver takes ISA 9.0 at most, so pack lowers the .version
line. The code is the same NVVM pipeline one minor release on (--check in
install compiles one key there and compares: on 2026-12-01 the two differed in
register numbering and order only, and main's bench figures from packed PTX
matched the device-compiled ones within 1.4%).

With the 13.5 wheel, not for timing the decode regime: later that day
(docs/performance.md step 9) gpt-oss-120b's decode at T = 2 / 4 / 8 ran 91.3 /
148.9 / 254.6 us from packed PTX and 76.1 / 126.5 / 224.4 us from the H200's own
compile, the same source, in one session; qwen3's within 1%. Time what users
run: compile on the device (tools/bench_revs.sh with WARM=1), and pack for test
runs only; or pack with NVVM 13.0.88, whose PTX is the device's own.
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import re
import sys


def _tree(a) -> None:
    sys.path.insert(0, os.path.abspath(a.tree))
    import pymoe
    where = os.path.dirname(os.path.dirname(os.path.abspath(pymoe.__file__)))
    if where != os.path.abspath(a.tree):
        raise SystemExit(f"pymoe imports from {where}, not --tree {a.tree}: run it with "
                         f"PYTHONPATH={a.tree}")


def _fresh(d: dict, src: str) -> bool:
    """Whether a packed entry was compiled from the source whose hash is ``src``
    (launch._source_hash: pymoe/cuda and geometry.py).  install files every entry
    under the tree's own hash, so an entry packed before an edit of that source
    would time the old kernel: such entries are skipped (the device compiles
    them).  Entries without a hash (packs from before 2026-12-05) pass."""
    return d.get("src", src) == src


def _key_to_json(key) -> dict:
    return dataclasses.asdict(key)


def _key_from_json(d: dict):
    from pymoe.geometry import LaunchKey
    return LaunchKey(**d)


def bench_keys(a) -> list:
    """Every LaunchKey `pymoe bench` prewarms for a.preset x a.tokens (or, with
    a.peer_layer, what .peers/bench_peers.py's pymoe runs), in first-seen order."""
    from pymoe.bench import random_layer
    from pymoe.cuda.device_weights import _scale_bytes
    from pymoe.plan import Caps
    from pymoe.presets import PRESETS
    tokens = [int(t) for t in a.tokens.split(",")]
    keys = []
    for name in a.preset.split(","):
        pr = PRESETS[name]
        if a.peer_layer:        # .peers/bench_peers.py's pymoe: silu, gate_up, no bias
            pr = dataclasses.replace(pr, activation="silu", w13_layout="gate_up", bias=False)
        ew = random_layer(pr, a.format, 0, None)
        caps = Caps.for_weights(ew, max_tokens=max(tokens), top_k=pr.top_k, dtype=a.dtype,
                                block_size_m=a.block_size,
                                decode_max_tokens=a.decode_max_tokens)
        gemms = caps.gemms((9, 0), _scale_bytes(ew))
        for k in caps.reachable_keys(gemms):
            if k not in keys:
                keys.append(k)
        del ew
    return keys


def problem_keys(p, gemm=None, max_tokens=None) -> list:
    """The keys tests/cuda/diff.py's run_problem binds for problem p on sm_90
    (gemm: PYMOE_GEMM's; None: what auto picks for p's weights; max_tokens: the
    caps' as run_problem takes it)."""
    import numpy as np
    import pymoe
    from pymoe.cuda.device_weights import _scale_bytes
    from tests.cuda.diff import problem_caps
    case = p.case
    caps = problem_caps(p, max_tokens)
    saved = os.environ.get("PYMOE_GEMM")
    os.environ["PYMOE_GEMM"] = gemm or caps.gemms((9, 0), _scale_bytes(p.experts))[0]
    try:
        plan = pymoe.plan(caps)
        x = p.x.view(np.uint16) if case.dtype == "bfloat16" else p.x
        b = plan.bind(scratch=np.zeros(plan.scratch_nbytes, np.uint8), x=x,
                      experts=p.experts, topk_weights=p.topk_weights, topk_ids=p.topk_ids,
                      out=np.zeros_like(x), expert_map=p.expert_map)
    finally:
        if saved is None:
            del os.environ["PYMOE_GEMM"]
        else:
            os.environ["PYMOE_GEMM"] = saved
    return [k for k in b.keys if k is not None]


def case_keys(spec: str) -> list:
    """problem_keys of a test_wgmma.py case id (see the module docstring; a
    trailing "-packed": the packed regime at every T, Case.packed)."""
    from tests.problems import Case, make_problem
    f = spec.split("-")
    t, h, i, e, k = (int(v) for v in f[:5])
    packed = "packed" in f[9:]
    rest = [v for v in f[9:] if v != "packed"]
    p = make_problem(Case(t, h, i, e, k, dtype=f[5], format=f[6], activation=f[7],
                          layout=f[8], bias=True, packed=packed, seed=t))
    return problem_keys(p, rest[0] if rest else "wgmma")


def cases_keys(cases, gemm=None) -> list:
    """problem_keys of each Case of ``cases`` (under PYMOE_GEMM ``gemm``; None: auto),
    each key once, in first-seen order."""
    from tests.problems import make_problem
    keys = []
    for case in cases:
        keys += [k for k in problem_keys(make_problem(case), gemm) if k not in keys]
    return keys


def case_list_keys(ref: str) -> list:
    """problem_keys of every Case in a test module's list, "MODULE:NAME[:GEMM]" (e.g.
    tests.cuda.test_self_pack:GPU_KEY_CASES): as auto picks the GEMM, or as under
    PYMOE_GEMM=GEMM where it is given (tests.cuda.test_gpu:FOLD_CASES:mma: the fold
    test's table path, which it runs beside auto's)."""
    import importlib
    mod, name, *gemm = ref.split(":")
    return cases_keys(getattr(importlib.import_module(mod), name), *gemm)


def suite_keys() -> list:
    """problem_keys of tests/cuda/test_gpu.py's differential cases."""
    from tests.cuda.test_gpu import _families
    return cases_keys(_families())


def fuzz_keys() -> list:
    """problem_keys of every problem tests/cuda/test_fuzz.py draws on a GPU (its
    seed and example count, PYMOE_FUZZ_SEED / _EXAMPLES / _SHARD as there): the
    test runs here with its check_problem replaced by a collector, so the draws
    are hypothesis's own, in its order."""
    import tests.cuda.test_fuzz as tf
    keys = []

    def collect(p, *, device, max_tokens=None, repeats=1):
        keys.extend(k for k in problem_keys(p, max_tokens=max_tokens) if k not in keys)

    saved = tf.check_problem
    tf.check_problem = collect
    try:
        tf.test_cuda_matches_reference_on_drawn_problems()
    finally:
        tf.check_problem = saved
    return keys


def _compile(k) -> str:
    from pymoe.cuda import launch
    ptx, _ = launch.compile_ptx(k, (9, 0))
    return re.sub(r"^\.version \d+\.\d+", ".version 9.0", ptx, count=1, flags=re.M)


def pack(a) -> int:
    _tree(a)
    os.makedirs(a.dir, exist_ok=True)
    keys = bench_keys(a) if a.preset else []
    for spec in a.case:
        keys += [k for k in case_keys(spec) if k not in keys]
    for ref in a.case_list:
        keys += [k for k in case_list_keys(ref) if k not in keys]
    if a.gpu_suite:
        keys += [k for k in suite_keys() if k not in keys]
    if a.fuzz:
        keys += [k for k in fuzz_keys() if k not in keys]
    from pymoe.cuda import launch
    src = launch._source_hash()
    todo = []
    for i, k in enumerate(keys):
        path = os.path.join(a.dir, f"{i:03d}_{k.kernel}.json")
        if os.path.exists(path):
            with open(path) as fh:
                d = json.load(fh)
            if d["key"] == _key_to_json(k) and d.get("src") == src:
                continue                # packed before (another selection or source: redo)
        todo.append((path, k))
    n = 0
    release = None
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max(1, a.jobs)) as ex:
        for (path, k), ptx in zip(todo, ex.map(_compile, [k for _, k in todo])):
            with open(path, "w") as fh:
                json.dump({"key": _key_to_json(k), "src": src, "ptx": ptx}, fh)
            n += 1
            release = re.search(r"^// Cuda compilation tools, (.*)$", ptx, re.M)
            print(f"packed {path}", flush=True)
    print(f"{len(keys)} keys, {n} compiled now, in {a.dir}"
          + (f" (NVVM: {release.group(1)})" if release else ""))
    return 0


def install(a) -> int:
    _tree(a)
    from pymoe.cuda import launch
    src = launch._source_hash()
    n = stale = 0
    for path in sorted(glob.glob(os.path.join(a.dir, "*.json"))):
        with open(path) as fh:
            d = json.load(fh)
        if not _fresh(d, src):
            stale += 1
            continue
        key = _key_from_json(d["key"])
        dest = launch.cache_path(key)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        launch._disk_write(dest, os.path.basename(dest)[:-4], d["ptx"])
        n += 1
        if a.check and n == 1:              # one key: the device's own NVVM beside ours
            mine = launch.compile_ptx(key, launch._device_cc())[0]
            norm = (lambda s: re.sub(r"_cudapy_smem_\d+", "S", re.sub(
                r"_Z\w+", "F", re.sub(r"^\.version.*$", "", s, flags=re.M))))
            same = norm(mine) == norm(d["ptx"])
            print(f"check {key.kernel}: device PTX {'==' if same else '!='} packed PTX")
            if not same and a.check_out:
                with open(a.check_out, "w") as fh:
                    fh.write(mine)
    print(f"installed {n} keys from {a.dir} into {launch.cache_dir()}"
          + (f"; skipped {stale} packed from another source than --tree {a.tree}'s"
             if stale else ""))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("dir")
    p.add_argument("--tree", default=".")
    p.add_argument("--preset", default="gpt-oss-120b,qwen3-30b-a3b")
    p.add_argument("--peer-layer", action="store_true",
                   help="the layer .peers/bench_peers.py runs pymoe on (silu, gate_up "
                        "w13, no bias) instead of the preset's")
    p.add_argument("--tokens", default="1,8,64")
    p.add_argument("--format", default="mxfp4")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--block-size", type=int, default=None)
    p.add_argument("--decode-max-tokens", type=int, default=None)
    p.add_argument("--case", action="append", default=[],
                   help="a test_wgmma.py case's keys too (T-H-I-E-K-DTYPE-FORMAT-ACT-LAYOUT"
                        "[-GEMM])")
    p.add_argument("--case-list", action="append", default=[],
                   help="MODULE:NAME[:GEMM], a test module's list of Cases (as under "
                        "PYMOE_GEMM=GEMM where given; repeatable)")
    p.add_argument("--fuzz", action="store_true",
                   help="the keys of tests/cuda/test_fuzz.py's drawn problems too")
    p.add_argument("--gpu-suite", action="store_true",
                   help="the keys of tests/cuda/test_gpu.py's differential cases too")
    p.add_argument("--jobs", type=int, default=1)
    i = sub.add_parser("install")
    i.add_argument("dir")
    i.add_argument("--tree", default=".")
    i.add_argument("--check", action="store_true")
    i.add_argument("--check-out", default=None)
    a = ap.parse_args(argv)
    return pack(a) if a.cmd == "pack" else install(a)


if __name__ == "__main__":
    sys.exit(main())
