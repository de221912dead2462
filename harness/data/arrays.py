"""Plain arrays: .npy files, .npz archives (one matrix per key) and raw memmaps.

Shapes come from the .npy headers (in an .npz, each member's), so building the workload reads
no data; a raw file has no header, so its dtype and shape are given in the spec and checked
against the file's size.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from harness.data.paths import Entry, FileData, fingerprint_files, name_refs, require_finite
from harness.data.paths import one_shape, require_in_range, resolve_paths, unique_names
from harness.data.safetensors_io import bf16_to_f32
from harness.data.workload import DataError, MatrixRef, Source

_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}
# Raw dtypes as stored (little-endian); bfloat16 is read as its bits.
_RAW_DTYPES = {"float16": "<f2", "bfloat16": "<u2", "float32": "<f4", "float64": "<f8"}


class Memmap(BaseModel):
    """A raw, headerless matrix file: `{path = "x.bin", dtype = "float32", shape = [3072, 768]}`."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="file or glob, relative to the spec file's folder")
    dtype: Literal["float16", "bfloat16", "float32", "float64"]
    shape: tuple[Annotated[StrictInt, Field(gt=0)], Annotated[StrictInt, Field(gt=0)]] = Field(description="[rows, cols], row-major")
    offset: StrictInt = Field(0, ge=0, description="bytes to skip before the data")


class ArraysData(FileData):
    """`[data] source = "arrays"`: .npy / .npz files (or folders of them) and raw memmaps."""

    source: Literal["arrays"] = "arrays"
    paths: list[str] = Field(
        default_factory=list, description=".npy/.npz files, folders of them, or globs"
    )
    memmaps: list[Memmap] = Field(default_factory=list)

    @model_validator(mode="after")
    def _some_input(self) -> ArraysData:
        if not self.paths and not self.memmaps:
            raise ValueError("give at least one of paths or memmaps")
        return self


def _npy_header(f: IO[bytes], file: Path, key: str) -> tuple[int, int]:
    """(rows, cols) from a .npy header; anything but a 2-D float array raises."""
    try:
        shape, _, dtype = _HEADER_READERS[np.lib.format.read_magic(f)](f)
    except (ValueError, KeyError, OSError) as e:
        raise DataError(f"{file}: array {key!r} has no readable .npy header ({e!r})") from e
    if len(shape) != 2:
        raise DataError(f"{file}: array {key!r} has shape {list(shape)}; expected a 2-D matrix")
    if not all(shape):
        raise DataError(f"{file}: array {key!r} has shape {list(shape)}; expected a matrix with rows and columns")
    if dtype.kind != "f":
        raise DataError(f"{file}: array {key!r} has dtype {dtype}; expected a float dtype")
    return shape


def _file_entries(path: Path) -> list[Entry]:
    """The matrices of one .npy or .npz file; adapter = file stem, module = stem or key."""
    adapter = path.stem
    if path.suffix == ".npy":
        with path.open("rb") as f:
            return [Entry(adapter, adapter, _npy_header(f, path, adapter), {"file": str(path)})]
    if path.suffix != ".npz":
        raise DataError(f"{path}: expected a .npy or .npz file")
    try:
        with zipfile.ZipFile(path) as archive:
            entries = []
            for member in archive.namelist():
                key = member.removesuffix(".npy")
                with archive.open(member) as f:
                    shape = _npy_header(f, path, key)
                entries.append(Entry(adapter, key, shape, {"file": str(path), "key": key}))
    except zipfile.BadZipFile as e:
        raise DataError(f"{path}: not a readable .npz archive ({e})") from e
    return entries


def _memmap_entry(memmap: Memmap, path: Path) -> Entry:
    """A raw file's matrix, its size checked against dtype, shape and offset."""
    need = memmap.offset + math.prod(memmap.shape) * np.dtype(_RAW_DTYPES[memmap.dtype]).itemsize
    size = path.stat().st_size
    if size != need:
        raise DataError(
            f"{path}: has {size} bytes; {memmap.dtype} {list(memmap.shape)} at offset "
            f"{memmap.offset} needs {need}"
        )
    locator = {"file": str(path), "dtype": memmap.dtype, "offset": memmap.offset}
    return Entry(path.stem, path.stem, memmap.shape, locator)


def _read(ref: MatrixRef) -> tuple[np.ndarray, str]:
    """(array, its name in errors) of one ref, as stored."""
    loc = ref.locator
    file = Path(loc["file"])
    if "dtype" in loc:
        count = math.prod(ref.shape)
        data = np.fromfile(file, dtype=_RAW_DTYPES[loc["dtype"]], count=count, offset=loc["offset"])
        data = bf16_to_f32(data) if loc["dtype"] == "bfloat16" else data
        return (data.reshape(ref.shape) if data.size == count else data), file.stem
    if "key" in loc:
        with np.load(file) as archive:
            return archive[loc["key"]], loc["key"]
    return np.load(file), file.stem


def _load(ref: MatrixRef) -> np.ndarray:
    """One ref's matrix, checked to still have its shape and to be finite."""
    file = ref.locator["file"]
    try:
        array, name = _read(ref)
    except (OSError, ValueError, KeyError) as e:
        raise DataError(f"{file}: cannot read {ref.id!r} ({e})") from e
    if array.shape != ref.shape:
        raise DataError(
            f"{file}: array {name!r} is now {list(array.shape)}; expected {list(ref.shape)}"
        )
    return require_finite(array, file, name)


class ArraysSource(Source):
    """Dense matrices from .npy/.npz/raw files; the adapter name is the file stem."""

    has_factors = False
    reads_ahead = True

    def __init__(self, config: ArraysData, base_dir: Path) -> None:
        self.config = config
        self.base_dir = base_dir

    def _files(self) -> list[Path]:
        """The .npy/.npz files named by `paths`, folders expanded to their .npy/.npz files."""
        files: list[Path] = []
        for path in resolve_paths(self.config.paths, self.base_dir):
            if path.is_dir():
                found = sorted(p for p in path.iterdir() if p.suffix in (".npy", ".npz"))
                if not found:
                    raise DataError(f"{path}: folder holds no .npy or .npz files")
                files += found
            else:
                files.append(path)
        return files

    def _memmaps(self) -> list[tuple[Memmap, Path]]:
        return [
            (memmap, path)
            for memmap in self.config.memmaps
            for path in resolve_paths([memmap.path], self.base_dir, field="data.memmaps")
        ]

    def refs(self) -> list[MatrixRef]:
        files, memmaps = self._files(), self._memmaps()
        unique_names([(p.stem, p) for p in files] + [(p.stem, p) for _, p in memmaps])
        entries = [e for path in files for e in _file_entries(path)]
        entries += [_memmap_entry(memmap, path) for memmap, path in memmaps]
        return self.config.select(name_refs(entries))

    def fingerprint(self) -> str:
        files = self._files() + [path for _, path in self._memmaps()]
        return fingerprint_files(self.config, files)

    def load_dense(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> np.ndarray:
        one_shape(refs)
        with np.errstate(over="ignore"):
            stacked = np.stack([_load(ref) for ref in refs], dtype=dtype)
        for ref, matrix in zip(refs, stacked):
            require_in_range(matrix, ref.locator["file"], ref.id)
        return stacked
