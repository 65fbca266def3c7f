"""The twins stay side by side: every CUDA kernel module has a reference module of
the same name exporting the same kernel names (STYLE: twins share names)."""
import importlib
import pkgutil

import pytest

import pymoe.ref

pytest.importorskip("numba")

KERNEL_MODULES = ["route_pack", "fc1", "fc2", "decode", "dequant"]


@pytest.mark.parametrize("name", KERNEL_MODULES)
def test_cuda_module_has_a_reference_twin(name):
    cuda_mod = importlib.import_module(f"pymoe.cuda.{name}")
    ref_mod = importlib.import_module(f"pymoe.ref.{name}")
    assert cuda_mod.__all__, name
    for fn in cuda_mod.__all__:
        assert hasattr(ref_mod, fn), f"pymoe.ref.{name} lacks {fn} (pymoe.cuda.{name} has it)"


def test_every_reference_kernel_module_is_known():
    ref_mods = {m.name for m in pkgutil.iter_modules(pymoe.ref.__path__)}
    assert set(KERNEL_MODULES) <= ref_mods
    assert ref_mods == set(KERNEL_MODULES)
