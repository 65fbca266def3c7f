"""The dependency floors setup.cfg declares really work: a fresh venv with numpy
and ml_dtypes from their floor release series (numpy 1.24.x, ml_dtypes 0.5.x)
runs the reference tests (formats, planner, reference forward, errors).  Needs a package index; where pip cannot
reach one (the GPU machine) it skips, and says so."""
import configparser
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def floors() -> dict:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    reqs = cfg["options"]["install_requires"] + cfg["options.extras_require"]["test"]
    out = {}
    for line in reqs.splitlines():
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)", line)
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def test_setup_cfg_declares_the_floors_tested_here():
    f = floors()
    assert f["numpy"] == "1.24" and f["ml-dtypes"] == "0.5", f


@pytest.mark.slow
def test_reference_suite_on_the_declared_floors(tmp_path):
    f = floors()
    env_dir = tmp_path / "floor"
    venv.create(env_dir, with_pip=True)
    py = str(env_dir / ("Scripts" if sys.platform == "win32" else "bin") / "python")
    pins = [f"numpy=={f['numpy']}.*", f"ml_dtypes=={f['ml-dtypes']}.*", "tqdm", "pytest",
            "hypothesis"]
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--only-binary=:all:", *pins],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        if re.search(r"No matching distribution|Could not find a version|connection|"
                     r"Network is unreachable|Temporary failure", r.stderr, re.I):
            pytest.skip(f"no package index reachable for the floor venv: {r.stderr[-300:]}")
        pytest.fail(r.stderr)
    ver = subprocess.run([py, "-c", "import numpy, ml_dtypes; print(numpy.__version__, "
                                    "ml_dtypes.__version__)"],
                         capture_output=True, text=True).stdout.split()
    assert ver[0].startswith(f["numpy"] + ".") and ver[1].startswith(f["ml-dtypes"] + ".")
    r = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                        "tests/test_formats.py", "tests/ref", "tests/test_plan.py",
                        "tests/test_errors.py", "tests/test_geometry.py"],
                       cwd=str(ROOT), capture_output=True, text=True, timeout=900,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, f"numpy {ver[0]}, ml_dtypes {ver[1]}:\n" + r.stdout[-3000:]
