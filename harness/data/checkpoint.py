"""Fine-tuned minus base safetensors checkpoints: dW = W_ft - W_base, tensor by tensor.

Only headers are read to build the workload; a load reads just the requested tensors of both
checkpoints, one pair at a time, so neither model is ever held in memory whole.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from harness.data.delta_pieces import delta_pieces, is_warm, pieceable
from harness.data.paths import Entry, FileData, fingerprint_files, name_refs, resolve_paths
from harness.data.delta_stream import StoredTensor, as_stored, read_delta, stream_deltas, stream_stored, streamable
from harness.data.paths import one_shape, require_in_range, unique_names
from harness.data.safetensors_io import SafetensorsFile, TensorInfo, check_readable, is_float
from harness.data.workload import DataError, MatrixRef, Source
from harness.linalg.gram import StoredDeltas
from harness.linalg.piece_gram import StoredPieces
from harness.linalg.prefetch import Ring

INDEX_SUFFIX = ".safetensors.index.json"


class CheckpointData(FileData):
    """`[data] source = "checkpoint"`: each of `paths` is a fine-tuned checkpoint, less `base`."""

    source: Literal["checkpoint"] = "checkpoint"
    base: str = Field(
        description="the base checkpoint: a .safetensors file, a sharded set's "
        f"*{INDEX_SUFFIX}, or a folder holding either"
    )
    include: list[str] = Field(
        default_factory=lambda: ["*"],
        description="fnmatch patterns on tensor names; only 2-D float tensors are taken",
    )


class Checkpoint:
    """A single .safetensors file or a sharded set: tensor name -> the shard holding it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.index = find_index(path)
        if self.index is None:
            shard = path if path.is_file() else single_file(path)
            self.weight_map = dict.fromkeys(SafetensorsFile(shard).tensors, shard)
        else:
            self.weight_map = _read_weight_map(self.index)

    @property
    def name(self) -> str:
        """The adapter name: a .safetensors file's stem, else the checkpoint folder's name."""
        if self.path.is_file() and self.index is None:
            return self.path.stem
        return (self.path if self.path.is_dir() else self.path.parent).name

    @property
    def files(self) -> list[Path]:
        shards = list(dict.fromkeys(self.weight_map.values()))
        return ([self.index] if self.index else []) + shards

    def tensors(self) -> dict[str, TensorInfo]:
        """Every tensor's header entry, each shard's header read once."""
        files = {shard: SafetensorsFile(shard) for shard in set(self.weight_map.values())}
        infos: dict[str, TensorInfo] = {}
        for name, shard in self.weight_map.items():
            if name not in files[shard].tensors:
                raise DataError(f"{shard}: no tensor {name!r}, though {self.index} maps it here")
            infos[name] = files[shard].tensors[name]
        return infos


def find_index(path: Path) -> Path | None:
    if path.is_file():
        return path if path.name.endswith(INDEX_SUFFIX) else None
    indexes = sorted(path.glob("*" + INDEX_SUFFIX))
    if len(indexes) > 1:
        raise DataError(f"{path}: holds several *{INDEX_SUFFIX}; name one of them")
    return indexes[0] if indexes else None


def single_file(folder: Path) -> Path:
    files = sorted(folder.glob("*.safetensors"))
    if len(files) != 1:
        raise DataError(
            f"{folder}: expected one .safetensors file or a *{INDEX_SUFFIX}; found {len(files)} "
            ".safetensors files"
        )
    return files[0]


def _read_weight_map(index: Path) -> dict[str, Path]:
    try:
        weight_map = json.loads(index.read_text())["weight_map"]
        shards = {str(name): index.parent / shard for name, shard in weight_map.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise DataError(
            f"{index}: expected JSON with a weight_map of tensor -> shard file ({e!r})"
        ) from e
    for name, shard in shards.items():
        if not shard.is_file():
            raise DataError(f"{index}: tensor {name!r} maps to {shard}, which does not exist")
    return shards


def _entry(
    tuned: Checkpoint,
    name: str,
    info: TensorInfo,
    base: Checkpoint,
    base_infos: dict[str, TensorInfo],
) -> Entry:
    """One tensor's delta, checked against the base: present, same shape, readable dtypes."""
    shard = tuned.weight_map[name]
    if name not in base_infos:
        raise DataError(f"{base.path}: no tensor {name!r}, which the fine-tuned {shard} has")
    base_shard, base_info = base.weight_map[name], base_infos[name]
    if base_info.shape != info.shape:
        raise DataError(
            f"{shard}: tensor {name!r} has shape {list(info.shape)}, "
            f"but in the base {base_shard} it has {list(base_info.shape)}"
        )
    check_readable(shard, name, info)
    check_readable(base_shard, name, base_info)
    locator = {"tuned": str(shard), "base": str(base_shard), "tensor": name}
    return Entry(tuned.name, name.removesuffix(".weight"), (info.shape[0], info.shape[1]), locator)


def _read(files: dict[str, SafetensorsFile], path: str, ref: MatrixRef) -> np.ndarray:
    """Tensor `ref.locator['tensor']` of `path`, which must still have the ref's shape."""
    name = _stored(files, path, ref).name
    return files[path].read(name)


def _stored(files: dict[str, SafetensorsFile], path: str, ref: MatrixRef) -> StoredTensor:
    """Where tensor `ref.locator['tensor']` of `path` lies, checked to still have the ref's shape."""
    if path not in files:
        files[path] = SafetensorsFile(Path(path))
    name = ref.locator["tensor"]
    info = files[path].info(name)
    if info.shape != ref.shape:
        raise DataError(f"{path}: tensor {name!r} is now {list(info.shape)}; expected {list(ref.shape)}")
    return StoredTensor(Path(path), name, info.start, info.dtype, ref.shape)


def resolve_base(base: str, base_dir: Path) -> Checkpoint:
    """The one checkpoint the spec's `base` names (a file, a sharded set's index, a folder)."""
    bases = resolve_paths([base], base_dir, field="data.base")
    if len(bases) != 1:
        raise DataError(f"base: {base!r} matches {len(bases)} paths; expected one")
    return Checkpoint(bases[0])


class CheckpointSource(Source):
    """Dense deltas of fine-tuned checkpoints against one base; adapter = checkpoint name."""

    has_factors = False
    reads_ahead = True
    hands_stored = True

    def __init__(self, config: CheckpointData, base_dir: Path) -> None:
        self.config = config
        self.base_dir = base_dir

    def _checkpoints(self) -> tuple[list[Checkpoint], Checkpoint]:
        tuned = [Checkpoint(path) for path in resolve_paths(self.config.paths, self.base_dir)]
        unique_names([(ckpt.name, ckpt.path) for ckpt in tuned])
        return tuned, resolve_base(self.config.base, self.base_dir)

    def refs(self) -> list[MatrixRef]:
        tuned, base = self._checkpoints()
        base_infos = base.tensors()
        entries = [
            _entry(ckpt, name, info, base, base_infos)
            for ckpt in tuned
            for name, info in ckpt.tensors().items()
            if len(info.shape) == 2 and is_float(info.dtype) and self._included(name)
        ]
        if not entries:
            raise DataError(
                f"no 2-D float tensor in {self.config.paths} matches include={self.config.include}"
            )
        return self.config.select(name_refs(entries))

    def _included(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.config.include)

    def fingerprint(self) -> str:
        tuned, base = self._checkpoints()
        return fingerprint_files(self.config, [f for ckpt in [*tuned, base] for f in ckpt.files])

    def _streamed(
        self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype
    ) -> list[tuple[list[StoredTensor], StoredTensor]] | None:
        """Each position's tuned tensors and its one base, when every tensor widens exactly to
        `dtype` (then they stream in row blocks); None when one does not (a float64 tensor in a
        narrower run is subtracted in float64, whole)."""
        files: dict[str, SafetensorsFile] = {}
        groups: list[tuple[list[StoredTensor], StoredTensor]] = []
        for refs in positions:
            one_shape(refs)
            tuned = [_stored(files, ref.locator["tuned"], ref) for ref in refs]
            bases = {_stored(files, ref.locator["base"], ref) for ref in refs}
            if len(bases) != 1 or not streamable([*tuned, *bases], dtype):
                return None
            groups.append((tuned, bases.pop()))
        return groups

    def streams(self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype) -> bool:
        return self._streamed(positions, dtype) is not None

    def dense_blocks(
        self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype, ring: Ring
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Row blocks of the deltas, read ahead by one thread across positions
        (harness.data.delta_stream), or each position whole where they cannot stream."""
        groups = self._streamed(positions, dtype)
        if groups is None:
            yield from super().dense_blocks(positions, dtype, ring)
        else:
            yield from stream_deltas(groups, dtype, ring)

    def stored_blocks(
        self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype, ring: Ring
    ) -> Iterator[tuple[int, StoredDeltas]] | None:
        """The streamed row blocks as stored, for BF16 fine-tunes over a BF16 or F32 base
        (delta_stream.as_stored)."""
        groups = self._streamed(positions, dtype)
        if groups is None or not as_stored(groups, dtype):
            return None
        return stream_stored(groups, dtype, ring)

    def stored_pieces(self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype) -> StoredPieces | None:
        """Cache-sized pieces of the files as stored (harness.data.delta_pieces), when they are
        warm (in the page cache, within memory) and the compiled kernel widens them."""
        groups = self._streamed(positions, dtype)
        if groups is None or not pieceable(groups, dtype) or not is_warm(groups):
            return None
        return delta_pieces(groups, dtype)

    def load_dense(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> np.ndarray:
        """Each delta read into its slot of the output a piece at a time, where both tensors
        widen to `dtype` exactly (one correctly rounded difference, as the streamed blocks have
        it); else both whole, subtracted in float64 into the output (numpy's buffered cast: no
        (m, n) float64 temporary)."""
        files: dict[str, SafetensorsFile] = {}
        out = np.empty((len(refs), *one_shape(refs)), dtype=dtype)
        for i, ref in enumerate(refs):
            tuned, base = _stored(files, ref.locator["tuned"], ref), _stored(files, ref.locator["base"], ref)
            if streamable([tuned, base], out.dtype):
                read_delta(tuned, base, out[i])
            else:
                with np.errstate(over="ignore"):
                    np.subtract(_read(files, ref.locator["tuned"], ref), _read(files, ref.locator["base"], ref),
                                out=out[i], dtype=np.float64)
                require_in_range(out[i], tuned.path, tuned.name)
        return out
