from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.random import Generator

from harness.data.checkpoint import CheckpointData, CheckpointSource
from harness.data.workload import DataError, MatrixRef, Workload

Writer = Callable[..., Path]
Tensors = dict[str, np.ndarray]

M, N = 16, 12
F64 = np.dtype(np.float64)


def normal(rng: Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def model(rng: Generator, layers: int = 2) -> Tensors:
    """A tiny decoder's state dict: 2-D weights plus tensors a delta must skip."""
    tensors = {"model.embed_tokens.weight": normal(rng, (20, N))}
    for i in range(layers):
        tensors[f"model.layers.{i}.self_attn.q_proj.weight"] = normal(rng, (M, N))
        tensors[f"model.layers.{i}.mlp.down_proj.weight"] = normal(rng, (N, M))
        tensors[f"model.layers.{i}.input_layernorm.weight"] = np.ones(N, np.float32)  # 1-D
    tensors["model.position_ids"] = np.arange(8, dtype=np.int64)[None]  # 2-D but integer
    return tensors


def tuned(base: Tensors, rng: Generator) -> Tensors:
    """The base with every float tensor moved."""
    return {k: v + normal(rng, v.shape) if v.dtype.kind == "f" else v for k, v in base.items()}


def write_sharded(folder: Path, tensors: Tensors, write: Writer, shards: int = 2) -> Path:
    """A Hugging Face sharded checkpoint: model-0000i-of-0000n.safetensors + the index."""
    names = sorted(tensors)
    weight_map: dict[str, str] = {}
    for i in range(shards):
        shard = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {name: tensors[name] for name in names[i::shards]}
        write(folder / shard, part)
        weight_map |= dict.fromkeys(part, shard)
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


def source(base_dir: Path, paths: list[str], base: str, **kwargs: Any) -> CheckpointSource:
    return CheckpointSource(CheckpointData(paths=paths, base=base, **kwargs), base_dir)


def check_deltas(src: CheckpointSource, models: dict[str, Tensors], base: Tensors) -> None:
    """Every delta equals ft - base computed here in float64."""
    for group in Workload.from_source(src).groups():
        dense = src.load_dense(group.refs, F64)
        for i, ref in enumerate(group.refs):
            name = ref.locator["tensor"]
            want = models[ref.adapter][name].astype(np.float64) - base[name].astype(np.float64)
            np.testing.assert_array_equal(dense[i], want)


@pytest.fixture
def rng() -> Generator:
    return np.random.default_rng(0)


@pytest.mark.parametrize("tuned_sharded", [False, True])
@pytest.mark.parametrize("base_sharded", [False, True])
def test_single_and_sharded(
    tmp_path: Path,
    rng: Generator,
    write_safetensors: Writer,
    tuned_sharded: bool,
    base_sharded: bool,
) -> None:
    base = model(rng)
    ft = tuned(base, rng)
    if base_sharded:
        write_sharded(tmp_path / "base", base, write_safetensors)
    else:
        write_safetensors(tmp_path / "base" / "model.safetensors", base)
    if tuned_sharded:
        ft_path = write_sharded(tmp_path / "math_ft", ft, write_safetensors).name
    else:
        ft_path = write_safetensors(tmp_path / "math_ft.safetensors", ft).name
    src = source(tmp_path, [ft_path], "base")
    refs = src.refs()
    assert [r.id for r in refs] == [
        "math_ft/model.embed_tokens",
        "math_ft/layer0/mlp.down_proj",
        "math_ft/layer0/self_attn.q_proj",
        "math_ft/layer1/mlp.down_proj",
        "math_ft/layer1/self_attn.q_proj",
    ]
    assert refs[1].shape == (N, M) and refs[0].layer is None and not src.has_factors
    check_deltas(src, {"math_ft": ft}, base)


def test_several_models_include_and_filters(
    tmp_path: Path, rng: Generator, write_safetensors: Writer
) -> None:
    base = model(rng, layers=4)
    write_safetensors(tmp_path / "base.safetensors", base)
    models = {name: tuned(base, rng) for name in ("code", "chat")}
    for name, tensors in models.items():
        write_safetensors(tmp_path / "ft" / f"{name}.safetensors", tensors)
    include = ["*.self_attn.*", "*.mlp.*"]
    src = source(tmp_path, ["ft/*.safetensors"], "base.safetensors", include=include, layers="1-2")
    modules = ("mlp.down_proj", "self_attn.q_proj")
    assert [r.id for r in src.refs()] == [
        f"{name}/layer{i}/{module}"
        for name in ("chat", "code")
        for i in (1, 2)
        for module in modules
    ]
    check_deltas(src, models, base)


def test_bf16_checkpoints_are_exact(
    tmp_path: Path, write_safetensors: Writer, bf16_exact: Callable[..., np.ndarray]
) -> None:
    rng = np.random.default_rng(1)
    name = "model.layers.0.mlp.up_proj.weight"
    base, ft = {name: bf16_exact(rng, (M, N))}, {name: bf16_exact(rng, (M, N))}
    write_safetensors(tmp_path / "base.safetensors", base, bf16=True)
    write_safetensors(tmp_path / "ft.safetensors", ft, bf16=True)
    check_deltas(source(tmp_path, ["ft.safetensors"], "base.safetensors"), {"ft": ft}, base)


def test_encoder_decoder_names_stay_unique(
    tmp_path: Path, rng: Generator, write_safetensors: Writer
) -> None:
    """Layer 0 of both stacks would share 'layer0/layer.0.SelfAttention.q': they keep full paths."""
    names = [
        "encoder.block.0.layer.0.SelfAttention.q",
        "decoder.block.0.layer.0.SelfAttention.q",
        "encoder.block.1.layer.0.SelfAttention.q",
    ]
    base = {f"{name}.weight": normal(rng, (M, M)) for name in names}
    write_safetensors(tmp_path / "base.safetensors", base)
    write_safetensors(tmp_path / "t5.safetensors", tuned(base, rng))
    refs = source(tmp_path, ["t5.safetensors"], "base.safetensors").refs()
    assert [(r.id, r.layer) for r in refs] == [
        ("t5/layer0/decoder.block.0.layer.0.SelfAttention.q", 0),
        ("t5/layer0/encoder.block.0.layer.0.SelfAttention.q", 0),
        ("t5/layer1/layer.0.SelfAttention.q", 1),
    ]


# Each writes a bad base/fine-tuned pair under `tmp` and returns (file the error names, detail).
def _missing_in_base(tmp: Path, rng: Generator, write: Writer) -> tuple[Path, str]:
    base = model(rng)
    ft = tuned(base, rng)
    del base["model.layers.1.mlp.down_proj.weight"]
    write(tmp / "base.safetensors", base)
    write(tmp / "ft.safetensors", ft)
    return tmp / "base.safetensors", "no tensor 'model.layers.1.mlp.down_proj.weight'"


def _shape_mismatch(tmp: Path, rng: Generator, write: Writer) -> tuple[Path, str]:
    base = model(rng)
    resized = {"model.embed_tokens.weight": np.ones((22, N), np.float32)}  # a grown vocabulary
    write(tmp / "base.safetensors", base)
    write(tmp / "ft.safetensors", tuned(base, rng) | resized)
    return tmp / "ft.safetensors", "tensor 'model.embed_tokens.weight' has shape [22, 12]"


def _missing_shard(tmp: Path, rng: Generator, write: Writer) -> tuple[Path, str]:
    base = model(rng)
    write(tmp / "base.safetensors", base)
    write_sharded(tmp / "ft", tuned(base, rng), write)
    (tmp / "ft" / "model-00002-of-00002.safetensors").unlink()
    return tmp / "ft" / "model.safetensors.index.json", "model-00002-of-00002.safetensors"


def _bad_index(tmp: Path, rng: Generator, write: Writer) -> tuple[Path, str]:
    base = model(rng)
    write(tmp / "base.safetensors", base)
    write_sharded(tmp / "ft", tuned(base, rng), write)
    (tmp / "ft" / "model.safetensors.index.json").write_text('{"metadata": {}}')
    return tmp / "ft" / "model.safetensors.index.json", "weight_map"


def _index_names_absent_tensor(tmp: Path, rng: Generator, write: Writer) -> tuple[Path, str]:
    base = model(rng)
    write(tmp / "base.safetensors", base)
    write_sharded(tmp / "ft", tuned(base, rng), write)
    index = tmp / "ft" / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    data["weight_map"]["model.extra.weight"] = "model-00001-of-00002.safetensors"
    index.write_text(json.dumps(data))
    return tmp / "ft" / "model-00001-of-00002.safetensors", "no tensor 'model.extra.weight'"


def _two_files_no_index(tmp: Path, rng: Generator, write: Writer) -> tuple[Path, str]:
    base = model(rng)
    write(tmp / "base.safetensors", base)
    write(tmp / "ft" / "a.safetensors", base)
    write(tmp / "ft" / "b.safetensors", base)
    return tmp / "ft", "found 2"


def _no_base(tmp: Path, rng: Generator, write: Writer) -> tuple[Path, str]:
    write(tmp / "ft.safetensors", model(rng))
    return Path("data.base"), "'base.safetensors' matches nothing"  # the spec key, not a file


def _unreadable_float(tmp: Path, rng: Generator, write: Writer) -> tuple[Path, str]:
    base = model(rng)
    write(tmp / "base.safetensors", base)
    path = write(tmp / "ft.safetensors", tuned(base, rng))
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    header["model.layers.0.self_attn.q_proj.weight"]["dtype"] = "F8_E4M3"  # numpy has no float8
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + raw[8 + length :])
    return path, "tensor 'model.layers.0.self_attn.q_proj.weight' has dtype F8_E4M3"


@pytest.mark.parametrize(
    "make",
    [
        _missing_in_base,
        _shape_mismatch,
        _missing_shard,
        _bad_index,
        _index_names_absent_tensor,
        _two_files_no_index,
        _no_base,
        _unreadable_float,
    ],
)
def test_bad_checkpoints_name_file_and_tensor(
    tmp_path: Path, write_safetensors: Writer, make: Callable[..., tuple[Path, str]]
) -> None:
    file, detail = make(tmp_path, np.random.default_rng(2), write_safetensors)
    ft = "ft" if (tmp_path / "ft").is_dir() else "ft.safetensors"
    with pytest.raises(DataError) as info:
        source(tmp_path, [ft], "base.safetensors").refs()
    message = str(info.value)
    assert message.startswith(f"{file}: ") and detail in message, message
    assert "\n" not in message


@pytest.mark.parametrize(("bad", "word"), [(np.nan, "NaN"), (np.inf, "Inf")])
@pytest.mark.parametrize("which", ["ft", "base"])
def test_nan_and_inf_raise_on_load(
    tmp_path: Path, rng: Generator, write_safetensors: Writer, bad: float, word: str, which: str
) -> None:
    base = model(rng)
    ft = tuned(base, rng)
    name = "model.layers.1.self_attn.q_proj.weight"
    (ft if which == "ft" else base)[name][3, 4] = bad
    write_safetensors(tmp_path / "base.safetensors", base)
    write_safetensors(tmp_path / "ft.safetensors", ft)
    src = source(tmp_path, ["ft.safetensors"], "base.safetensors")
    refs = [ref for ref in src.refs() if ref.shape == (M, N)]
    with pytest.raises(DataError) as info:
        src.load_dense(refs, np.dtype(np.float32))
    file = tmp_path / f"{which}.safetensors"
    assert str(info.value).startswith(f"{file}: tensor '{name}' contains {word}")


def test_include_matching_nothing(
    tmp_path: Path, rng: Generator, write_safetensors: Writer
) -> None:
    base = model(rng)
    write_safetensors(tmp_path / "base.safetensors", base)
    write_safetensors(tmp_path / "ft.safetensors", base)
    src = source(tmp_path, ["ft.safetensors"], "base.safetensors", include=["*.o_proj.*"])
    with pytest.raises(DataError, match=r"include=\['\*\.o_proj\.\*'\]"):
        src.refs()


def test_fingerprint_covers_base_and_shards(
    tmp_path: Path, rng: Generator, write_safetensors: Writer
) -> None:
    base = model(rng)
    write_safetensors(tmp_path / "base.safetensors", base)
    write_sharded(tmp_path / "ft", tuned(base, rng), write_safetensors)
    src = source(tmp_path, ["ft"], "base.safetensors")
    first = src.fingerprint()
    assert src.fingerprint() == first
    shard = tmp_path / "ft" / "model-00002-of-00002.safetensors"
    for changed in (tmp_path / "base.safetensors", shard):
        stat = changed.stat()
        os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        assert src.fingerprint() == first  # touched: the same numbers, the cache still serves them
        with changed.open("r+b") as fh:  # the last byte of the last tensor's data
            fh.seek(-1, os.SEEK_END)
            last = fh.read(1)
            fh.seek(-1, os.SEEK_END)
            fh.write(bytes([last[0] ^ 1]))
        assert src.fingerprint() != first
        first = src.fingerprint()


def test_each_header_is_parsed_once_per_version_of_its_file(
    tmp_path: Path, rng: Generator, write_safetensors: Writer
) -> None:
    """The workload, the plan and every chunk's load open the same files: one parse of each,
    until a file is rewritten; then its new header is read, and a changed shape is caught."""
    from harness.data.safetensors_io import _parsed_header

    base = model(rng)
    write_safetensors(tmp_path / "base.safetensors", base)
    write_safetensors(tmp_path / "ft.safetensors", tuned(base, rng))
    src = source(tmp_path, ["ft.safetensors"], "base.safetensors")
    _parsed_header.cache_clear()
    workload = Workload.from_source(src)
    for _ in range(2):
        for group in workload.groups():
            src.load_dense(group.refs, F64)
    assert src.fingerprint()
    assert _parsed_header.cache_info().misses == 2  # the base and the fine-tune, once each
    q = "model.layers.0.self_attn.q_proj.weight"
    moved = tuned(base, rng) | {q: normal(rng, (M + 1, N))}
    write_safetensors(tmp_path / "ft.safetensors", moved)
    group = next(g for g in workload.groups() if any(ref.locator["tensor"] == q for ref in g.refs))
    with pytest.raises(DataError, match=rf"ft.safetensors: tensor '{q}' is now \[{M + 1}, {N}\]"):
        src.load_dense(group.refs, F64)
    assert _parsed_header.cache_info().misses == 3


@pytest.mark.parametrize("stored", ["F32", "BF16+F32", "F64"])
def test_a_delta_is_loaded_a_piece_at_a_time_and_exactly(
    tmp_path: Path, write_safetensors: Writer, bf16_exact: Callable[..., np.ndarray],
    monkeypatch: pytest.MonkeyPatch, stored: str
) -> None:
    """load_dense reads a delta in pieces (7 values for the small tensor, so pieces straddle
    rows) into its output, each value one correctly rounded difference; a float64 tensor in a
    float32 run is subtracted in float64 whole, then rounded once. Nothing of a tensor's size
    is held beside the output: the whole-tensor reads held three times the output."""
    import tracemalloc

    from harness.data import delta_stream

    rng = np.random.default_rng(3)
    shapes = {"model.layers.0.mlp.up_proj.weight": (30, 20), "model.embed_tokens.weight": (1500, 1000)}
    base = {k: bf16_exact(rng, v) if stored == "BF16+F32" else normal(rng, v) for k, v in shapes.items()}
    ft = {k: (normal(rng, v) * 1e-3 + 1).astype(np.float64 if stored == "F64" else np.float32) for k, v in shapes.items()}
    write_safetensors(tmp_path / "base.safetensors", base, bf16=stored == "BF16+F32")
    write_safetensors(tmp_path / "ft.safetensors", ft)
    src = source(tmp_path, ["ft.safetensors"], "base.safetensors")
    small, big = ([ref for ref in src.refs() if ref.shape == shape] for shape in shapes.values())
    F32 = np.dtype(np.float32)

    def want(ref: MatrixRef) -> np.ndarray:
        name = ref.locator["tensor"]
        return (ft[name].astype(np.float64) - base[name].astype(np.float64)).astype(np.float32)

    with monkeypatch.context() as m:
        m.setattr(delta_stream, "PIECE", 7)
        np.testing.assert_array_equal(src.load_dense(small, F32)[0], want(small[0]))
    tracemalloc.start()
    try:
        out = src.load_dense(big, F32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out[0], want(big[0]))
    if stored != "F64":  # the output and the pieces' two small buffers (3 MiB)
        assert peak < out.nbytes + 3.5 * 2**20
