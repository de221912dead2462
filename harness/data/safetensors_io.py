"""Reading .safetensors files with numpy alone, bfloat16 included.

numpy has no bfloat16, so `safe_open(framework="np")` cannot return BF16 tensors. We parse the
header ourselves (8-byte little-endian length, then JSON of dtype, shape and data_offsets) and read
each tensor's bytes at its offsets: one code path for every dtype, and only the tensors asked for
are read. BF16 is the top half of an IEEE float32, so its bits shifted left by 16 are that float32.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

import numpy as np

from harness.data.paths import require_finite
from harness.data.workload import DataError

# Readable dtypes, as stored (little-endian); BF16 is read as its raw bits.
DTYPES: dict[str, np.dtype] = {
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
}


def bf16_to_f32(bits: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """uint16 bfloat16 bit patterns -> the float32 values they stand for, exactly; written into
    the float32 array `out` (of bits' shape, no allocation) when given, and returned."""
    if out is None:
        return (bits.astype(np.uint32) << 16).view(np.float32)
    np.left_shift(bits, 16, out=out.view(np.uint32), dtype=np.uint32)
    return out


def is_float(dtype: str) -> bool:
    """Whether a safetensors dtype is a floating type (readable or not: F8_E4M3 is one)."""
    return dtype.startswith(("F", "BF"))


@dataclass(frozen=True)
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]
    start: int  # absolute byte offset of the data in the file
    nbytes: int = 0  # the data's length, where the header says it


class SafetensorsFile:
    """One .safetensors file's header; reads tensors by name, checked finite."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tensors, self.metadata = _read_header(path)

    def info(self, name: str) -> TensorInfo:
        """The header entry of `name`; a missing tensor or an unreadable dtype raises."""
        return tensor_info(self.path, self.tensors, name)

    def read(self, name: str) -> np.ndarray:
        """The tensor as float16/32/64 (BF16 -> float32); NaN or Inf raises."""
        info = self.info(name)
        count = math.prod(info.shape)
        data = np.fromfile(self.path, dtype=DTYPES[info.dtype], count=count, offset=info.start)
        if data.size != count:
            raise DataError(f"{self.path}: tensor {name!r} is cut short; the file is truncated")
        if info.dtype == "BF16":
            data = bf16_to_f32(data)
        return require_finite(data.reshape(info.shape), self.path, name)


def tensor_info(path: Path, tensors: Mapping[str, TensorInfo], name: str) -> TensorInfo:
    """The entry of `name` in a file's table of tensors (a safetensors header, a .bin state
    dict's), checked readable; a missing tensor raises, naming the file."""
    if name not in tensors:
        raise DataError(f"{path}: no tensor {name!r}")
    return check_readable(path, name, tensors[name])


def check_readable(path: Path, name: str, info: TensorInfo) -> TensorInfo:
    """`info` unchanged if its dtype can be read, else an error naming file and tensor."""
    if info.dtype not in DTYPES:
        raise DataError(
            f"{path}: tensor {name!r} has dtype {info.dtype}; expected one of {', '.join(DTYPES)}"
        )
    return info


def _read_header(path: Path) -> tuple[Mapping[str, TensorInfo], object]:
    """The tensors' header entries (read-only), and the file's `__metadata__` as written (the
    format says string to string; only the readers that use it check).

    Parsed once per version of the file (its inode, size and modification time): the workload,
    the plan and every chunk's load open the same files (a top-3 SVD of 18 fine-tunes of a 352M
    model opened them 352 times, 1.1 ms each; now 19 parses). A file rewritten since is parsed
    again."""
    try:
        stat = path.stat()
    except FileNotFoundError as e:
        raise DataError(f"{path}: file not found") from e
    except OSError as e:
        raise DataError(f"{path}: not a readable safetensors file ({e})") from e
    return _parsed_header(path, stat.st_ino, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=1024)
def _parsed_header(path: Path, inode: int, size: int, mtime_ns: int) -> tuple[Mapping[str, TensorInfo], object]:
    """:func:`_read_header` of the file as stat saw it (the key, not read here)."""
    try:
        with path.open("rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            if length > size - 8:
                raise ValueError(f"header length {length} exceeds the file size {size}")
            header = json.loads(f.read(length))
            if not isinstance(header, dict):
                raise ValueError("header is not a JSON object")
    except (OSError, struct.error, ValueError) as e:
        raise DataError(f"{path}: not a readable safetensors file ({e})") from e
    except RecursionError:  # json's parser recurses once per nesting level
        raise DataError(f"{path}: not a readable safetensors file (its header is nested too deeply)") from None
    metadata = header.pop("__metadata__", None)
    base = 8 + length
    tensors = {name: _tensor_info(path, name, entry, base, size) for name, entry in header.items()}
    _refuse_overlaps(path, tensors)
    return MappingProxyType(tensors), metadata


def _refuse_overlaps(path: Path, tensors: Mapping[str, TensorInfo]) -> None:
    """Two tensors sharing bytes is no file safetensors writes: one of them is not what it says."""
    spans = sorted((info.start, info.start + info.nbytes, name) for name, info in tensors.items() if info.nbytes)
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        if start < end:
            raise DataError(f"{path}: tensors {first!r} and {second!r} overlap in the file; expected "
                            "disjoint data_offsets")


def _tensor_info(path: Path, name: str, entry: object, base: int, size: int) -> TensorInfo:
    """A header entry, checked against the file: offsets inside it, byte count matching shape."""
    try:
        dtype = str(entry["dtype"])  # type: ignore[index]
        shape = tuple(_whole(d, "shape") for d in entry["shape"])  # type: ignore[index]
        start, end = (_whole(o, "data_offsets") for o in entry["data_offsets"])  # type: ignore[index]
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{path}: tensor {name!r} has a malformed header entry ({e!r})") from e
    if not 0 <= start <= end <= size - base:
        raise DataError(f"{path}: tensor {name!r} has data_offsets outside the file")
    itemsize = DTYPES[dtype].itemsize if dtype in DTYPES else None
    if itemsize is not None and end - start != math.prod(shape) * itemsize:
        raise DataError(
            f"{path}: tensor {name!r} has {end - start} bytes; {dtype} {list(shape)} needs "
            f"{math.prod(shape) * itemsize}"
        )
    return TensorInfo(dtype, shape, base + start, end - start)


def _whole(value: object, key: str) -> int:
    """A header's count or offset: a JSON integer, not 0.5 (which int() would quietly floor)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key} holds {value!r}; expected whole numbers")
    return value
