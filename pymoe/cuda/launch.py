"""Launch resolution: LaunchKey -> loaded kernel, and the launch itself.

Numba compiles, CuPy launches (docs/gpu.md: the Numba dispatcher costs 27-89 us
per call, a CuPy launch of Numba's PTX about 11 us).  Host code: it knows kernels
only by name, through the registry in pymoe/cuda/kernels (``builder``).

    resolve(key, stream)   memory cache hit: always legal, even during capture.
                           miss: if the selected stream captures, or freeze() is
                           on, raise BEFORE any disk lookup, load or compile;
                           else disk cache -> compile -> load.
    Kernel.launch(grid, args, stream)   one cuLaunchKernel on the caller's stream.
    Kernel.prepare(grid, args, dependent=True)   a programmatic dependent launch
                           on sm_90+ (pdl_enabled): cuLaunchKernelEx with
                           PROGRAMMATIC_STREAM_SERIALIZATION, so the grid may start
                           while the one before it runs; the kernel calls
                           ptx.pdl_wait() before it reads what that grid wrote.

Disk cache entries are PTX text keyed by sha256(LaunchKey, kernel sources,
numba / numba-cuda / driver versions, compute capability), written atomically
(temp file + rename) with a header that names the key hash; a corrupt,
truncated or foreign entry is recompiled and replaced, never loaded blindly.
``PYMOE_CACHE_DIR`` overrides the default ($XDG_CACHE_HOME/pymoe or
~/.cache/pymoe); ``PYMOE_DISK_CACHE=0`` disables it.

Under Numba's CUDA simulator the same kernels run through the Numba
dispatcher on NumPy arrays (no streams, no capture).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
import threading
from dataclasses import asdict

import numpy as np
from numba import cuda

from .. import env
from ..geometry import LaunchKey
from ..interop import as_stream
from .kernels import builder
from .kernels.intrinsics import SIM
from .kernels.ptx import PDL_OPS
from .kernels.spec import NUMPY_TYPES, KernelSpec

__all__ = ["KernelSpec", "Kernel", "resolve", "LaunchNotResolvedError",
           "KernelResolutionFrozenError", "freeze", "unfreeze", "is_frozen",
           "is_capturing", "launch_stream", "PreparedLaunch", "cache_path", "stats",
           "clear_memory_cache", "load_spec", "compile_ptx", "pdl_enabled"]


class LaunchNotResolvedError(RuntimeError):
    """A launch was not in the memory cache while the stream captures (or while
    frozen).  Prewarm the plan before capturing."""


class KernelResolutionFrozenError(LaunchNotResolvedError):
    """freeze() is on and a launch was not in the memory cache."""


# ------------------------------------------------------------------ state

_LOCK = threading.RLock()
_MEMORY: dict[tuple, "Kernel"] = {}
_FROZEN = False
_STATS = {"compiled": 0, "disk": 0, "memory": 0}


def freeze() -> None:
    """Every later memory miss raises KernelResolutionFrozenError, capturing or not."""
    global _FROZEN
    _FROZEN = True


def unfreeze() -> None:
    global _FROZEN
    _FROZEN = False


def is_frozen() -> bool:
    return _FROZEN


def stats() -> dict:
    """Counts since import: compiled / disk hits / memory hits."""
    return dict(_STATS)


def clear_memory_cache() -> None:
    with _LOCK:
        _MEMORY.clear()


# ------------------------------------------------------------------ kernel

def _opt_in_smem(function, nbytes: int) -> None:
    """Let ``function`` launch with ``nbytes`` of dynamic shared memory: needed
    once its static and dynamic shared memory together pass 48 KB."""
    from cupy.cuda import driver as drv
    drv.funcSetAttribute(function.ptr, drv.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                         int(nbytes))


class Kernel:
    """A resolved launch: a CuPy function (GPU) or a Numba dispatcher (simulator)."""

    def __init__(self, key: LaunchKey, spec: KernelSpec, function, source: str):
        self.key, self.spec, self.function, self.source = key, spec, function, source
        self.threads = spec.threads
        self.dyn_smem = int(spec.dyn_smem)
        if function is not None and not SIM and self.dyn_smem > 0:
            # any dynamic amount: a kernel's static arrays count against the same
            # 48 KB (a 40 KB dynamic ring beside 22 KB of static arrays failed to
            # launch without it, CUDA_ERROR_INVALID_VALUE: performance.md step 19)
            _opt_in_smem(function, self.dyn_smem)
        codes = spec.argtypes
        self._is_array = tuple(c.endswith("[]") for c in codes)
        self._np = tuple(NUMPY_TYPES.get(c) for c in codes)
        self._scalar = tuple(np.int64 if c == "i8" else np.float32 for c in codes)

    def launch(self, grid, args, stream=None) -> None:
        """Enqueue on ``stream`` (an object with .ptr, or None): prepare + call."""
        self.prepare(grid, args)(stream)

    def prepare(self, grid, args, *, dependent: bool = False) -> "PreparedLaunch":
        """The launch with its arguments laid out, not enqueued.

        args: per argtype an array (CuPy on the GPU, NumPy in the simulator) or a
        scalar; ``None`` for an array the kernel will not read (a flag says so).
        dependent: launch it as a programmatic dependent of the grid before it in
        the stream where pdl_enabled() (the kernel must pdl_wait() before reading
        that grid's output, and write nothing that grid reads before it); an
        ordinary launch elsewhere."""
        if not isinstance(grid, tuple):
            grid = (grid,)
        if SIM:
            conv = []
            for a, is_arr, npdt, sc in zip(args, self._is_array, self._np, self._scalar):
                if is_arr:
                    conv.append(np.zeros(1, npdt) if a is None else a.reshape(-1).view(npdt))
                else:
                    conv.append(sc(a))
            return PreparedLaunch(self, grid, tuple(conv))
        dependent = dependent and pdl_enabled()
        slots = []                                  # one 8-byte slot per ABI value
        for a, is_arr, sc in zip(args, self._is_array, self._scalar):
            if is_arr:
                if a is None:
                    slots += (0, 0, 0, 1, 0, 0, 1)
                else:
                    n, isz = int(a.size), int(a.itemsize)
                    slots += (0, 0, n, isz, int(a.data.ptr), n, isz)
            elif sc is np.float32:
                slots.append(int(np.array([a, 0], np.float32).view(np.uint64)[0]))
            else:
                slots.append(int(a) & 0xFFFFFFFFFFFFFFFF)
        return PreparedLaunch(self, grid, tuple(slots), dependent)


def pdl_enabled() -> bool:
    """Whether dependent launches go out as programmatic dependent launches: on a
    GPU of compute capability 9.0 or newer (griddepcontrol) with cuda-python's
    cuLaunchKernelEx, unless PYMOE_PDL=0 (then they are ordinary launches of the
    same PTX, where pdl_wait is a no-op)."""
    if SIM or not env.get_bool("PYMOE_PDL", True):
        return False
    return _device_cc() >= (9, 0) and _has_launch_ex()


@functools.lru_cache(maxsize=None)
def _has_launch_ex() -> bool:
    """cuda-python's driver binding with cuLaunchKernelEx (numba-cuda[cu13] brings
    it); without it dependent launches stay ordinary ones."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return False
    return hasattr(driver, "cuLaunchKernelEx")


class _ExLaunch:
    """One cuLaunchKernelEx (cuda-python's driver binding) of a prepared launch
    with PROGRAMMATIC_STREAM_SERIALIZATION: the config is built once."""
    __slots__ = ("drv", "cfg", "fn", "params", "streams")

    def __init__(self, fn_ptr: int, dims: tuple, params_ptr: int, smem: int = 0):
        from cuda.bindings import driver as drv
        cfg = drv.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ, cfg.blockDimX = dims
        cfg.blockDimY = cfg.blockDimZ = 1
        cfg.sharedMemBytes = smem
        at = drv.CUlaunchAttribute()
        at.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        at.value.programmaticStreamSerializationAllowed = 1
        cfg.attrs = [at]
        cfg.numAttrs = 1
        self.drv, self.cfg, self.params = drv, cfg, params_ptr
        self.fn = drv.CUfunction(fn_ptr)
        self.streams: dict = {}

    def __call__(self, stream) -> None:
        ptr = 0 if stream is None else stream.ptr
        h = self.streams.get(ptr)
        if h is None:
            h = self.streams[ptr] = self.drv.CUstream(ptr)
        self.cfg.hStream = h
        err, = self.drv.cuLaunchKernelEx(self.cfg, self.fn, self.params, 0)
        if err != self.drv.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuLaunchKernelEx ({self.fn}): {err}")


class PreparedLaunch:
    """A launch with its arguments already laid out: calling it is one
    cuLaunchKernel with a prebuilt parameter block (no per-argument Python
    conversion), the host cost of an eager decode step.

    Numba's ABI flattens a 1-D array to (meminfo, parent, nitems, itemsize,
    data, shape, stride); every value is 8 bytes except float32 scalars, which
    sit in the low half of their slot (little endian)."""
    __slots__ = ("kernel", "grid", "_values", "_params", "_params_ptr", "_fn", "_dims",
                 "_ex")

    def __init__(self, kernel: Kernel, grid: tuple, args: tuple, dependent: bool = False):
        self.kernel, self.grid = kernel, grid
        self._ex = None
        if SIM:
            self._values = args
            return
        self._values = np.array(args, dtype=np.uint64)            # the values
        base = self._values.ctypes.data
        self._params = np.arange(len(args), dtype=np.uint64) * 8 + np.uint64(base)
        self._params_ptr = self._params.ctypes.data                # void*[] into them
        self._fn = kernel.function.ptr
        g = tuple(grid) + (1, 1)
        self._dims = (int(g[0]), int(g[1]), int(g[2]), kernel.threads)
        if dependent and all(self._dims[:3]):
            self._ex = _ExLaunch(self._fn, self._dims, self._params_ptr, kernel.dyn_smem)

    @property
    def dependent(self) -> bool:
        """Whether this launch goes out as a programmatic dependent launch."""
        return self._ex is not None

    def __call__(self, stream=None) -> None:
        if SIM:
            self.kernel.function[self.grid, self.kernel.threads, 0,
                                 self.kernel.dyn_smem](*self._values)
            return
        gx, gy, gz, bx = self._dims
        if self._ex is not None:
            self._ex(stream)
        elif gx and gy and gz:
            _launch_kernel(self._fn, gx, gy, gz, bx, 1, 1, self.kernel.dyn_smem,
                           0 if stream is None else stream.ptr, self._params_ptr, 0)


def _launch_kernel(*args):
    global _launch_kernel
    from cupy_backends.cuda.api.driver import launchKernel
    _launch_kernel = launchKernel
    return launchKernel(*args)


# ------------------------------------------------------------------ disk cache

def cache_dir() -> str:
    d = env.get_str("PYMOE_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pymoe")


def _versions() -> dict:
    import numba
    try:
        import numba_cuda
        nc = getattr(numba_cuda, "__version__", "?")
    except Exception:
        nc = "?"
    drv = 0
    if not SIM:
        import cupy
        drv = cupy.cuda.runtime.driverGetVersion()
    return {"numba": numba.__version__, "numba_cuda": nc, "driver": drv}


@functools.lru_cache(maxsize=None)
def _source_hash() -> str:
    """Hash of every pymoe.cuda source file (kernels/ included) and geometry.py
    the kernels are built from: one hash for all keys, read once per process."""
    here = os.path.dirname(__file__)
    sha = hashlib.sha256()
    for root, dirs, files in os.walk(here):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(root, f)
                with open(path, "rb") as fh:
                    sha.update(os.path.relpath(path, here).encode() + b"\0" + fh.read())
    with open(os.path.join(here, "..", "geometry.py"), "rb") as fh:
        sha.update(fh.read())
    return sha.hexdigest()


def disk_key(key: LaunchKey, cc: tuple[int, int]) -> str:
    blob = json.dumps({"key": asdict(key), "src": _source_hash(),
                       "versions": _versions(), "cc": list(cc)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def cache_path(key: LaunchKey, cc: tuple[int, int] | None = None) -> str:
    """Where ``key``'s compiled PTX lives in the disk cache (for this device's
    compute capability unless ``cc`` is given)."""
    digest = disk_key(key, cc or _device_cc())
    return os.path.join(cache_dir(), digest[:2], digest + ".ptx")


_MAGIC = "// pymoe-ptx "


def _disk_read(path: str, digest: str) -> str | None:
    """PTX from a cache file, or None when absent, corrupt, truncated or foreign."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return None
    head, _, body = text.partition("\n")
    if not head.startswith(_MAGIC):
        return None
    parts = head[len(_MAGIC):].split()
    if len(parts) != 3 or parts[0] != digest:
        return None
    size, check = parts[1], parts[2]
    if not size.isdigit() or int(size) != len(body.encode()):
        return None
    if hashlib.sha256(body.encode()).hexdigest() != check:
        return None
    return body


def _disk_write(path: str, digest: str, ptx: str) -> None:
    data = (f"{_MAGIC}{digest} {len(ptx.encode())} "
            f"{hashlib.sha256(ptx.encode()).hexdigest()}\n{ptx}")
    d = os.path.dirname(path)
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".ptx")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, path)          # atomic: readers see old or new, never half
    except OSError:
        pass                           # a read-only cache dir only costs speed


# ------------------------------------------------------------------ resolve

def launch_stream(stream):
    """The stream object launches go to: None under the simulator (no streams),
    else ``interop.as_stream(stream)`` (None = CuPy's current stream)."""
    if SIM:
        return None
    return as_stream(stream)


def is_capturing(stream) -> bool:
    """Whether ``stream`` (an object with .ptr; None = not a stream) is capturing
    a CUDA graph.  Asks that stream, never the current one."""
    if SIM or stream is None:
        return False
    import cupy
    return cupy.cuda.runtime.streamIsCapturing(stream.ptr) != 0


class _TargetDevice:
    """Stands in for the current device while a kernel compiles: Numba compiles a
    non-inlined device function (forceinline=True: inlined by NVVM, not copied
    into the caller's Numba IR) for ``get_current_device()``'s compute capability,
    which needs a GPU; pymoe compiles for the target it was asked for, GPU or not."""

    def __init__(self, cc):
        self.compute_capability = tuple(cc)


def _compile(spec: KernelSpec, cc: tuple[int, int]) -> str:
    from numba.cuda import dispatcher as nd
    with _LOCK:
        saved = nd.get_current_device
        nd.get_current_device = lambda: _TargetDevice(cc)
        try:
            target = tuple(cc)
            if spec.arch_specific:
                if target[:2] != (9, 0):
                    raise ValueError(f"{spec.pyfunc.__name__}: an sm_90a kernel (wgmma) runs on "
                                     f"compute capability 9.0 only, not {target[:2]}")
                target = (9, 0, "a")
            ptx, _ = cuda.compile_ptx(spec.pyfunc, spec.signature, cc=target)
        finally:
            nd.get_current_device = saved
    if target[:2] < (9, 0):                # no griddepcontrol before sm_90 (ptx.pdl_wait)
        for op in PDL_OPS:
            ptx = ptx.replace(op, "")
    if spec.max_regs is not None:          # .maxnreg goes between the entry's
        m = re.search(r"\.entry[^{]*", ptx)  # parameter list and its body
        ptx = ptx[:m.end()] + f".maxnreg {int(spec.max_regs)}\n" + ptx[m.end():]
    _STATS["compiled"] += 1
    return ptx


def compile_ptx(key: LaunchKey, cc: tuple[int, int]) -> tuple[str, str]:
    """(ptx, entry name) for ``key``: Numba's compiler, no GPU needed."""
    ptx = _compile(builder(key.kernel)(key), cc)
    return ptx, _entry(ptx)


def load_spec(spec: KernelSpec) -> "Kernel":
    """Compile and load a kernel that no LaunchKey names (unit tests of device
    functions, debugging), bypassing both caches; launched like any other."""
    if SIM:
        return Kernel(None, spec, cuda.jit(spec.pyfunc), "compiled")
    import cupy
    ptx = _compile(spec, _device_cc())
    mod = cupy.cuda.function.Module()
    mod.load(ptx.encode())
    k = Kernel(None, spec, mod.get_function(_entry(ptx)), "compiled")
    k.module = mod
    return k


def _entry(ptx: str) -> str:
    return re.search(r"\.entry\s+([\w$]+)", ptx).group(1)


def _device_cc() -> tuple[int, int]:
    import cupy
    dev = cupy.cuda.Device()
    return tuple(int(c) for c in dev.compute_capability)   # "90" -> (9, 0)


def resolve(key: LaunchKey, stream=None, *, source_out: list | None = None) -> Kernel:
    """LaunchKey -> Kernel.  See the module docstring for the capture contract."""
    k = _MEMORY.get(_mem_key(key))
    if k is not None:
        _STATS["memory"] += 1
        if source_out is not None:
            source_out.append("memory")
        return k
    # A miss.  Decide legality before touching the disk, a module or the compiler.
    if _FROZEN:
        raise KernelResolutionFrozenError(
            f"kernel {key.kernel!r} is not resolved and pymoe.cuda.freeze() is on: "
            f"key={key}. Prewarm the plan (pymoe.cuda.prewarm(plan)) before freezing.")
    if is_capturing(stream):
        raise LaunchNotResolvedError(
            f"kernel {key.kernel!r} is not resolved while the selected stream is capturing "
            f"a CUDA graph: key={key}. Call pymoe.cuda.prewarm(plan) before capture; "
            "nothing was compiled, loaded or enqueued, so the capture can be ended.")
    with _LOCK:
        k = _MEMORY.get(_mem_key(key))
        if k is not None:
            return k
        spec = builder(key.kernel)(key)
        if SIM:
            k = Kernel(key, spec, cuda.jit(spec.pyfunc), "compiled")
            _STATS["compiled"] += 1
        else:
            k = _load_gpu(key, spec)
        _MEMORY[_mem_key(key)] = k
        if source_out is not None:
            source_out.append(k.source)
        return k


def _mem_key(key: LaunchKey) -> tuple:
    return (key, _device_id())


def _device_id() -> int:
    if SIM:
        return 0
    import cupy
    return cupy.cuda.runtime.getDevice()


def _load_gpu(key: LaunchKey, spec: KernelSpec) -> Kernel:
    import cupy
    cc = _device_cc()
    ptx = None
    source = "compiled"
    use_disk = env.get_bool("PYMOE_DISK_CACHE", True)
    if use_disk:
        path = cache_path(key, cc)
        digest = os.path.basename(path)[:-4]
        ptx = _disk_read(path, digest)
        if ptx is not None:
            source = "disk"
    mod = cupy.cuda.function.Module()
    if ptx is not None:
        try:
            mod.load(ptx.encode())
            _STATS["disk"] += 1
        except Exception:      # a foreign or broken entry: recompile and replace
            ptx = None
            mod = cupy.cuda.function.Module()
    if ptx is None:
        source = "compiled"
        ptx = _compile(spec, cc)
        mod.load(ptx.encode())
        if use_disk:
            _disk_write(path, digest, ptx)
    fn = mod.get_function(_entry(ptx))
    k = Kernel(key, spec, fn, source)
    k.module = mod     # keep the module alive with the function
    return k
