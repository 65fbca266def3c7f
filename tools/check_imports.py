"""The import graph of pymoe, checked: every arrow points down.

    python tools/check_imports.py            # exit 1 and a list when an arrow runs up
    python tools/check_imports.py --graph    # also print every module's imports

Every pymoe module sits in one layer of LAYERS (lower = more basic).  An import
(module level or inside a function, absolute or relative) of one pymoe module by
another must go to a strictly lower layer, so no import runs up and no import
circle can exist between files of different jobs; a module that no layer names
is an error too (a new file has to be placed).  Importing ``pkg.mod`` is counted
as importing ``pkg.mod`` only (not the packages above it, whose __init__ files
import nothing heavy).  Standard library only; run by tests/test_imports.py.
"""
from __future__ import annotations

import ast
import fnmatch
import os
import sys

# (layer name, module patterns).  The order is the layering, most basic first.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("config", ("pymoe.env", "pymoe.geometry", "pymoe.presets")),
    ("numerics", ("pymoe.dtypes", "pymoe.formats", "pymoe.testing")),
    ("host data", ("pymoe.interop", "pymoe.weights", "pymoe.io.checkpoint")),
    ("planner", ("pymoe.plan", "pymoe.io.layouts")),
    ("io", ("pymoe.io",)),
    ("gpu probe", ("pymoe.cuda.availability",)),
    # NumPy twins: shared math below the kernels, the package on top
    ("ref helpers", ("pymoe.ref.dequant", "pymoe.ref.routes", "pymoe.ref.layout")),
    ("ref operands", ("pymoe.ref.wgmma",)),          # wgmma's layouts, v2 words in them
    ("ref math", ("pymoe.ref.expert",)),
    ("ref kernels", ("pymoe.ref.route_pack", "pymoe.ref.fc1", "pymoe.ref.fc2",
                     "pymoe.ref.decode")),
    ("ref", ("pymoe.ref",)),
    # CUDA device code: helpers, tiles, GEMMs, kernels, the registry
    ("device helpers", ("pymoe.cuda.kernels.intrinsics", "pymoe.cuda.kernels.ptx",
                        "pymoe.cuda.kernels.spec", "pymoe.cuda.kernels.routes")),
    ("device wgmma", ("pymoe.cuda.kernels.wgmma",)),
    ("device tiles", ("pymoe.cuda.kernels.common", "pymoe.cuda.kernels.block_pack")),
    ("device gemms", ("pymoe.cuda.kernels.gemm_fma", "pymoe.cuda.kernels.gemm_mma")),
    ("device wgmma gemm", ("pymoe.cuda.kernels.gemm_wgmma_v2",)),  # mma's route rows
    ("device gemm choice", ("pymoe.cuda.kernels.gemm",)),
    ("device kernels", ("pymoe.cuda.kernels.route_pack", "pymoe.cuda.kernels.fc1",
                        "pymoe.cuda.kernels.fc2", "pymoe.cuda.kernels.decode",
                        "pymoe.cuda.kernels.dequant")),
    ("kernel registry", ("pymoe.cuda.kernels",)),
    # CUDA host code: launch layer, twins' launch faces, runner, public package
    ("launch", ("pymoe.cuda.launch", "pymoe.cuda.device_weights")),
    ("cuda twins", ("pymoe.cuda.route_pack", "pymoe.cuda.fc1", "pymoe.cuda.fc2",
                    "pymoe.cuda.decode", "pymoe.cuda.dequant")),
    ("runner", ("pymoe.cuda.runner",)),
    ("cuda", ("pymoe.cuda",)),
    ("api", ("pymoe.moe",)),
    ("expert parallel", ("pymoe.ep",)),
    ("bench", ("pymoe.bench",)),
    ("package", ("pymoe",)),
    ("cli", ("pymoe.__main__",)),
]


def modules(root: str) -> dict[str, str]:
    """module name -> file path for every .py under ``root``/pymoe."""
    out = {}
    base = os.path.join(root, "pymoe")
    for d, dirs, files in os.walk(base):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "__pycache__")))
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join(rel)] = os.path.join(d, f)
    return out


def imports(name: str, path: str, known: set[str]) -> list[tuple[str, int]]:
    """(imported pymoe module, line) for every import in the file."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    is_pkg = os.path.basename(path) == "__init__.py"
    pkg = name if is_pkg else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "pymoe":
                    found.append((a.name, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "pymoe":
                continue
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in known]
            if subs and len(subs) == len(node.names):
                found += [(s, node.lineno) for s in subs]    # from pkg import module(s)
            else:
                found += [(s, node.lineno) for s in subs] + [(mod, node.lineno)]
    return [(m, ln) for m, ln in found if m in known and m != name]


def layer_of(name: str) -> int | None:
    for i, (_, pats) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(name, p) for p in pats):
            return i
    return None


def check(root: str, show: bool = False) -> list[str]:
    mods = modules(root)
    known = set(mods)
    problems = []
    for name in sorted(mods):
        li = layer_of(name)
        if li is None:
            problems.append(f"{name}: in no layer of tools/check_imports.py LAYERS")
            continue
        edges = imports(name, mods[name], known)
        if show:
            print(f"{name:34} [{LAYERS[li][0]}] -> "
                  + ", ".join(sorted({m for m, _ in edges})))
        for m, line in edges:
            lm = layer_of(m)
            if lm is None:
                continue
            if lm >= li:
                how = "within" if lm == li else "up to"
                problems.append(f"{os.path.relpath(mods[name], root)}:{line}: {name} "
                                f"[{LAYERS[li][0]}] imports {m} [{LAYERS[lm][0]}] "
                                f"({how} its layer)")
    return problems


def main(argv: list[str]) -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root, show="--graph" in argv)
    for p in problems:
        print(p)
    print(f"{len(modules(root))} modules, {len(problems)} import(s) against the layering")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
