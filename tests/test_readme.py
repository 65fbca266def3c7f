"""Every README snippet runs as written, in order, in one namespace (a fresh
process).  The CPU snippets run with ml_dtypes, numba and cupy blocked, as on
the base install (`pip install .`); a snippet whose first line says
"# needs a GPU" runs only on a GPU (marker gpu), after the CPU ones."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = "import sys\nfor _m in ('ml_dtypes', 'numba', 'cupy', 'torch'):\n    sys.modules[_m] = None\n"


def snippets():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def _run(code: str):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=str(ROOT), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_readme_has_cpu_and_gpu_snippets():
    s = snippets()
    assert len(s) >= 3
    assert any(b.startswith("# needs a GPU") for b in s)
    assert any(not b.startswith("# needs a GPU") for b in s)


def test_cpu_snippets_run_on_the_base_install():
    cpu = [b for b in snippets() if not b.startswith("# needs a GPU")]
    _run(BLOCK + "\n".join(cpu) + "\nprint('ok')\n")


@pytest.mark.gpu
def test_every_snippet_runs_on_a_gpu():
    blocks = snippets()
    cpu = [b for b in blocks if not b.startswith("# needs a GPU")]
    gpu = [b for b in blocks if b.startswith("# needs a GPU")]
    _run("\n".join(cpu + gpu) + "\nprint('ok')\n")
