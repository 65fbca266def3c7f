"""python -m pymoe bench: rows, floor, CSV and plot (the reference on any CPU; the
CUDA path with graphs and eager runs on a GPU)."""
import csv
import subprocess
import sys

import numpy as np
import pytest

import pymoe
from pymoe import bench
from pymoe.presets import PRESETS


def test_floor_bytes_count_each_selected_expert_once():
    ew = bench.random_layer(PRESETS["tiny"], "mxfp4", num_experts=4)
    per = ew.expert_bytes()
    assert per == (ew.w13.nbytes + ew.w13_scales.nbytes + ew.w2.nbytes
                   + ew.w2_scales.nbytes) // 4
    ids = np.array([[0, 2], [2, 0], [-1, 9]])            # experts 0 and 2; -1, 9 invalid
    assert bench.floor_bytes(ew, ids) == 2 * per
    assert bench.layer_flops(3, 2, ew) == 2.0 * 3 * 2 * (2 * 128 * 256 + 256 * 128)


def test_random_layer_shapes_and_formats():
    for name in ("tiny", "gpt-oss-20b"):
        pr = PRESETS[name]
        for fmt in ("mxfp4", "nvfp4"):
            ew = bench.random_layer(pr, fmt, num_experts=2)
            assert (ew.num_experts, ew.hidden_size, ew.intermediate_size) == (
                2, pr.hidden_size, pr.intermediate_size)
            assert ew.activation == pr.activation and ew.format == fmt


def test_cli_bench_on_the_reference(tmp_path):
    out = tmp_path / "b.csv"
    r = subprocess.run([sys.executable, "-m", "pymoe", "bench", "--backend", "ref",
                        "--preset", "tiny", "--num-experts", "3", "--tokens", "1,65",
                        "--repeats", "2", "--csv", str(out), "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "copy bandwidth" in r.stdout and "%floor" in r.stdout
    rows = list(csv.DictReader(open(out)))
    assert [(row["T"], row["mode"], row["regime"]) for row in rows] == [
        ("1", "ref", "decode"), ("65", "ref", "packed")]
    for row in rows:
        assert float(row["us"]) > 0 and 0 < float(row["pct_floor"]) < 100
        assert float(row["floor_us"]) > 0 and row["ok"] == "True"


def test_bench_block_size_pin(monkeypatch):
    """--block-size / block_size= reaches the plan (Caps.block_size_m): every
    packed call of the run uses that block."""
    seen = []
    real = bench.make_plan

    def spy(caps):
        seen.append(caps.block_size_m)
        return real(caps)
    monkeypatch.setattr(bench, "make_plan", spy)
    rows, _ = bench.bench(["tiny"], [65], backend="ref", repeats=1, num_experts=3,
                          progress=False, block_size=8)
    assert seen == [8] and rows[0].regime == "packed" and rows[0].ok
    r = subprocess.run([sys.executable, "-m", "pymoe", "bench", "--block-size", "12"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "argument --block-size: invalid choice: 12" in r.stderr


@pytest.mark.parametrize("args,match", [
    (("--tokens", "0"), "argument --tokens: token counts must be >= 1"),
    (("--tokens", "a,b"), "argument --tokens: expected comma-separated ints"),
    (("--preset", "nope"), "argument --preset: \\['nope'\\]: expected comma-separated names"),
    (("--mode", "fast"), "argument --mode: \\['fast'\\]"),
    (("--preset", "qwen3-30b-a3b", "--num-experts", "4"),
     "--num-experts 4: the presets need top_k=8 <= N"),
])
def test_cli_bench_errors(args, match):
    import re
    r = subprocess.run([sys.executable, "-m", "pymoe", "bench", *args], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and re.search(match, r.stderr), r.stderr
    assert "Traceback" not in r.stderr


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    rows, bw = bench.bench(["tiny"], [1, 5], backend="ref", repeats=1, num_experts=2,
                           progress=False)
    bench.plot(rows, str(tmp_path / "b.png"))
    assert (tmp_path / "b.png").stat().st_size > 1000
    assert "tiny" in bench.format_table(rows, bw)


@pytest.mark.gpu
def test_bench_on_the_gpu_graph_and_eager(tmp_path):
    rows, bw = bench.bench(["tiny"], [1, 24], backend="cuda", repeats=4, rotate=2,
                           progress=False)
    assert [(r.T, r.mode) for r in rows] == [(1, "graph"), (1, "eager"), (24, "graph"),
                                           (24, "eager")]
    for r in rows:
        assert r.ok and r.us > 0 and r.check_rel_l2 < 1e-2, r
        assert np.isnan(r.host_us) == (r.mode == "graph")
    assert bw > 1e11                                        # a device copy, not a host one
    assert pymoe.cuda.is_available()


def test_block_cut_times_each_pinned_block(monkeypatch, capsys):
    """benchmarks/block_cut.py: each sweep block reaches the plan pinned, every T
    packed (the decode cut at 0), and the table names the block BLOCK_MAX_MEAN picks."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parent.parent / "benchmarks" / "block_cut.py"
    spec = importlib.util.spec_from_file_location("block_cut", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    seen = []
    real = bench.make_plan

    def spy(caps):
        seen.append((caps.block_size_m, caps.decode_max_tokens))
        return real(caps)
    monkeypatch.setattr(bench, "make_plan", spy)
    assert mod.main(["--preset", "tiny", "--sweep", "8:2,9 32:9", "--repeats", "1",
                     "--backend", "ref"]) == 0
    assert seen == [(8, 0), (32, 0)]
    out = capsys.readouterr().out.splitlines()
    rows = [ln.split() for ln in out if ln.startswith("tiny ") and "block" not in ln]
    # tiny: E 8, k 2; T = 9 -> mean ceil(18 / 8) = 3 -> blocks of 8 (BLOCK_MAX_MEAN[8] = 4)
    assert [r[:3] for r in rows] == [["tiny", "2", "1"], ["tiny", "9", "3"]]
    assert rows[0][3] != "-" and rows[0][4] == "-" and rows[1][3] != "-" and rows[1][4] != "-"
    assert rows[1][5] == "8" and rows[1][6] in ("8", "32")
    with pytest.raises(SystemExit, match="--sweep: '12:4' is not B:T"):
        mod.main(["--preset", "tiny", "--sweep", "12:4", "--backend", "ref"])
