"""safetensors without torch: a header parser, np.memmap views, a writer.

File layout (safetensors spec, all little-endian)::

    [ u64 N ][ N bytes JSON header, space padded ][ data bytes ............... ]
              {"name": {"dtype": "BF16", "shape": [E, F],
                        "data_offsets": [begin, end]},     # relative to data start
               "__metadata__": {"str": "str"}}

Every tensor is a zero-copy view of one read-only ``np.memmap`` of the data
region: nothing is read from disk until a kernel (or ``prepare_weights``)
touches the bytes.  Dtypes NumPy lacks come back as their bits, so neither
torch nor ml_dtypes is needed::

    BF16 -> uint16 (bf16 bits)     F8_E4M3, F8_E5M2, F8_E8M0 -> uint8 (bytes)

Sharded checkpoints (``model.safetensors.index.json``: ``{"weight_map":
{name: file}}``) open one shard at a time, on first use.

    >>> import numpy as np, tempfile, os
    >>> from pymoe.io import save_safetensors, open_checkpoint
    >>> p = os.path.join(tempfile.mkdtemp(), "a.safetensors")
    >>> save_safetensors(p, {"w": np.arange(6, dtype=np.uint8).reshape(2, 3),
    ...                      "b": (np.array([0x3F80], np.uint16), "BF16")})
    >>> ck = open_checkpoint(p)
    >>> ck.get("w").tolist(), ck.info("b").dtype, ck.get_float32("b").tolist()
    ([[0, 1, 2], [3, 4, 5]], 'BF16', [1.0])
"""
from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

import numpy as np

from ..dtypes import to_float32

__all__ = ["DTYPES", "TensorInfo", "SafetensorsFile", "Checkpoint", "open_checkpoint",
           "save_safetensors", "save_sharded", "INDEX_NAME"]

INDEX_NAME = "model.safetensors.index.json"

# safetensors dtype string -> the NumPy dtype its bytes are viewed as.  Float
# types NumPy lacks are returned as raw bits of the same width.
DTYPES = {
    "BOOL": np.dtype("?"), "U8": np.dtype("u1"), "I8": np.dtype("i1"),
    "U16": np.dtype("<u2"), "I16": np.dtype("<i2"), "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"), "U64": np.dtype("<u8"), "I64": np.dtype("<i8"),
    "F16": np.dtype("<f2"), "F32": np.dtype("<f4"), "F64": np.dtype("<f8"),
    "BF16": np.dtype("<u2"),
    "F8_E4M3": np.dtype("u1"), "F8_E5M2": np.dtype("u1"), "F8_E8M0": np.dtype("u1"),
}
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")

# NumPy dtype (by name, so ml_dtypes arrays need no import here) -> safetensors
_FROM_NUMPY = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "uint16": "U16", "int16": "I16",
    "uint32": "U32", "int32": "I32", "uint64": "U64", "int64": "I64",
    "float16": "F16", "float32": "F32", "float64": "F64", "bfloat16": "BF16",
    "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2", "float8_e8m0fnu": "F8_E8M0",
}
_MAX_HEADER = 100 << 20   # the Rust reader's limit: a larger N means a corrupt file


@dataclass(frozen=True)
class TensorInfo:
    """One header entry: ``dtype`` is the safetensors string ('BF16', 'F8_E4M3' ...)."""
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int          # byte offsets relative to the data region
    end: int
    file: str


class SafetensorsFile:
    """One .safetensors file: the parsed header and views into a memmap of its data."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        size = os.path.getsize(self.path)
        with open(self.path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ValueError(f"{self.path}: {size} bytes, too short for a safetensors "
                                 "header (8-byte length + JSON)")
            (n,) = struct.unpack("<Q", head)
            if n > min(_MAX_HEADER, size - 8):
                raise ValueError(f"{self.path}: header length {n} exceeds the file "
                                 f"({size} bytes) or {_MAX_HEADER} bytes: not safetensors")
            try:
                header = json.loads(f.read(n))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise ValueError(f"{self.path}: header is not valid JSON ({e})") from None
        if not isinstance(header, dict):
            raise ValueError(f"{self.path}: header is {type(header).__name__}, expected an object")
        self.data_start = 8 + n
        self.data_nbytes = size - self.data_start
        self.metadata: dict = header.pop("__metadata__", None) or {}
        self.tensors: dict[str, TensorInfo] = {
            name: self._entry(name, e) for name, e in header.items()}
        self._data = None

    def _entry(self, name: str, e) -> TensorInfo:
        try:
            dtype, shape, (begin, end) = e["dtype"], tuple(e["shape"]), e["data_offsets"]
            ok = (isinstance(dtype, str) and all(isinstance(d, int) and d >= 0 for d in shape)
                  and isinstance(begin, int) and isinstance(end, int))
        except (TypeError, KeyError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"{self.path}: tensor {name!r}: malformed header entry {e!r}")
        if not 0 <= begin <= end <= self.data_nbytes:
            raise ValueError(f"{self.path}: tensor {name!r}: data_offsets [{begin}, {end}] "
                             f"outside the data region of {self.data_nbytes} bytes")
        if dtype in DTYPES and end - begin != math.prod(shape) * DTYPES[dtype].itemsize:
            raise ValueError(f"{self.path}: tensor {name!r}: {end - begin} bytes for dtype "
                             f"{dtype} shape {list(shape)} (expected "
                             f"{math.prod(shape) * DTYPES[dtype].itemsize})")
        return TensorInfo(name, dtype, shape, begin, end, self.path)

    @property
    def data(self) -> np.ndarray:
        """uint8 memmap of the whole data region (mapped on first use, read-only)."""
        if self._data is None:
            if self.data_nbytes == 0:      # mmap cannot map zero bytes
                self._data = np.zeros(0, np.uint8)
            else:
                self._data = np.memmap(self.path, dtype=np.uint8, mode="r",
                                       offset=self.data_start, shape=(self.data_nbytes,))
        return self._data

    def keys(self):
        return self.tensors.keys()

    def __contains__(self, name) -> bool:
        return name in self.tensors

    def info(self, name: str) -> TensorInfo:
        try:
            return self.tensors[name]
        except KeyError:
            raise ValueError(f"missing tensor {name!r} in {self.path}") from None

    def get(self, name: str) -> np.ndarray:
        """Zero-copy read-only view of tensor ``name`` (see the module docstring for dtypes)."""
        t = self.info(name)
        if t.dtype not in DTYPES:
            raise ValueError(f"tensor {name!r} in {self.path}: dtype {t.dtype!r} is not "
                             f"supported (readable: {', '.join(DTYPES)})")
        # slices of a uint8 memmap are views; .view() of a 1-D contiguous slice never
        # copies (an unaligned start gives an unaligned array, still correct)
        return self.data[t.begin:t.end].view(DTYPES[t.dtype]).reshape(t.shape)


class Checkpoint:
    """Tensors by name across one file or the shards of a sharded checkpoint."""

    def __init__(self, weight_map: Mapping[str, str], *, root: str, files=None):
        self.root = root
        self.weight_map = dict(weight_map)        # name -> absolute file path
        self._files: dict[str, SafetensorsFile] = dict(files or {})

    def _file(self, path: str) -> SafetensorsFile:
        f = self._files.get(path)
        if f is None:
            if not os.path.exists(path):
                raise ValueError(f"shard {path} (named in {INDEX_NAME}) does not exist")
            f = self._files[path] = SafetensorsFile(path)
        return f

    def keys(self):
        return self.weight_map.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.weight_map)

    def __contains__(self, name) -> bool:
        return name in self.weight_map

    def __len__(self) -> int:
        return len(self.weight_map)

    def info(self, name: str) -> TensorInfo:
        path = self.weight_map.get(name)
        if path is None:
            raise ValueError(f"missing tensor {name!r} in checkpoint {self.root}")
        f = self._file(path)
        if name not in f:
            raise ValueError(f"tensor {name!r}: {INDEX_NAME} maps it to {path}, "
                             "which does not hold it")
        return f.info(name)

    def get(self, name: str) -> np.ndarray:
        """Zero-copy view of ``name`` (uint16 bits for BF16, uint8 for FP8)."""
        self.info(name)
        return self._file(self.weight_map[name]).get(name)

    def get_float32(self, name: str) -> np.ndarray:
        """float32 copy of a float tensor; BF16 and F16 widen exactly."""
        t = self.info(name)
        a = self.get(name)
        if t.dtype == "BF16":    # bf16 is the top half of a float32
            return to_float32(a, "bfloat16")
        if t.dtype not in FLOAT_DTYPES:
            raise ValueError(f"tensor {name!r}: dtype {t.dtype}, expected one of "
                             f"{FLOAT_DTYPES}")
        return a.astype(np.float32)

    def __repr__(self) -> str:
        n = len(set(self.weight_map.values()))
        return f"Checkpoint({self.root!r}, tensors={len(self)}, files={n})"


def open_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Open a .safetensors file, an index json, or a directory.

    A directory is read through its ``model.safetensors.index.json`` when there
    is one, else as the union of its ``*.safetensors`` files (a name held by
    two files is an error).
    """
    path = os.fspath(path)
    if isinstance(path, str) and os.path.isdir(path):
        index = os.path.join(path, INDEX_NAME)
        if os.path.exists(index):
            return _open_index(index)
        names = sorted(n for n in os.listdir(path) if n.endswith(".safetensors"))
        if not names:
            raise ValueError(f"{path}: no {INDEX_NAME} and no *.safetensors files")
        files, wm = {}, {}
        for n in names:
            f = files[os.path.join(path, n)] = SafetensorsFile(os.path.join(path, n))
            for k in f.keys():
                if k in wm:
                    raise ValueError(f"tensor {k!r} is in both {wm[k]} and {f.path}")
                wm[k] = f.path
        return Checkpoint(wm, root=path, files=files)
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file or directory")
    if path.endswith(".json"):
        return _open_index(path)
    f = SafetensorsFile(path)
    return Checkpoint({k: f.path for k in f.keys()}, root=path, files={f.path: f})


def _open_index(index: str) -> Checkpoint:
    with open(index) as fh:
        try:
            wm = json.load(fh)["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"{index}: not a safetensors index (needs 'weight_map'): "
                             f"{e!r}") from None
    root = os.path.dirname(os.path.abspath(index))
    return Checkpoint({k: os.path.join(root, v) for k, v in wm.items()}, root=root)


# ----------------------------------------------------------------------------- writing

def _as_entry(name: str, t) -> tuple[str, np.ndarray]:
    """(dtype string, little-endian C-contiguous array) for one tensor to write."""
    if isinstance(t, tuple):
        arr, dtype = t
        arr = np.asarray(arr)
        if dtype not in DTYPES:
            raise ValueError(f"tensor {name!r}: dtype {dtype!r} cannot be written "
                             f"(known: {', '.join(DTYPES)})")
        if arr.dtype.itemsize != DTYPES[dtype].itemsize:
            raise ValueError(f"tensor {name!r}: array dtype {arr.dtype} has "
                             f"{arr.dtype.itemsize}-byte items, {dtype} needs "
                             f"{DTYPES[dtype].itemsize} (pass its bits, e.g. uint16 for BF16)")
        if arr.dtype.kind in "iuf" and arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
    else:
        arr = np.asarray(t)
        dtype = _FROM_NUMPY.get(arr.dtype.name)
        if dtype is None:
            raise ValueError(f"tensor {name!r}: NumPy dtype {arr.dtype} has no safetensors "
                             "dtype; pass (array, 'DTYPE') with its raw bits")
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
    # not ascontiguousarray: it turns a 0-d array (a scalar global scale) into [1]
    return dtype, np.require(arr, requirements="C")


def save_safetensors(path: str | os.PathLike, tensors: Mapping[str, object], *,
                     metadata: Mapping[str, str] | None = None) -> None:
    """Write a .safetensors file.

    tensors: name -> NumPy array (dtype inferred; ml_dtypes' bfloat16 / float8
    types included) or (array, dtype string) where the array holds the raw bits
    with the right item size: (uint16 bits, 'BF16'), (uint8 bytes, 'F8_E4M3').
    Tensors are stored largest item size first (then by name), as the
    safetensors library does, so every view is aligned to its item size.
    """
    entries = {name: _as_entry(name, t) for name, t in tensors.items()}
    order = sorted(entries, key=lambda n: (-DTYPES[entries[n][0]].itemsize, n))
    header: dict = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for name in order:
        dtype, arr = entries[name]
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)         # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for name in order:
            f.write(entries[name][1].tobytes())


def save_sharded(directory: str | os.PathLike, shards: Sequence[Mapping[str, object]], *,
                 metadata: Mapping[str, str] | None = None) -> str:
    """Write ``shards`` as model-0000i-of-0000n.safetensors plus the index; returns its path."""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_safetensors(os.path.join(directory, fname), shard, metadata=metadata)
        for name, t in shard.items():
            if name in weight_map:
                raise ValueError(f"tensor {name!r} is in shard {weight_map[name]} and {fname}")
            weight_map[name] = fname
            total += np.asarray(t[0] if isinstance(t, tuple) else t).nbytes
    index = os.path.join(directory, INDEX_NAME)
    with open(index, "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    return index
