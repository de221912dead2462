from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.random import Generator
from pydantic import ValidationError

from harness.data.arrays import ArraysData, ArraysSource
from harness.data.workload import DataError, Workload

M, N = 16, 12
F64 = np.dtype(np.float64)


def source(base_dir: Path, **config: Any) -> ArraysSource:
    return ArraysSource(ArraysData(**config), base_dir)


def memmap(path: str, dtype: str, shape: list[int], **extra: Any) -> dict[str, Any]:
    return {"path": path, "dtype": dtype, "shape": shape, **extra}


def load_all(src: ArraysSource) -> dict[str, np.ndarray]:
    """Every matrix by id, loaded group by group."""
    out: dict[str, np.ndarray] = {}
    for group in Workload.from_source(src).groups():
        out |= zip([r.id for r in group.refs], src.load_dense(group.refs, F64))
    return out


@pytest.fixture
def rng() -> Generator:
    return np.random.default_rng(0)


def test_npy_files_and_folders(tmp_path: Path, rng: Generator) -> None:
    arrays = {
        "wq": rng.standard_normal((M, N)).astype(np.float32),
        "wo": rng.standard_normal((N, M)),
        "w_half": rng.standard_normal((M, N)).astype(np.float16),
    }
    (tmp_path / "more").mkdir()
    for name, array in arrays.items():
        np.save(tmp_path / ("more" if name == "w_half" else "") / f"{name}.npy", array)
    np.save(tmp_path / "more" / "fortran.npy", np.asfortranarray(arrays["wq"]))
    (tmp_path / "more" / "notes.txt").write_text("not an array: skipped in a folder")
    src = source(tmp_path, paths=["w*.npy", "more"])
    refs = src.refs()
    assert [r.id for r in refs] == ["wo/wo", "wq/wq", "fortran/fortran", "w_half/w_half"]
    assert refs[0].shape == (N, M) and refs[0].layer is None and not src.has_factors
    loaded = load_all(src)
    for name, array in arrays.items():
        np.testing.assert_array_equal(loaded[f"{name}/{name}"], array.astype(np.float64))
    np.testing.assert_array_equal(loaded["fortran/fortran"], arrays["wq"])


def test_npz_keys_name_layers_and_modules(tmp_path: Path, rng: Generator) -> None:
    arrays = {f"model.layers.{i}.mlp.down_proj": rng.standard_normal((N, M)) for i in (0, 1, 10)}
    arrays["lm_head"] = rng.standard_normal((20, N))
    np.savez(tmp_path / "deltas.npz", **arrays)
    src = source(tmp_path, paths=["deltas.npz"])
    assert [(r.id, r.layer, r.module) for r in src.refs()] == [
        ("deltas/lm_head", None, "lm_head"),
        ("deltas/layer0/mlp.down_proj", 0, "mlp.down_proj"),
        ("deltas/layer1/mlp.down_proj", 1, "mlp.down_proj"),
        ("deltas/layer10/mlp.down_proj", 10, "mlp.down_proj"),
    ]
    loaded = load_all(src)
    for i in (0, 1, 10):
        want = arrays[f"model.layers.{i}.mlp.down_proj"]
        np.testing.assert_array_equal(loaded[f"deltas/layer{i}/mlp.down_proj"], want)
    np.testing.assert_array_equal(loaded["deltas/lm_head"], arrays["lm_head"])
    filtered = source(tmp_path, paths=["deltas.npz"], modules=["down_proj"], layers="1-20")
    assert [r.layer for r in filtered.refs()] == [1, 10]


@pytest.mark.parametrize(
    ("dtype", "offset"), [("float32", 0), ("float64", 128), ("float16", 0), ("bfloat16", 16)]
)
def test_memmaps(
    tmp_path: Path, rng: Generator, bf16_exact: Callable[..., np.ndarray], dtype: str, offset: int
) -> None:
    if dtype == "bfloat16":
        values = bf16_exact(rng, (M, N))
        raw = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    else:
        values = rng.standard_normal((M, N)).astype(dtype)
        raw = values.astype(values.dtype.newbyteorder("<")).tobytes()
    (tmp_path / "w.bin").write_bytes(b"\xff" * offset + raw)
    src = source(tmp_path, memmaps=[memmap("w.bin", dtype, [M, N], offset=offset)])
    (ref,) = src.refs()
    assert (ref.id, ref.shape) == ("w/w", (M, N))
    loaded = src.load_dense([ref], np.dtype(np.float32))[0]
    np.testing.assert_array_equal(loaded, values.astype(np.float32))


@pytest.mark.parametrize(
    ("array", "detail"),
    [
        (np.zeros((2, 3, 4), np.float32), "has shape [2, 3, 4]; expected a 2-D matrix"),
        (np.zeros(5, np.float32), "has shape [5]; expected a 2-D matrix"),
        (np.zeros((3, 4), np.int64), "has dtype int64; expected a float dtype"),
    ],
)
def test_bad_npy_at_scan(tmp_path: Path, array: np.ndarray, detail: str) -> None:
    np.save(tmp_path / "bad.npy", array)
    with pytest.raises(DataError) as info:
        source(tmp_path, paths=["bad.npy"]).refs()
    assert str(info.value) == f"{tmp_path / 'bad.npy'}: array 'bad' {detail}"


def test_non_2d_npz_member_names_its_key(tmp_path: Path, rng: Generator) -> None:
    np.savez(tmp_path / "d.npz", good=rng.standard_normal((M, N)), **{"model.norm": np.ones(N)})
    with pytest.raises(DataError) as info:
        source(tmp_path, paths=["d.npz"]).refs()
    want = f"{tmp_path / 'd.npz'}: array 'model.norm' has shape [12]; expected a 2-D matrix"
    assert str(info.value) == want


@pytest.mark.parametrize(("bad", "word"), [(np.nan, "NaN"), (np.inf, "Inf")])
@pytest.mark.parametrize("kind", ["npy", "npz", "memmap"])
def test_nan_and_inf_raise_on_load(
    tmp_path: Path, rng: Generator, bad: float, word: str, kind: str
) -> None:
    array = rng.standard_normal((M, N)).astype(np.float32)
    array[2, 3] = bad
    if kind == "npy":
        np.save(tmp_path / "x.npy", array)
        config: dict[str, Any] = {"paths": ["x.npy"]}
        file, name = "x.npy", "x"
    elif kind == "npz":
        np.savez(tmp_path / "x.npz", **{"model.layers.0.q": array})
        config, file, name = {"paths": ["x.npz"]}, "x.npz", "model.layers.0.q"
    else:
        array.tofile(tmp_path / "x.bin")
        config = {"memmaps": [memmap("x.bin", "float32", [M, N])]}
        file, name = "x.bin", "x"
    src = source(tmp_path, **config)
    with pytest.raises(DataError) as info:
        src.load_dense(src.refs(), np.dtype(np.float32))
    assert str(info.value).startswith(f"{tmp_path / file}: tensor '{name}' contains {word}")


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"paths": ["missing.npy"]}, ["paths: 'missing.npy' matches nothing"]),
        ({"paths": ["deltas/*.npz"]}, ["paths: 'deltas/*.npz' matches nothing"]),
        ({"paths": ["notes.txt"]}, ["notes.txt: expected a .npy or .npz"]),
        ({"paths": ["empty"]}, ["empty: folder holds no .npy or .npz"]),
        ({"paths": ["broken.npz"]}, ["broken.npz: not a readable .npz"]),
        ({"memmaps": [memmap("gone.bin", "float32", [4, 4])]}, ["memmaps: 'gone.bin'"]),
        (
            {"memmaps": [memmap("w.bin", "float32", [M, M])]},
            ["w.bin: has 768 bytes; float32 [16, 16] at offset 0 needs 1024"],
        ),
        (
            {"paths": ["w.npy"], "memmaps": [memmap("w.bin", "float16", [M, N])]},
            ["both give adapter name 'w'"],
        ),
    ],
)
def test_bad_inputs(tmp_path: Path, config: dict[str, Any], words: list[str]) -> None:
    np.save(tmp_path / "w.npy", np.ones((M, N)))
    np.ones((M, N), np.float32).tofile(tmp_path / "w.bin")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "broken.npz").write_text("not a zip")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError) as info:
        source(tmp_path, **config).refs()
    assert all(word in str(info.value) for word in words), str(info.value)


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"memmaps": [memmap("w.bin", "float32", [2, 3, 4])]},
        {"memmaps": [memmap("w.bin", "float32", [0, 3])]},
        {"memmaps": [memmap("w.bin", "int8", [2, 3])]},
        {"paths": ["w.npy"], "layers": "x"},
        {"paths": ["w.npy"], "unknown": 1},
    ],
)
def test_bad_configs_fail_validation(config: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ArraysData(**config)


def test_fingerprint_tracks_every_file(tmp_path: Path, rng: Generator) -> None:
    np.savez(tmp_path / "d.npz", a=rng.standard_normal((M, N)))
    rng.standard_normal((M, N)).tofile(tmp_path / "w.bin")
    src = source(tmp_path, paths=["d.npz"], memmaps=[memmap("w.bin", "float64", [M, N])])
    first = src.fingerprint()
    assert src.fingerprint() == first
    np.zeros((M, N)).tofile(tmp_path / "w.bin")
    stat = (tmp_path / "w.bin").stat()  # a rewrite within one clock tick can keep mtime_ns
    os.utime(tmp_path / "w.bin", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert src.fingerprint() != first
