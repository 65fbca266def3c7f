"""The side-by-side device tools run here too (the reference backend, no GPU):
tools/test_revs.sh (pytest on several trees / GEMMs at once) and
tools/bench_revs.sh (bench per tree, GEMM and pinned block, one table)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp_path):
    return dict(os.environ, OUT=str(tmp_path), PYTHON=sys.executable, SITE=str(tmp_path))


def test_test_revs_runs_each_spec(tmp_path):
    r = subprocess.run(["bash", "tools/test_revs.sh", ".:fma", ".:mma", "--",
                        "tests/test_geometry.py", "-k", "tiles_live or route_pack_grid"],
                       cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True,
                       timeout=300)
    lines = r.stdout.strip().splitlines()
    assert [ln.split()[0] for ln in lines] == ["worktree_fma", "worktree_mma"], r.stdout
    assert all("rc=0" in ln and " passed" in ln for ln in lines), r.stdout + r.stderr
    assert (tmp_path / "test_worktree_mma.txt").exists()


def test_bench_revs_table_per_gemm_and_block(tmp_path):
    env = dict(_env(tmp_path), PRESETS="tiny", TOK="2,65", BT="250")
    r = subprocess.run(["bash", "tools/bench_revs.sh", ".:fma", ".:fma:8", ".:fma::0"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout.strip().splitlines()
    names = ["worktree_fma", "worktree_fma_b8", "worktree_fma_d0"]
    assert out[:3] == [f"{n} rc=0" for n in names], r.stdout + r.stderr
    head, row = out[-3].split(), out[-1].split()
    assert head[-3:] == names, out
    assert row[:3] == ["tiny", "65", "ref"] and all(float(v) > 0 for v in row[3:]), out

    def regime(name, t):                  # the bench row's regime column for T = t
        for line in (tmp_path / f"bench_{name}.txt").read_text().splitlines():
            f = line.split()
            if len(f) > 5 and f[:3] == ["tiny", str(t), "ref"]:
                return "packed" if "packed" in f else "decode" if "decode" in f else None
    assert regime("worktree_fma", 2) == "decode"
    assert regime("worktree_fma_d0", 2) == "packed"          # the cut pinned to 0
