"""The command line: argparse-style errors (usage, message, exit 2, no traceback)."""
import subprocess
import sys

import pytest


def cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "pymoe", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("args,match", [
    (("demo", "--preset", "qwen3-30b-a3b", "--num-experts", "4"),
     "--num-experts 4: preset 'qwen3-30b-a3b' needs top_k=8 <= N <= its 128 experts"),
    (("demo", "--num-experts", "0"), "argument --num-experts: must be >= 1, got 0"),
    (("demo", "--num-experts", "100"), "--num-experts 100: preset 'tiny' needs top_k=2 <= N"),
    (("demo", "--tokens", "0"), "argument --tokens: must be >= 1, got 0"),
    (("demo", "--tokens", "-3"), "argument --tokens: must be >= 1, got -3"),
    (("demo", "--tokens", "x"), "argument --tokens: invalid int value: 'x'"),
    (("plan", "--max-tokens", "0"), "argument --max-tokens: must be >= 1, got 0"),
    (("plan", "--block-size", "7"), "argument --block-size: invalid choice: 7"),
    (("plan", "--preset", "nope"), "argument --preset: invalid choice: 'nope'"),
])
def test_cli_errors_are_argparse_style(args, match):
    r = cli(*args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "usage: python -m pymoe" in r.stderr and match in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_cli_without_a_gpu_says_so():
    from pymoe import cuda
    if cuda.is_available():
        pytest.skip("a GPU is here")
    for args in (("demo", "--backend", "cuda"), ("prewarm",)):
        r = cli(*args)
        assert r.returncode == 2 and "no CUDA GPU" in r.stderr or "needs a CUDA GPU" in r.stderr
        assert "Traceback" not in r.stderr


def test_plan_into_a_closed_pipe():
    """`python -m pymoe plan | head -1` ends quietly (no BrokenPipeError)."""
    r = subprocess.run(f"{sys.executable} -m pymoe plan --preset gpt-oss-120b | head -1",
                       shell=True, capture_output=True, text=True, timeout=300)
    assert r.stdout.startswith("pymoe plan:"), r.stdout
    assert "BrokenPipe" not in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_demo_small_runs_on_the_reference():
    r = cli("demo", "--tokens", "3", "--backend", "ref", "--num-experts", "2")
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
