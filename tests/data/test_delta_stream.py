"""Checkpoint deltas streamed in row blocks through the prefetch ring: the same numbers as the
whole-matrix load, memory bounded by the ring, the same Gram, and input errors that name the
file (raised from a reader thread, not a hang)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from harness.data import content_hashes, delta_stream
from harness.data.checkpoint import CheckpointData, CheckpointSource
from harness.data.layout import AdapterLayout
from harness.data.safetensors_io import SafetensorsFile
from harness.data.workload import DataError, MatrixRef, Workload
from harness.base.executors import SerialExecutor
from harness.linalg.compiled import load_kernel
from harness.linalg.gram import accumulate_delta_gram, accumulate_gram
from harness.linalg.prefetch import SLOTS, Ring, slot_bytes
from harness.linalg.spans import SpanReader
from harness.machine.info import probe
from harness.plan.model import PlanError
from harness.plan.compiler import compile_plan
from harness.specs.reading import load_spec
from harness.strategies.base import ExecContext
from harness.strategies.gram import DualGramStrategy
from tests.conftest import kernel_route

Writer = Callable[..., Path]
F32 = np.dtype(np.float32)
SHAPES = {"model.embed_tokens.weight": (50, 24), "model.layers.0.mlp.up_proj.weight": (37, 16),
          "model.layers.0.mlp.down_proj.weight": (16, 37)}
ADAPTERS = 5
# 3 rows of the widest tensor per slot: several blocks per position, the last narrower
BUDGET = SLOTS * 3 * 37 * (ADAPTERS + 1) * 4


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs twice: pieces subtracted by the compiled kernel, and by numpy's passes."""
    return kernel_route(request.param, monkeypatch, delta_stream, "delta_kernel")


def write_set(folder: Path, write: Writer, values: Callable[..., np.ndarray], bf16: bool = False) -> CheckpointSource:
    rng = np.random.default_rng(0)
    base = {name: values(rng, shape) for name, shape in SHAPES.items()}
    write(folder / "base.safetensors", base, bf16=bf16)
    for i in range(ADAPTERS):
        write(folder / f"ft{i}.safetensors", {k: values(rng, v.shape) for k, v in base.items()}, bf16=bf16)
    return CheckpointSource(CheckpointData(paths=["ft*.safetensors"], base="base.safetensors"), folder)


def normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def positions(src: CheckpointSource) -> list[tuple[MatrixRef, ...]]:
    return [p.refs for p in AdapterLayout.from_workload(Workload.from_source(src)).positions]


def streamed(src: CheckpointSource, refs: tuple[MatrixRef, ...], budget: int = BUDGET) -> list[np.ndarray]:
    return [block.copy() for _, block in src.dense_blocks([refs], F32, Ring.within(budget))]


@pytest.mark.parametrize("bf16", [False, True])
def test_blocks_are_the_whole_load_cut_in_rows(tmp_path: Path, write_safetensors: Writer,
                                                bf16_exact: Callable[..., np.ndarray], bf16: bool) -> None:
    src = write_set(tmp_path, write_safetensors, bf16_exact if bf16 else normal, bf16=bf16)
    for refs in positions(src):
        blocks = streamed(src, refs)
        assert len(blocks) > 1
        whole = src.load_dense(refs, F32).reshape(len(refs), -1)
        np.testing.assert_array_equal(np.concatenate(blocks, axis=1), whole)


def test_the_readers_stream_every_position_in_order(tmp_path: Path, write_safetensors: Writer) -> None:
    """One pool of reader threads for all positions, and the blocks in order."""
    src = write_set(tmp_path, write_safetensors, normal)
    groups = positions(src)
    labels, readers = [], set()
    for i, block in src.dense_blocks(groups, F32, Ring.within(BUDGET)):
        labels.append(i)
        readers |= {t.ident for t in threading.enumerate() if t.name.startswith("harness-span")}
        assert block.shape[0] == ADAPTERS
    assert labels == sorted(labels) and set(labels) == set(range(len(groups)))
    assert 1 <= len(readers) <= delta_stream.READERS


def test_the_next_block_is_read_while_this_one_still_waits_for_a_file(
    tmp_path: Path, write_safetensors: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No barrier between blocks: while one file of the first block is held back, the readers
    read the second block's spans (filling blocks one at a time, they waited: a timeout here)."""
    src = write_set(tmp_path, write_safetensors, normal)
    refs = positions(src)[0]
    held, release, second = tmp_path / "ft4.safetensors", threading.Event(), threading.Event()
    block_bytes = 3 * 24 * 4  # the first block's rows of the embedding, float32
    start = SafetensorsFile(held).tensors["model.embed_tokens.weight"].start
    read_into = SpanReader.read_into

    def watched(reader: SpanReader, path: Path, offset: int, out: np.ndarray) -> None:
        if path == held and offset == start:
            assert release.wait(30), "the second block was not read while the first waited"
        elif offset >= start + block_bytes:
            second.set()
        read_into(reader, path, offset, out)

    monkeypatch.setattr(SpanReader, "read_into", watched)
    blocks = src.dense_blocks([refs], F32, Ring.within(BUDGET))
    try:
        first = threading.Thread(target=lambda: next(blocks))
        first.start()
        assert second.wait(30)
        release.set()
        first.join()
    finally:
        release.set()
        blocks.close()


def test_the_ring_bounds_memory_and_reuses_its_buffers(tmp_path: Path, write_safetensors: Writer) -> None:
    src = write_set(tmp_path, write_safetensors, normal)
    refs = positions(src)[0]  # the embedding: 50 rows, 3 per block
    ring = Ring.within(BUDGET)
    slots = {slot.ctypes.data: slot for slot in ring.slots}
    count = 0
    for _, block in src.dense_blocks([refs], F32, ring):
        assert block.flags.c_contiguous
        assert sum(np.shares_memory(block, slot) for slot in slots.values()) == 1
        count += 1
    assert count > 2 * SLOTS


def test_float64_tensors_in_a_float32_run_are_subtracted_in_float64(tmp_path: Path, write_safetensors: Writer) -> None:
    """Cast first, a float64 delta far below its weights would be lost: the whole load does it."""
    src = write_set(tmp_path, write_safetensors, lambda rng, shape: 1.0 + 1e-9 * rng.standard_normal(shape))
    refs = positions(src)[0]
    blocks = streamed(src, refs)
    assert len(blocks) == 1 and np.abs(blocks[0]).max() > 0
    np.testing.assert_array_equal(blocks[0], src.load_dense(refs, F32).reshape(len(refs), -1))


def test_dual_gram_of_streamed_deltas_matches_float64(tmp_path: Path, write_safetensors: Writer) -> None:
    src = write_set(tmp_path, write_safetensors, normal)
    layout = AdapterLayout.from_workload(Workload.from_source(src))
    ctx = ExecContext(dtype=F32, backend="numpy", workers=1, seed=0, executor=SerialExecutor)
    grams = DualGramStrategy().grams(src, layout, ctx, BUDGET)
    for G, position in zip(grams, layout.positions):
        X = src.load_dense(position.refs, np.dtype(np.float64)).reshape(ADAPTERS, -1)
        norms = np.linalg.norm(X, axis=1)
        assert np.max(np.abs(G - X @ X.T) / np.outer(norms, norms)) < 1e-6


def test_a_file_cut_short_while_streaming_is_one_line_naming_it(tmp_path: Path, write_safetensors: Writer) -> None:
    """Cut after the headers were read: a reader thread's read fails, the consumer gets the
    error (the reader is at most SLOTS - 1 blocks ahead, so the cut rows are still unread)."""
    src = write_set(tmp_path, write_safetensors, normal)
    refs = positions(src)[-1]  # the last tensor in the file: cutting the file cuts its last rows
    victim = tmp_path / "ft3.safetensors"
    blocks = src.dense_blocks([refs], F32, Ring.within(BUDGET // 3))
    next(blocks)
    os.truncate(victim, victim.stat().st_size - 100)
    with pytest.raises(DataError, match=rf"^{victim}: ends at byte \d+, inside a span .*; the file is truncated$"):
        list(blocks)
    assert not [t for t in threading.enumerate() if t.name.startswith("harness-span")]


@pytest.mark.parametrize(("bad", "bf16"), [("NaN", False), ("Inf", False), ("NaN", True), ("Inf", True)])
def test_nan_or_inf_in_a_fine_tune_names_the_file_and_tensor(tmp_path: Path, write_safetensors: Writer,
                                                             bf16_exact: Callable[..., np.ndarray],
                                                             bad: str, bf16: bool) -> None:
    src = write_set(tmp_path, write_safetensors, bf16_exact if bf16 else normal, bf16=bf16)
    refs = positions(src)[0]
    victim = tmp_path / "ft2.safetensors"
    value = np.float32(np.nan if bad == "NaN" else -np.inf)
    with victim.open("r+b") as fh:  # in row 40 of ft2's embedding
        fh.seek(SafetensorsFile(victim).tensors["model.embed_tokens.weight"].start + 40 * 24 * (2 if bf16 else 4))
        fh.write((np.array([value]).view(np.uint32) >> 16).astype("<u2").tobytes() if bf16 else value.tobytes())
    with pytest.raises(DataError, match=rf"^{victim}: tensor 'model.embed_tokens.weight' contains {bad}"):
        streamed(src, refs)


def test_stopping_after_one_block_stops_the_reader(tmp_path: Path, write_safetensors: Writer) -> None:
    src = write_set(tmp_path, write_safetensors, normal)
    blocks = src.dense_blocks(positions(src)[:1], F32, Ring.within(BUDGET))
    next(blocks)
    blocks.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("harness-span")]


class FakeRing(Ring):
    """Records the pinned request without pinning (no CUDA here)."""

    def __init__(self, nbytes: int, pinned: bool = False) -> None:
        super().__init__(nbytes)
        self.pinned = pinned


@pytest.mark.parametrize("warm", [False, True])
def test_dual_gram_asks_for_pinned_blocks_only_on_cuda(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      write_safetensors: Writer,
                                                      bf16_exact: Callable[..., np.ndarray], warm: bool) -> None:
    """CUDA takes dense blocks from a pinned ring; the CPU takes bf16 blocks as stored where the
    compiled kernel is there (else dense), from a ring that is not pinned, or, files warm,
    pieces of them that its threads read themselves (no ring)."""
    src = write_set(tmp_path, write_safetensors, bf16_exact, bf16=True)
    monkeypatch.setattr("harness.data.checkpoint.is_warm", lambda groups: warm)
    layout = AdapterLayout.from_workload(Workload.from_source(src))
    asked: list[tuple[str, bool]] = []
    dense, stored = CheckpointSource.dense_blocks, CheckpointSource.stored_blocks

    def spy(real, kind):  # type: ignore[no-untyped-def]
        def asks(self: CheckpointSource, groups: list[tuple[MatrixRef, ...]], dtype: np.dtype, ring: Ring):  # type: ignore[no-untyped-def]
            asked.append((kind, ring.pinned))
            return real(self, groups, dtype, Ring.within(BUDGET))
        return asks

    monkeypatch.setattr(CheckpointSource, "dense_blocks", spy(dense, "dense"))
    monkeypatch.setattr(CheckpointSource, "stored_blocks", spy(stored, "stored"))
    pieces = CheckpointSource.stored_pieces

    def asks_pieces(self: CheckpointSource, groups: list[tuple[MatrixRef, ...]], dtype: np.dtype):  # type: ignore[no-untyped-def]
        found = pieces(self, groups, dtype)
        asked.extend([("pieces", False)] if found is not None else [])
        return found

    monkeypatch.setattr(CheckpointSource, "stored_pieces", asks_pieces)
    monkeypatch.setattr("harness.strategies.gram.piece_grams", lambda stored, threads: stored.close())
    monkeypatch.setattr("harness.strategies.gram.Ring", FakeRing)
    monkeypatch.setattr("harness.strategies.gram.DeviceFeed", lambda: None)  # no CUDA here
    monkeypatch.setattr("harness.strategies.gram.accumulate_gram",
                        lambda blocks, backend, ring, feed: sum(1 for _ in blocks))
    for backend in ("cuda", "cpu"):
        ctx = ExecContext(dtype=F32, backend=backend, workers=1, seed=0, executor=SerialExecutor)
        DualGramStrategy().grams(src, layout, ctx, BUDGET)
    on_cpu = ("pieces" if warm else "stored") if load_kernel("gram_kernel") is not None else "dense"
    assert asked == [("dense", True), (on_cpu, False)]  # one stream per computation


def stored(src: CheckpointSource, refs: tuple[MatrixRef, ...]) -> list[delta_stream.StoredBlock]:
    """Each block copied out of the ring (its slot is reused two blocks on)."""
    blocks = src.stored_blocks([refs], F32, Ring.within(BUDGET))
    assert blocks is not None
    return [replace(block, rows=block.rows.copy(), base=block.base.copy()) for _, block in blocks]


def widened(values: np.ndarray) -> np.ndarray:
    return (values.astype(np.uint32) << 16).view(np.float32) if values.dtype == np.uint16 else values


@pytest.mark.parametrize("base", ["BF16", "F32"])
def test_stored_blocks_are_the_streamed_blocks_as_the_files_hold_them(
        tmp_path: Path, write_safetensors: Writer, bf16_exact: Callable[..., np.ndarray], base: str) -> None:
    """The same rows per block as the widened stream, read as stored: widened and subtracted,
    each block is the dense one exactly (so the Gram's kernel sees the same deltas)."""
    src = write_set(tmp_path, write_safetensors, bf16_exact, bf16=True)
    write_safetensors(tmp_path / "base.safetensors", {name: bf16_exact(np.random.default_rng(9), shape)
                                                      for name, shape in SHAPES.items()}, bf16=base == "BF16")
    for refs in positions(src):
        blocks, dense = stored(src, refs), streamed(src, refs)
        assert len(blocks) == len(dense) > 1
        for block, want in zip(blocks, dense):
            assert block.rows.dtype == np.uint16 and block.base.dtype == delta_stream.DTYPES[base]
            np.testing.assert_array_equal(widened(block.rows) - widened(block.base), want)


def test_only_bf16_fine_tunes_in_a_float32_run_are_handed_over_as_stored(
        tmp_path: Path, write_safetensors: Writer, bf16_exact: Callable[..., np.ndarray]) -> None:
    """F32 fine-tunes (their copies into the ring cost more than the kernel saves), a position
    of BF16 and F32 fine-tunes, an F16 base, or a float64 run: dense blocks."""
    src = write_set(tmp_path, write_safetensors, bf16_exact, bf16=True)
    refs = positions(src)
    assert src.stored_blocks(refs, F32, Ring.within(BUDGET)) is not None
    assert src.stored_blocks(refs, np.dtype(np.float64), Ring.within(BUDGET)) is None
    draw = {n: bf16_exact(np.random.default_rng(1), s) for n, s in SHAPES.items()}
    write_safetensors(tmp_path / "base.safetensors", {n: v.astype(np.float16) for n, v in draw.items()})
    assert src.stored_blocks(refs, F32, Ring.within(BUDGET)) is None
    write_safetensors(tmp_path / "base.safetensors", draw, bf16=True)
    write_safetensors(tmp_path / "ft1.safetensors", draw)  # F32 among BF16
    assert src.stored_blocks(refs, F32, Ring.within(BUDGET)) is None
    src = write_set(tmp_path, write_safetensors, normal)
    assert src.stored_blocks(positions(src), F32, Ring.within(BUDGET)) is None


def test_dual_gram_of_stored_deltas_is_the_gram_of_the_dense_blocks(
        tmp_path: Path, write_safetensors: Writer, bf16_exact: Callable[..., np.ndarray]) -> None:
    """The kernel widens and subtracts each piece as the dense stream does, then sums it as
    the dense Gram does: the same Gram, bit for bit."""
    if load_kernel("gram_kernel") is None:
        pytest.skip("numba not installed (the `fast` extra)")
    src = write_set(tmp_path, write_safetensors, bf16_exact, bf16=True)
    for refs in positions(src):
        np.testing.assert_array_equal(accumulate_delta_gram(stored(src, refs)), accumulate_gram(streamed(src, refs)))


@pytest.mark.parametrize(("victim", "bad"), [("ft2", "NaN"), ("ft2", "Inf"), ("base", "NaN"), ("base", "Inf")])
def test_nan_or_inf_in_a_stored_block_names_the_file_and_tensor(
        tmp_path: Path, write_safetensors: Writer, bf16_exact: Callable[..., np.ndarray], victim: str, bad: str) -> None:
    """Checked by the kernel as it widens (not optimised away), named as the dense stream names it."""
    if load_kernel("gram_kernel") is None:
        pytest.skip("numba not installed (the `fast` extra)")
    src = write_set(tmp_path, write_safetensors, bf16_exact, bf16=True)
    path = tmp_path / f"{victim}.safetensors"
    value = np.float32(np.nan if bad == "NaN" else -np.inf)
    with path.open("r+b") as fh:  # in row 40 of the embedding
        fh.seek(SafetensorsFile(path).tensors["model.embed_tokens.weight"].start + 40 * 24 * 2)
        fh.write((np.array([value]).view(np.uint32) >> 16).astype("<u2").tobytes())
    with pytest.raises(DataError, match=rf"^{path}: tensor 'model.embed_tokens.weight' contains {bad}"):
        accumulate_delta_gram(stored(src, positions(src)[0]))


@pytest.mark.parametrize("available", [1, 2**50])
def test_a_stream_larger_than_memory_drops_what_it_has_read(tmp_path: Path, write_safetensors: Writer,
                                                            monkeypatch: pytest.MonkeyPatch, available: int) -> None:
    """Larger than the memory available: each block's spans leave the page cache once the consumer
    is done with it; one that fits keeps them cached for the next pass."""
    src = write_set(tmp_path, write_safetensors, normal)
    monkeypatch.setattr("harness.data.delta_stream.memory_available", lambda: available)
    dropped: list[tuple[Path, int, int]] = []
    monkeypatch.setattr(SpanReader, "drop", lambda self, path, offset, nbytes: dropped.append((path, offset, nbytes)))
    refs = positions(src)[0]
    blocks = streamed(src, refs)
    np.testing.assert_array_equal(np.concatenate(blocks, axis=1), src.load_dense(refs, F32).reshape(ADAPTERS, -1))
    if available > 1:
        assert not dropped
    else:
        files = {tmp_path / "base.safetensors", *(tmp_path / f"ft{i}.safetensors" for i in range(ADAPTERS))}
        assert {path for path, _, _ in dropped} == files
        assert len(dropped) == len(blocks) * len(files)  # every block, once the consumer is done with it


PCA_SPEC = """
[experiment]
name = "streamed_pca"
[data]
source = "checkpoint"
paths = ["ft*.safetensors"]
base = "base.safetensors"
[[analysis]]
name = "geo"
op = "pca"
components = 3
scope = "global"
strategy = "dual_gram"
[execution]
memory_budget = {budget}
dtype = "float32"
[benchmark]
warmup = 0
repeats = 1
sample = 0
"""


def test_a_budget_below_one_whole_position_plans_and_runs_the_stream(
        tmp_path: Path, write_safetensors: Writer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The plan asks a streaming source for the ring's need, not a whole position's (5 x 50 x 24
    float32 = 24 KB here, over the budget), says how many rows a block holds, and the run's PCA
    is float64's. A second run reads no input file in full to fingerprint it."""
    monkeypatch.setattr(content_hashes, "RACY_NS", 0)  # the files were just written
    src = write_set(tmp_path, write_safetensors, normal)
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(PCA_SPEC.format(budget=BUDGET))
    spec = load_spec(spec_path)
    workload = Workload.from_source(src)
    step = compile_plan(spec, workload, probe()).steps[0]
    assert step.strategy == "dual_gram"
    assert step.batch_sizes == {"rows": slot_bytes(BUDGET) // ((ADAPTERS + 1) * 37 * 4)} == {"rows": 3}
    out = tmp_path / "run"
    assert main(["run", str(spec_path), "-o", str(out)]) == 0
    assert "fingerprinting the input files (hashed 6 files, " in capsys.readouterr().err
    assert main(["run", str(spec_path), "-o", str(tmp_path / "again")]) == 0
    assert "fingerprinting the input files (no file read in full)" in capsys.readouterr().err
    X = np.concatenate([src.load_dense(p.refs, np.dtype(np.float64)).reshape(ADAPTERS, -1)
                        for p in AdapterLayout.from_workload(workload).positions], axis=1)
    X -= X.mean(axis=0)
    variance = np.linalg.svd(X, compute_uv=False) ** 2
    with np.load(out / "pca.npz") as z:
        np.testing.assert_allclose(z["geo:explained_variance_ratio"], (variance / variance.sum())[:3], rtol=1e-5)


def test_tensors_that_cannot_stream_still_need_a_whole_position(tmp_path: Path, write_safetensors: Writer) -> None:
    """float64 tensors in a float32 run are loaded whole (subtracted in float64), so the budget
    that streams float32 files refuses them, naming the need."""
    src = write_set(tmp_path, write_safetensors, lambda rng, shape: rng.standard_normal(shape))
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(PCA_SPEC.format(budget=BUDGET))
    with pytest.raises(PlanError, match=r"dual_gram cannot run: needs .* for one position, over the memory budget"):
        compile_plan(load_spec(spec_path), Workload.from_source(src), probe())
