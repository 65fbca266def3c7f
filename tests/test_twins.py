"""The twins stay side by side: every CUDA face module pymoe/cuda/<m>.py has a
reference module pymoe/ref/<m>.py exporting the same names with the same
signatures (parameter names, order, kinds, defaults), and both packages expose
the kernel modules as modules (never a function shadowing its submodule)."""
import importlib
import inspect
import pkgutil
import types

import pytest

import pymoe.ref

pytest.importorskip("numba")

KERNEL_MODULES = ["route_pack", "fc1", "fc2", "decode", "dequant"]
REF_HELPERS = {"expert", "routes", "layout",   # what the reference kernels share
               "wgmma"}                        # wgmma's operand layouts (kernels/wgmma.py)


def _params(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", KERNEL_MODULES)
def test_twins_share_names_and_signatures(name):
    cuda_mod = importlib.import_module(f"pymoe.cuda.{name}")
    ref_mod = importlib.import_module(f"pymoe.ref.{name}")
    assert cuda_mod.__all__, name
    assert sorted(cuda_mod.__all__) == sorted(ref_mod.__all__), name
    for fn in cuda_mod.__all__:
        c, r = getattr(cuda_mod, fn), getattr(ref_mod, fn)
        assert _params(c) == _params(r), (f"pymoe.cuda.{name}.{fn}{inspect.signature(c)} != "
                                          f"pymoe.ref.{name}.{fn}{inspect.signature(r)}")


def test_run_twins_share_a_signature():
    from pymoe.cuda import runner
    assert _params(runner.run) == _params(pymoe.ref.run)


@pytest.mark.parametrize("name", KERNEL_MODULES)
def test_kernel_names_are_modules_in_both_packages(name):
    import pymoe.cuda
    importlib.import_module(f"pymoe.cuda.{name}")
    assert isinstance(getattr(pymoe.ref, name), types.ModuleType), f"pymoe.ref.{name}"
    assert isinstance(getattr(pymoe.cuda, name), types.ModuleType), f"pymoe.cuda.{name}"


def test_every_reference_module_is_a_twin_or_a_shared_helper():
    ref_mods = {m.name for m in pkgutil.iter_modules(pymoe.ref.__path__)}
    assert ref_mods == set(KERNEL_MODULES) | REF_HELPERS


def test_every_cuda_face_module_is_a_twin():
    import pymoe.cuda
    host = {"launch", "runner", "device_weights", "availability"}
    mods = {m.name for m in pkgutil.iter_modules(pymoe.cuda.__path__) if not m.ispkg}
    assert mods == set(KERNEL_MODULES) | host, mods
