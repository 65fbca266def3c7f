"""Compile a bench's kernels here (no GPU) and install them into the device's
disk cache there, so a device call spends its minutes timing, not compiling.

    python tools/ptx_pack.py pack DIR --preset gpt-oss-120b,qwen3-30b-a3b \\
        --tokens 64,512,4096 [--format mxfp4] [--dtype bfloat16] [--block-size B]
        [--decode-max-tokens T]      # in the source tree to pack (cwd or --tree)
    python3 tools/ptx_pack.py install DIR [--tree SRC]     # on the device

pack writes one JSON file a LaunchKey ({"key": ..., "ptx": ...}): every key
`pymoe bench` prewarms for those presets and token counts (Caps.reachable_keys
at max(tokens), the GEMMs the random layer's scale bytes select on sm_90).
install recomputes each key's disk-cache path on the device (its numba, driver
and the tree's source hash) and writes the entry there, so the bench's prewarm
reads it from disk.  A key the pack missed is still compiled on the device.

The PTX comes from this machine's NVVM (toolkit 13.5, PTX ISA 9.5); the device's
driver takes ISA 9.0 at most, so pack lowers the .version line.  The code is
the same NVVM pipeline one minor release on (--check in install compiles one
key there and compares: on 2026-12-01 the two differed in register numbering
and order only, and main's bench figures from packed PTX matched the
device-compiled ones within 1.4%).

Not for timing the decode regime: later that day (docs/performance.md step 9)
gpt-oss-120b's decode at T = 2 / 4 / 8 ran 91.3 / 148.9 / 254.6 us from packed
PTX and 76.1 / 126.5 / 224.4 us from the H200's own compile, the same source,
in one session; qwen3's within 1%.  Time what users run: compile on the device
(tools/bench_revs.sh with WARM=1), and pack for test runs only.
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


def pack(a) -> int:
    _tree(a)
    from pymoe.cuda import launch
    os.makedirs(a.dir, exist_ok=True)
    keys = bench_keys(a)
    n = 0
    for i, k in enumerate(keys):
        path = os.path.join(a.dir, f"{i:03d}_{k.kernel}.json")
        if os.path.exists(path):
            continue
        ptx, _ = launch.compile_ptx(k, (9, 0))
        ptx = re.sub(r"^\.version \d+\.\d+", ".version 9.0", ptx, count=1, flags=re.M)
        with open(path, "w") as fh:
            json.dump({"key": _key_to_json(k), "ptx": ptx}, fh)
        n += 1
        print(f"packed {path}", flush=True)
    print(f"{len(keys)} keys, {n} compiled now, in {a.dir}")
    return 0


def install(a) -> int:
    _tree(a)
    from pymoe.cuda import launch
    n = 0
    for path in sorted(glob.glob(os.path.join(a.dir, "*.json"))):
        with open(path) as fh:
            d = json.load(fh)
        key = _key_from_json(d["key"])
        dest = launch.cache_path(key)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        launch._disk_write(dest, os.path.basename(dest)[:-4], d["ptx"])
        n += 1
        if a.check and n == 1:              # one key: the device's own NVVM beside ours
            mine = launch.compile_ptx(key, launch._device_cc())[0]
            norm = (lambda s: re.sub(r"_Z\w+", "F", re.sub(r"^\.version.*$", "", s, flags=re.M)))
            same = norm(mine) == norm(d["ptx"])
            print(f"check {key.kernel}: device PTX {'==' if same else '!='} packed PTX")
            if not same and a.check_out:
                with open(a.check_out, "w") as fh:
                    fh.write(mine)
    print(f"installed {n} keys from {a.dir} into {launch.cache_dir()}")
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
    i = sub.add_parser("install")
    i.add_argument("dir")
    i.add_argument("--tree", default=".")
    i.add_argument("--check", action="store_true")
    i.add_argument("--check-out", default=None)
    a = ap.parse_args(argv)
    return pack(a) if a.cmd == "pack" else install(a)


if __name__ == "__main__":
    sys.exit(main())
