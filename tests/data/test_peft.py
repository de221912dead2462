from __future__ import annotations

import hashlib
import math
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.random import Generator
from pydantic import ValidationError

from harness.data import content_hashes, paths
from harness.data.peft import PeftData, PeftSource, pattern_key
from harness.data.workload import DataError, Workload

Writer = Callable[..., Path]
Pair = tuple[np.ndarray, np.ndarray]

M, N, R = 16, 12, 4
Q = "model.layers.{}.self_attn.q_proj"
DOWN = "model.layers.{}.mlp.down_proj"
F64 = np.dtype(np.float64)
F32 = np.dtype(np.float32)


def lora(rng: Generator, m: int = M, n: int = N, r: int = R) -> Pair:
    """(A [r, n], B [m, r]) as PEFT stores them."""
    a = rng.standard_normal((r, n)).astype(np.float32)
    return a, rng.standard_normal((m, r)).astype(np.float32)


def expected(a: np.ndarray, b: np.ndarray, scale: float, transpose: bool = False) -> np.ndarray:
    """The delta computed independently: float64 scale * B @ A (transposed if asked)."""
    delta = scale * (b.astype(np.float64) @ a.astype(np.float64))
    return delta.T if transpose else delta


def source(base_dir: Path, *adapter_paths: str, **filters: Any) -> PeftSource:
    return PeftSource(PeftData(paths=list(adapter_paths), **filters), base_dir)


def two_modules(rng: Generator) -> dict[str, Pair]:
    return {Q.format(0): lora(rng), DOWN.format(0): lora(rng, N, M)}


@pytest.fixture
def rng() -> Generator:
    return np.random.default_rng(0)


def test_refs_and_deltas(tmp_path: Path, rng: Generator, write_adapter: Writer) -> None:
    factors = {Q.format(i): lora(rng) for i in (0, 1, 10)} | {DOWN.format(2): lora(rng, N, M)}
    write_adapter(tmp_path / "my_adapter", factors)
    src = source(tmp_path, "my_adapter")
    refs = src.refs()
    assert [r.id for r in refs] == [
        "my_adapter/layer0/self_attn.q_proj",
        "my_adapter/layer1/self_attn.q_proj",
        "my_adapter/layer2/mlp.down_proj",
        "my_adapter/layer10/self_attn.q_proj",
    ]
    assert [(r.adapter, r.layer, r.module, r.shape, r.rank) for r in refs[1:3]] == [
        ("my_adapter", 1, "self_attn.q_proj", (M, N), R),
        ("my_adapter", 2, "mlp.down_proj", (N, M), R),
    ]
    for group in Workload.from_source(src).groups():
        dense = src.load_dense(group.refs, F64)
        factored = src.load_factors(group.refs, F64)
        for i, ref in enumerate(group.refs):
            module = f"model.layers.{ref.layer}.{ref.module}"
            np.testing.assert_allclose(dense[i], expected(*factors[module], 8 / R), rtol=1e-12)
        np.testing.assert_allclose(factored.dense(), dense, rtol=1e-12)
        assert factored.scale.tolist() == [2.0] * len(group)
    assert src.load_dense(refs[:1], F32).dtype == np.float32


@pytest.mark.parametrize(
    ("config", "q_scale", "down_scale"),
    [
        ({"lora_alpha": 16}, 16 / 4, 16 / 4),
        ({"lora_alpha": 16, "use_rslora": True}, 16 / 2, 16 / 2),
        ({"lora_alpha": 16, "alpha_pattern": {"down_proj": 4}}, 16 / 4, 4 / 4),
        ({"r": 2, "rank_pattern": {"q_proj": 4}, "alpha_pattern": {"q_proj": 2}}, 2 / 4, 8 / 2),
        (
            {"r": 2, "rank_pattern": {r"layers\.0\.self_attn\.q_proj": 4}, "use_rslora": True},
            8 / 2,
            8 / math.sqrt(2),
        ),
    ],
)
def test_scaling(
    tmp_path: Path,
    rng: Generator,
    write_adapter: Writer,
    config: dict[str, Any],
    q_scale: float,
    down_scale: float,
) -> None:
    """q_proj has rank 4; down_proj has the default r of the config."""
    factors = {Q.format(0): lora(rng), DOWN.format(0): lora(rng, N, M, config.get("r", 4))}
    write_adapter(tmp_path / "a", factors, **config)
    src = source(tmp_path, "a")
    for ref in src.refs():
        scale = q_scale if ref.module == "self_attn.q_proj" else down_scale
        assert ref.locator["scale"] == pytest.approx(scale)
        want = expected(*factors[f"model.layers.0.{ref.module}"], scale)
        np.testing.assert_allclose(src.load_dense([ref], F64)[0], want, rtol=1e-12)


@pytest.mark.parametrize(
    ("pattern", "module", "hit"),
    [
        ("q_proj", "model.layers.0.self_attn.q_proj", True),
        ("self_attn.q_proj", "model.layers.0.self_attn.q_proj", True),
        ("model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.q_proj", True),
        (r"layers\.[01]\.self_attn\.q_proj", "model.layers.1.self_attn.q_proj", True),
        ("proj", "model.layers.0.self_attn.q_proj", False),
        ("self_attn", "model.layers.0.self_attn.q_proj", False),
        ("layers.1.self_attn.q_proj", "model.layers.11.self_attn.q_proj", False),
    ],
)
def test_pattern_key_matches_like_peft(pattern: str, module: str, hit: bool) -> None:
    assert (pattern_key(["unrelated", pattern], module) == pattern) is hit


def test_fan_in_fan_out_transposes(tmp_path: Path, rng: Generator, write_adapter: Writer) -> None:
    module = "transformer.h.3.attn.c_attn"
    a, b = lora(rng, m=3 * N, n=N)  # GPT-2's Conv1D weight is [in, out]
    write_adapter(tmp_path / "gpt2", {module: (a, b)}, fan_in_fan_out=True)
    src = source(tmp_path, "gpt2")
    (ref,) = src.refs()
    assert (ref.id, ref.shape) == ("gpt2/layer3/attn.c_attn", (N, 3 * N))
    want = expected(a, b, 2.0, transpose=True)
    np.testing.assert_allclose(src.load_dense([ref], F64)[0], want, rtol=1e-12)
    factors = src.load_factors([ref], F64)
    assert factors.B.shape == (1, N, R) and factors.A.shape == (1, R, 3 * N)
    np.testing.assert_allclose(factors.dense()[0], want, rtol=1e-12)


def test_embedding_delta_is_transposed(
    tmp_path: Path, rng: Generator, write_adapter: Writer
) -> None:
    num_embeddings, dim = 20, N
    a = rng.standard_normal((R, num_embeddings)).astype(np.float32)  # lora_embedding_A
    b = rng.standard_normal((dim, R)).astype(np.float32)  # lora_embedding_B
    factors = {"model.embed_tokens": (a, b), Q.format(0): lora(rng)}
    write_adapter(tmp_path / "emb", factors, embedding=frozenset({"model.embed_tokens"}))
    src = source(tmp_path, "emb", modules=["embed_tokens"])
    (ref,) = src.refs()
    assert (ref.id, ref.layer, ref.shape) == ("emb/model.embed_tokens", None, (num_embeddings, dim))
    want = expected(a, b, 2.0, transpose=True)
    np.testing.assert_allclose(src.load_dense([ref], F64)[0], want, rtol=1e-12)
    np.testing.assert_allclose(src.load_factors([ref], F64).dense()[0], want, rtol=1e-12)


@pytest.mark.parametrize("name_in_keys", [False, True])
def test_bf16_factors_are_exact(
    tmp_path: Path, write_adapter: Writer, bf16_exact: Callable[..., np.ndarray], name_in_keys: bool
) -> None:
    rng = np.random.default_rng(1)
    a, b = bf16_exact(rng, (R, N)), bf16_exact(rng, (M, R))
    # bf16-exact: ordinary values, near float32's max, smallest normal, smallest subnormal, -0
    a[0, :7] = [1.0, -2.5, 0.15625, 1.5 * 2.0**127, 2.0**-126, 2.0**-133, -0.0]
    write_adapter(tmp_path / "bf", {Q.format(0): (a, b)}, bf16=True, name_in_keys=name_in_keys)
    src = source(tmp_path, "bf")
    factors = src.load_factors(src.refs(), F32)
    assert factors.A.dtype == np.float32
    np.testing.assert_array_equal(factors.A[0], a)
    np.testing.assert_array_equal(factors.B[0], b)
    assert factors.A[0, 0, 6] == 0 and np.signbit(factors.A[0, 0, 6])


def test_bf16_reader_agrees_with_torch(
    tmp_path: Path, write_adapter: Writer, bf16_exact: Callable[..., np.ndarray]
) -> None:
    """Our hand-written BF16 files, read by safetensors + torch, give what our reader gives."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    rng = np.random.default_rng(2)
    a, b = bf16_exact(rng, (R, N)), bf16_exact(rng, (M, R))
    folder = write_adapter(tmp_path / "bf", {Q.format(0): (a, b)}, bf16=True)
    tensors = load_file(folder / "adapter_model.safetensors")
    tensor = tensors[f"base_model.model.{Q.format(0)}.lora_A.weight"]
    assert tensor.dtype == torch.bfloat16
    src = source(tmp_path, "bf")
    np.testing.assert_array_equal(src.load_factors(src.refs(), F32).A[0], tensor.float().numpy())


def test_globs_filters_and_pickling(tmp_path: Path, rng: Generator, write_adapter: Writer) -> None:
    factors = {Q.format(i): lora(rng) for i in range(4)}
    factors |= {DOWN.format(i): lora(rng, N, M) for i in range(4)}
    for name in ("task_b", "task_a"):
        write_adapter(tmp_path / "adapters" / name, factors)
    src = source(tmp_path, "adapters/task_*", modules=["q_proj"], layers="0,2-3")
    refs = src.refs()
    assert [r.id for r in refs] == [
        f"task_{t}/layer{i}/self_attn.q_proj" for t in "ab" for i in (0, 2, 3)
    ]
    clone = pickle.loads(pickle.dumps(src))
    np.testing.assert_array_equal(clone.load_dense(refs, F32), src.load_dense(refs, F32))


@pytest.mark.parametrize(
    ("layers", "want"), [("0-3", {0, 1, 2, 3}), ("0,2,4-6", {0, 2, 4, 5, 6}), (" 7 ", {7})]
)
def test_parse_layers(layers: str, want: set[int]) -> None:
    assert paths.parse_layers(layers) == want


@pytest.mark.parametrize("layers", ["", "a", "3-1", "1-2-3"])
def test_bad_layers_rejected_by_the_config(layers: str) -> None:
    with pytest.raises(ValidationError, match="layers"):
        PeftData(paths=["x"], layers=layers)


def test_fingerprint_hashes_once_and_tracks_content(
    tmp_path: Path, rng: Generator, write_adapter: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_adapter(tmp_path / "a", {Q.format(0): lora(rng)})
    monkeypatch.setattr(content_hashes, "_known", {})
    hashed: list[str] = []
    file_digest = hashlib.file_digest

    def counting(f: Any, digest: str) -> Any:
        hashed.append(f.name)
        return file_digest(f, digest)

    monkeypatch.setattr(hashlib, "file_digest", counting)
    src = source(tmp_path, "a")
    first = src.fingerprint()
    assert src.fingerprint() == first and len(hashed) == 2
    write_adapter(folder, {Q.format(0): lora(rng)})
    for file in folder.iterdir():  # a rewrite within one clock tick can keep mtime_ns
        os.utime(file, ns=(file.stat().st_atime_ns, file.stat().st_mtime_ns + 10**9))
    assert src.fingerprint() != first and len(hashed) == 4


# Each writes a bad adapter into `folder` and returns (file the error names, detail it names).
def _missing_b(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    key = f"base_model.model.{Q.format(0)}.lora_A.weight"
    write_adapter(folder, {DOWN.format(0): lora(rng, N, M)}, extra={key: lora(rng)[0]})
    return "adapter_model.safetensors", f"{key}' has no lora_B"


def _missing_a(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    key = f"base_model.model.{Q.format(0)}.lora_B.default.weight"
    write_adapter(folder, {}, extra={key: lora(rng)[1]})
    return "adapter_model.safetensors", f"{key}' has no lora_A"


def _rank_mismatch(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    write_adapter(folder, {Q.format(0): (lora(rng)[0], lora(rng, r=R + 1)[1])})
    return "adapter_model.safetensors", f"{Q.format(0)}.lora_A.weight' [4, 12] has rank 4"


def _config_rank(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    write_adapter(folder, two_modules(rng), rank_pattern={"down_proj": 8})
    return "adapter_model.safetensors", f"{DOWN.format(0)}.lora_A.weight' has rank 4"


def _dora_tensor(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    key = f"base_model.model.{Q.format(0)}.lora_magnitude_vector.weight"
    write_adapter(folder, two_modules(rng), extra={key: np.ones(M, np.float32)})
    return "adapter_model.safetensors", f"{key}' is a DoRA magnitude vector"


def _dora_config(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    write_adapter(folder, two_modules(rng), use_dora=True)
    return "adapter_config.json", "use_dora is true; DoRA"


def _conv_b_not_1x1(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    a = rng.standard_normal((R, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal((M, R, 3, 3)).astype(np.float32)
    write_adapter(folder, {"model.conv_in": (a, b)})
    return "adapter_model.safetensors", "model.conv_in.lora_A.weight' [4, 3, 3, 3] and"


def _int_dtype(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    a, b = lora(rng)
    write_adapter(folder, {Q.format(0): (a.astype(np.int32), b)})
    return "adapter_model.safetensors", f"{Q.format(0)}.lora_A.weight' has dtype I32"


def _no_weights(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    write_adapter(folder, two_modules(rng))
    (folder / "adapter_model.safetensors").unlink()
    return "adapter_model.safetensors", "file not found"


def _no_config(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    write_adapter(folder, two_modules(rng))
    (folder / "adapter_config.json").unlink()
    return "adapter_config.json", "file not found"


def _config_without_r(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    write_adapter(folder, two_modules(rng), r=None)
    return "adapter_config.json", "r: Input should be a valid integer"


def _corrupt_weights(folder: Path, rng: Generator, write_adapter: Writer) -> tuple[str, str]:
    write_adapter(folder, two_modules(rng))
    (folder / "adapter_model.safetensors").write_bytes(b"\x10" + bytes(7) + b"{not json")
    return "adapter_model.safetensors", "not a readable safetensors file"


@pytest.mark.parametrize(
    "make",
    [
        _missing_b,
        _missing_a,
        _rank_mismatch,
        _config_rank,
        _dora_tensor,
        _dora_config,
        _conv_b_not_1x1,
        _int_dtype,
        _no_weights,
        _no_config,
        _config_without_r,
        _corrupt_weights,
    ],
)
def test_bad_adapters_name_file_and_tensor(
    tmp_path: Path, write_adapter: Writer, make: Callable[..., tuple[str, str]]
) -> None:
    folder = tmp_path / "bad"
    file, detail = make(folder, np.random.default_rng(3), write_adapter)
    with pytest.raises(DataError) as info:
        source(tmp_path, "bad").refs()
    message = str(info.value)
    assert message.startswith(f"{folder / file}: ") and detail in message, message
    assert "\n" not in message


@pytest.mark.parametrize(("bad", "word"), [(np.nan, "NaN"), (np.inf, "Inf"), (-np.inf, "Inf")])
@pytest.mark.parametrize("factor", ["lora_A", "lora_B"])
def test_nan_and_inf_raise_on_load(
    tmp_path: Path, rng: Generator, write_adapter: Writer, bad: float, word: str, factor: str
) -> None:
    a, b = lora(rng)
    (a if factor == "lora_A" else b)[1, 2] = bad
    write_adapter(tmp_path / "a", {Q.format(0): (a, b)})
    src = source(tmp_path, "a")
    refs = src.refs()
    file = tmp_path / "a" / "adapter_model.safetensors"
    tensor = f"base_model.model.{Q.format(0)}.{factor}.weight"
    for load in (src.load_dense, src.load_factors):
        with pytest.raises(DataError, match=word) as info:
            load(refs, F32)
        assert str(info.value).startswith(f"{file}: tensor '{tensor}' contains {word}")


@pytest.mark.parametrize(
    ("pattern", "filters", "words"),
    [
        ("missing", {}, ["paths: 'missing' matches nothing"]),
        ("adapters/*_x", {}, ["paths: 'adapters/*_x' matches nothing"]),
        ("adapters/task/adapter_config.json", {}, ["adapter_config.json: not a directory"]),
        ("adapters/task", {"modules": ["o_proj"]}, ["no matrices", "o_proj"]),
        ("adapters/task", {"layers": "5-9"}, ["no matrices", "'5-9'"]),
    ],
)
def test_bad_paths_and_filters(
    tmp_path: Path,
    rng: Generator,
    write_adapter: Writer,
    pattern: str,
    filters: dict[str, Any],
    words: list[str],
) -> None:
    write_adapter(tmp_path / "adapters" / "task", two_modules(rng))
    with pytest.raises(DataError) as info:
        source(tmp_path, pattern, **filters).refs()
    assert all(word in str(info.value) for word in words), str(info.value)


def test_one_adapter_name_twice_is_refused(
    tmp_path: Path, rng: Generator, write_adapter: Writer
) -> None:
    for run in ("run1", "run2"):
        write_adapter(tmp_path / run / "checkpoint-100", two_modules(rng))
    with pytest.raises(DataError, match="both give adapter name 'checkpoint-100'"):
        source(tmp_path, "run*/checkpoint-100").refs()
