"""Checkpoint deltas as cache-sized pieces read by the Gram's own threads (files warm): the Gram of
float64 deltas, the same whatever the threads, offered only where it applies, and input errors
that name the file."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness.base.executors import SerialExecutor
from harness.data import delta_pieces
from harness.data.checkpoint import CheckpointSource
from harness.data.layout import AdapterLayout
from harness.data.safetensors_io import SafetensorsFile
from harness.data.workload import DataError, Workload
from harness.linalg.compiled import load_kernel
from harness.linalg.piece_gram import StoredPieces, piece_grams
from harness.strategies.base import ExecContext
from harness.strategies.gram import DualGramStrategy
from tests.data.test_delta_stream import ADAPTERS, F32, SHAPES, normal, positions, write_set

Writer = Callable[..., Path]


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """64 values of each file per piece: many pieces per tensor, the last of each narrower."""
    if load_kernel("gram_kernel") is None:
        pytest.skip("numba not installed (the `fast` extra)")
    monkeypatch.setattr(delta_pieces, "MIN_SPAN_VALUES", 64)
    monkeypatch.setattr(delta_pieces, "STAGE_BYTES", 1024)


def pieces(src: CheckpointSource) -> StoredPieces:
    found = src.stored_pieces(positions(src), F32)
    assert found is not None
    return found


def reference(src: CheckpointSource) -> np.ndarray:
    """Each position's Gram of float64 deltas."""
    out = []
    for refs in positions(src):
        X = src.load_dense(refs, np.dtype(np.float64)).reshape(len(refs), -1)
        out.append(X @ X.T)
    return np.stack(out)


def relative(G: np.ndarray, ref: np.ndarray) -> float:
    norms = np.sqrt(np.einsum("pii->pi", ref))
    return float(np.max(np.abs(G - ref) / (norms[:, :, None] * norms[:, None, :])))


@pytest.mark.parametrize(("tuned", "base"), [("F32", "F32"), ("BF16", "BF16"), ("BF16", "F32")])
def test_pieces_give_the_gram_of_float64_deltas_whatever_the_threads(
        tmp_path: Path, write_safetensors: Writer, bf16_exact: Callable[..., np.ndarray], tuned: str, base: str) -> None:
    """float32 partial sums over 1024 columns at most, float64 across pieces: 1e-6 of |x_i||x_j|
    (bf16 deltas are exact); the pieces are summed in order, so 1 and 3 threads agree bit for bit."""
    src = write_set(tmp_path, write_safetensors, bf16_exact, bf16=tuned == "BF16")
    write_safetensors(tmp_path / "base.safetensors", {name: bf16_exact(np.random.default_rng(9), shape)
                                                      for name, shape in SHAPES.items()}, bf16=base == "BF16")
    stored = pieces(src)
    assert len(stored.pieces) > len(SHAPES) and stored.n == ADAPTERS
    one, three = piece_grams(stored, 1), piece_grams(pieces(src), 3)
    np.testing.assert_array_equal(one, three)
    np.testing.assert_array_equal(one, one.transpose(0, 2, 1))
    assert relative(one, reference(src)) < 1e-6


def test_dual_gram_of_warm_files_takes_the_pieces(tmp_path: Path, write_safetensors: Writer) -> None:
    """Just written, the files are in the page cache: the strategy's Grams are the pieces'."""
    src = write_set(tmp_path, write_safetensors, normal)
    layout = AdapterLayout.from_workload(Workload.from_source(src))
    ctx = ExecContext(dtype=F32, backend="numpy", workers=1, seed=0, executor=SerialExecutor)
    grams = DualGramStrategy().grams(src, layout, ctx, 1 << 20)
    np.testing.assert_array_equal(grams, piece_grams(pieces(src), 2))
    assert relative(grams, reference(src)) < 1e-6


def test_pieces_only_where_the_kernel_widens_them_and_the_files_are_warm(
        tmp_path: Path, write_safetensors: Writer, bf16_exact: Callable[..., np.ndarray],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A float64 run, an F16 base, F32 among BF16 fine-tunes, files mostly out of the page cache
    or larger than memory: the ring's routes instead."""
    src = write_set(tmp_path, write_safetensors, bf16_exact, bf16=True)
    refs = positions(src)
    assert src.stored_pieces(refs, F32) is not None
    assert src.stored_pieces(refs, np.dtype(np.float64)) is None
    monkeypatch.setattr(delta_pieces, "cached_fraction", lambda spans: delta_pieces.WARM * 0.99)
    assert src.stored_pieces(refs, F32) is None
    monkeypatch.undo()
    monkeypatch.setattr(delta_pieces, "memory_available", lambda: 1000)
    assert src.stored_pieces(refs, F32) is None
    monkeypatch.undo()
    draw = {n: bf16_exact(np.random.default_rng(1), s) for n, s in SHAPES.items()}
    write_safetensors(tmp_path / "base.safetensors", {n: v.astype(np.float16) for n, v in draw.items()})
    assert src.stored_pieces(refs, F32) is None
    write_safetensors(tmp_path / "base.safetensors", draw, bf16=True)
    write_safetensors(tmp_path / "ft1.safetensors", draw)  # F32 among BF16
    assert src.stored_pieces(refs, F32) is None


@pytest.mark.parametrize(("victim", "bad"), [("ft2", "NaN"), ("ft4", "Inf"), ("base", "Inf")])
def test_nan_or_inf_names_the_file_and_tensor(tmp_path: Path, write_safetensors: Writer, victim: str, bad: str) -> None:
    src = write_set(tmp_path, write_safetensors, normal)
    path = tmp_path / f"{victim}.safetensors"
    with path.open("r+b") as fh:  # in row 40 of the embedding
        fh.seek(SafetensorsFile(path).tensors["model.embed_tokens.weight"].start + 40 * 24 * 4)
        fh.write(np.float32(np.nan if bad == "NaN" else -np.inf).tobytes())
    with pytest.raises(DataError, match=rf"^{path}: tensor 'model.embed_tokens.weight' contains {bad}"):
        piece_grams(pieces(src), 2)
    assert not [t for t in threading.enumerate() if t.name.startswith("harness-piece")]


def test_a_file_cut_short_is_one_line_naming_it(tmp_path: Path, write_safetensors: Writer) -> None:
    src = write_set(tmp_path, write_safetensors, normal)
    stored = pieces(src)
    victim = tmp_path / "ft3.safetensors"
    os.truncate(victim, victim.stat().st_size - 100)
    with pytest.raises(DataError, match=rf"^{victim}: ends at byte \d+, inside a span .*; the file is truncated$"):
        piece_grams(stored, 2)
