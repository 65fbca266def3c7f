"""The import graph (tools/check_imports.py): every arrow points down."""
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_imports", ROOT / "tools" / "check_imports.py")
check_imports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_imports)


def test_no_import_runs_up():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "check_imports.py")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 import(s) against the layering" in r.stdout


def _tree(tmp_path):
    shutil.copytree(ROOT / "pymoe", tmp_path / "pymoe",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_an_upward_import_is_reported(tmp_path):
    """The checker can fail: a lazy import of the CUDA interop from the planner
    (the arrow this layering removed) and a kernel reaching into the runner."""
    root = _tree(tmp_path)
    plan = root / "pymoe" / "plan.py"
    plan.write_text(plan.read_text() + "\n\ndef _bad():\n    from .cuda import runner\n")
    k = root / "pymoe" / "cuda" / "kernels" / "fc1.py"
    k.write_text(k.read_text() + "\nfrom ..runner import run  # noqa\n")
    problems = check_imports.check(str(root))
    assert any("pymoe.plan [planner] imports pymoe.cuda.runner" in p for p in problems)
    assert any("pymoe.cuda.kernels.fc1 [device kernels] imports pymoe.cuda.runner" in p
               for p in problems)


def test_siblings_in_one_layer_may_not_import_each_other(tmp_path):
    root = _tree(tmp_path)
    f = root / "pymoe" / "cuda" / "fc2.py"
    f.write_text(f.read_text() + "\nfrom .fc1 import fc1  # noqa\n")
    assert any("pymoe.cuda.fc2 [cuda twins] imports pymoe.cuda.fc1 [cuda twins] (within"
               in p for p in check_imports.check(str(root)))


def test_a_new_module_must_be_placed(tmp_path):
    root = _tree(tmp_path)
    (root / "pymoe" / "stray.py").write_text("x = 1\n")
    assert any("pymoe.stray: in no layer" in p for p in check_imports.check(str(root)))
