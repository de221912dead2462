"""What the file-backed sources share: the `paths`/`modules`/`layers` fields, resolving `paths`,
fingerprinting the files read, naming matrices from module paths, and the finiteness check.

A matrix is named from its module path (`model.layers.12.mlp.down_proj`): the first all-digit
component is the layer (12) and what follows it the module (`mlp.down_proj`), so the same module
of different models gets the same name whatever wraps the layer stack.
"""

from __future__ import annotations

import errno
import glob
import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.data import content_hashes
from harness.data.workload import DataError, MatrixRef

_LAYER = re.compile(r"(?:.*?\.)?(?P<layer>\d+)\.(?P<module>.+)")
MAX_LAYER = 1 << 20
_RANGE = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def parse_layers(text: str) -> frozenset[int]:
    """'0-15' or '0,2,4-6' -> the layer indices it names."""
    layers: set[int] = set()
    for part in text.split(","):
        match = _RANGE.fullmatch(part)
        if match is None:
            raise ValueError(f"{part.strip()!r} is not N or N-M (e.g. '0-15' or '0,2,4-6')")
        low, high = int(match[1]), int(match[2] or match[1])
        if high < low:
            raise ValueError(f"range {part.strip()!r} runs backwards")
        if high > MAX_LAYER:  # the set is built in memory: 0-999999999999 would not end
            raise ValueError(f"range {part.strip()!r} goes past layer {MAX_LAYER}")
        layers.update(range(low, high + 1))
    return frozenset(layers)


def module_matches(module: str, names: Iterable[str]) -> bool:
    """Whether `module` is one of `names` or ends with '.' + one: 'q_proj' ~ 'self_attn.q_proj'."""
    return any(module == name or module.endswith("." + name) for name in names)


class FileData(BaseModel):
    """Fields every file-backed `[data]` source has."""

    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(
        min_length=1, description="files, folders or globs, relative to the spec file's folder"
    )
    modules: list[str] | None = Field(
        None, description="keep modules equal to, or ending in '.' + one of, these names"
    )
    layers: str | None = Field(
        None, description="keep these layers, e.g. '0-15' or '0,2,4-6'; drops layerless matrices"
    )

    @field_validator("layers")
    @classmethod
    def _valid_layers(cls, layers: str | None) -> str | None:
        if layers is not None:
            parse_layers(layers)
        return layers

    def select(self, refs: list[MatrixRef]) -> list[MatrixRef]:
        """The refs the `modules` and `layers` filters keep; none kept is an error."""
        layers = parse_layers(self.layers) if self.layers is not None else None
        kept = [
            ref
            for ref in refs
            if (self.modules is None or module_matches(ref.module, self.modules))
            and (layers is None or ref.layer in layers)
        ]
        if not kept:
            raise DataError(
                f"no matrices in {self.paths} pass the filters "
                f"modules={self.modules}, layers={self.layers!r} ({len(refs)} before filtering)"
            )
        return kept


class PathError(DataError):
    """A spec key (`data.paths`, `data.base`, `data.memmaps`) names no file: the spec's mistake,
    which `validate` and `plan` report as `FILE: key: message` like any other."""


def resolve_paths(patterns: Sequence[str], base_dir: Path, field: str = "data.paths") -> list[Path]:
    """Absolute paths named by `patterns` (relative to base_dir; globs sorted), each once, in order.

    `field` names the spec key (as `validate` and `plan` write keys) in the error when a pattern matches nothing.
    """
    base_dir = base_dir.absolute()
    found: dict[Path, None] = {}
    for pattern in patterns:
        expanded = os.path.expanduser(pattern)
        if glob.has_magic(expanded):
            hits = sorted(glob.glob(expanded, root_dir=base_dir, recursive=True))
        else:
            hits = [expanded] if (base_dir / expanded).exists() else []
        if not hits and os.path.islink(base_dir / expanded):
            hits = [expanded]  # a link that leads nowhere: say so, not "matches nothing"
        if not hits:
            raise PathError(f"{field}: {pattern!r} matches nothing (relative to {base_dir})")
        found.update(dict.fromkeys(reachable(Path(os.path.normpath(base_dir / hit))) for hit in hits))
    return list(found)


def reachable(path: Path, expected: str = "a file or folder") -> Path:
    """`path` unchanged if it leads to a file or folder; a glob also matches a symbolic link that
    is dangling or loops, which would otherwise pass for a folder holding nothing (or, as `-o`,
    for a folder yet to be made)."""
    try:
        path.stat()
    except OSError as e:
        what = {errno.ELOOP: "a symbolic link loop", errno.ENOENT: "a dangling symbolic link"}.get(e.errno or 0, "unreadable")
        raise DataError(f"{path}: {what} ({e.strerror}); expected {expected}") from None
    return path


def fingerprint_files(config: BaseModel, files: Iterable[Path]) -> str:
    """sha256 over the config and, per file, its path and content hash (harness.data.content_hashes)."""
    digest = hashlib.sha256(config.model_dump_json().encode())
    for path in files:
        digest.update(f"{path}\0{content_hashes.digest(path)}\n".encode())
    return digest.hexdigest()


def split_module_path(path: str) -> tuple[int | None, str]:
    """'model.layers.12.mlp.down_proj' -> (12, 'mlp.down_proj'); no layer index -> (None, path)."""
    match = _LAYER.fullmatch(path)
    if match is None:
        return None, path
    return int(match["layer"]), match["module"]


@dataclass(frozen=True)
class Entry:
    """A matrix found in a file, before naming: `path` is its module path in the model."""

    adapter: str
    path: str
    shape: tuple[int, int]
    locator: dict[str, Any]
    rank: int | None = None
    kron: tuple[int, int, int, int] | None = None


def _ref_id(adapter: str, layer: int | None, module: str) -> str:
    return f"{adapter}/" + ("" if layer is None else f"layer{layer}/") + module


def name_refs(entries: Sequence[Entry]) -> list[MatrixRef]:
    """MatrixRefs `adapter/layerN/module`, in natural order of module path within each adapter.

    Where two module paths of the source share a (layer, module) name (an encoder's and a
    decoder's layer 0), those keep their full path as module: ids are unique, the same in every
    adapter, and independent of the filters.
    """
    order = {adapter: i for i, adapter in enumerate(dict.fromkeys(e.adapter for e in entries))}
    ordered = sorted(entries, key=lambda e: (order[e.adapter], _natural(e.path)))
    split = [split_module_path(e.path) for e in ordered]
    sources: dict[tuple[int | None, str], set[str]] = {}
    for e, name in zip(ordered, split):
        sources.setdefault(name, set()).add(e.path)
    refs: list[MatrixRef] = []
    for e, (layer, module) in zip(ordered, split):
        if len(sources[(layer, module)]) > 1:
            module = e.path
        refs.append(
            MatrixRef(
                id=_ref_id(e.adapter, layer, module),
                adapter=e.adapter,
                layer=layer,
                module=module,
                shape=e.shape,
                rank=e.rank,
                kron=e.kron,
                locator=e.locator,
            )
        )
    duplicates = [i for i, n in Counter(ref.id for ref in refs).items() if n > 1]
    if duplicates:
        raise DataError(f"two tensors map to one matrix name {duplicates[0]!r}")
    return refs


def _natural(text: str) -> list[tuple[int, int | str]]:
    """Sort key that orders 'layers.2' before 'layers.10'."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text)]


def unique_names(named: Sequence[tuple[str, Path]]) -> None:
    """Two inputs with one adapter name would merge their matrices; refuse that."""
    seen: dict[str, Path] = {}
    for name, path in named:
        if name in seen:
            raise DataError(
                f"{seen[name]} and {path} both give adapter name {name!r}; "
                "adapter names come from file or folder names and must be unique"
            )
        seen[name] = path


def one_shape(refs: Sequence[MatrixRef]) -> tuple[int, int]:
    """The shape all `refs` share; a load stacks them, so mixed shapes are a caller's bug."""
    shapes = {ref.shape for ref in refs}
    if len(shapes) != 1:
        raise ValueError(f"a load needs refs of one shape, got {sorted(shapes)}")
    return shapes.pop()


def require_in_range(values: np.ndarray, file: Path | str, tensor: str) -> np.ndarray:
    """`values` unchanged; Inf raises: finite inputs made it by overflowing the run's dtype as
    they were narrowed into it or subtracted (a float64 1e300 read into a float32 run)."""
    if not np.isfinite(values).all():
        raise DataError(f"{file}: tensor {tensor!r} overflows {values.dtype} (|values| up to "
                        f"{np.finfo(values.dtype).max:.3g}); expected values in the run's dtype range")
    return values


def require_finite(array: np.ndarray, file: Path | str, tensor: str) -> np.ndarray:
    """`array` unchanged; NaN or Inf raises, naming the file and tensor."""
    if not np.isfinite(array).all():
        bad = "NaN" if np.isnan(array).any() else "Inf"
        raise DataError(f"{file}: tensor {tensor!r} contains {bad}; expected finite values")
    return array
