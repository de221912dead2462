"""The CUDA route of the streamed Gram with CUDA faked: streams and events log what they are asked,
tensors stay on the CPU. What is checked is the pipeline's decisions: non-blocking copies on the
side stream from pinned memory, the compute stream waiting on each copy's event, the device
tensor marked as used by the compute stream, a host buffer released only after its copy, strided
or pageable blocks staged through a pinned ring, pinned ones sent as they are. The answer is the
same Gram as numpy's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.linalg import gram as gram_module
from harness.linalg import gram_torch
from harness.linalg.device import torch_module
from harness.linalg.device_feed import DeviceFeed
from harness.linalg.prefetch import SLOTS

torch = torch_module()
pytestmark = pytest.mark.skipif(torch is None, reason="torch not installed")


class FakeEvent:
    count = 0

    def __init__(self, log: list[tuple[Any, ...]]) -> None:
        FakeEvent.count += 1
        self.id, self.log = FakeEvent.count, log

    def record(self, stream: FakeStream) -> None:
        self.log.append(("record", self.id, stream.name))

    def synchronize(self) -> None:
        self.log.append(("synchronize", self.id))


class FakeStream:
    def __init__(self, name: str, log: list[tuple[Any, ...]]) -> None:
        self.name, self.log = name, log

    def wait_event(self, event: FakeEvent) -> None:
        self.log.append(("wait", self.name, event.id))


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """torch.cuda's streams and events faked; every copy and pin logged. Returns the log."""
    assert torch is not None
    log: list[tuple[Any, ...]] = []
    current = ["main"]
    main = FakeStream("main", log)

    @contextmanager
    def stream(s: FakeStream) -> Iterator[None]:
        current.append(s.name)
        yield
        current.pop()

    copy = torch.Tensor.copy_

    def logged_copy(self: Any, src: Any, non_blocking: bool = False) -> Any:
        log.append(("copy", current[-1], non_blocking, src.data_ptr()))
        return copy(self, src, non_blocking)

    def pin(self: Any) -> Any:
        log.append(("pin",))
        return self

    monkeypatch.setattr(torch.cuda, "Stream", lambda device=None: FakeStream("side", log))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: main)
    monkeypatch.setattr(torch.cuda, "stream", stream)
    monkeypatch.setattr(torch.cuda, "Event", lambda: FakeEvent(log))
    monkeypatch.setattr(torch.Tensor, "copy_", logged_copy)
    monkeypatch.setattr(torch.Tensor, "pin_memory", pin)
    monkeypatch.setattr(torch.Tensor, "record_stream", lambda self, s: log.append(("record_stream", s.name)))
    return log


def blocks_of(X: np.ndarray, columns: int) -> list[np.ndarray]:
    return [X[:, j : j + columns] for j in range(0, X.shape[1], columns)]


def exact(X: np.ndarray) -> np.ndarray:
    X64 = X.astype(np.float64)
    return X64 @ X64.T


def assert_same_gram(G: np.ndarray, X: np.ndarray) -> None:
    norms = np.linalg.norm(X.astype(np.float64), axis=1)
    assert np.max(np.abs(G - exact(X)) / np.outer(norms, norms)) < 1e-6


def test_each_block_is_copied_async_on_the_side_stream_and_released_after_its_copy(
    fake_cuda: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gram_torch, "is_pinned", lambda block: True)  # a source's pinned ring
    X = np.random.default_rng(0).standard_normal((5, 3000)).astype(np.float32)
    blocks = [np.ascontiguousarray(b) for b in blocks_of(X, 700)]
    G = gram_torch._accumulate_cuda(iter(blocks), feed=DeviceFeed("cpu"))
    assert_same_gram(G, X)
    copies = [entry for entry in fake_cuda if entry[0] == "copy"]
    assert [c[1:3] for c in copies] == [("side", True)] * len(blocks)
    assert [c[3] for c in copies] == [b.ctypes.data for b in blocks]  # sent as they are: no staging
    assert not [e for e in fake_cuda if e[0] == "pin"]
    per_block = [e for e in fake_cuda if e[0] != "copy"]
    for k in range(len(blocks)):
        record, wait, mark, sync = per_block[4 * k : 4 * k + 4]
        assert record[0] == "record" and record[2] == "side"
        assert wait == ("wait", "main", record[1])  # the product waits for this copy only
        assert mark == ("record_stream", "main")  # the allocator keeps the tensor for the product
        assert sync == ("synchronize", record[1])  # the host slot goes back after its copy


def test_pageable_strided_blocks_are_staged_through_a_pinned_ring(
    fake_cuda: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gram_torch, "CHUNK_COLUMNS", 256)
    X = np.random.default_rng(1).standard_normal((4, 2000))  # float64: a float64 product
    blocks = blocks_of(X, 900)  # strided views, wider than a chunk
    G = gram_torch._accumulate_cuda(blocks, feed=DeviceFeed("cpu"))
    assert_same_gram(G, X)
    assert [e for e in fake_cuda if e[0] == "pin"] == [("pin",)] * SLOTS  # the ring, pinned once
    sources = {e[3] for e in fake_cuda if e[0] == "copy"}
    assert len(sources) <= SLOTS  # every copy came from one of the ring's buffers
    assert not sources & {b.ctypes.data for b in blocks}


def test_accumulate_gram_on_cuda_takes_the_feed(fake_cuda: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = gram_torch._accumulate_cuda
    monkeypatch.setattr(gram_torch, "_accumulate_cuda", lambda blocks, ring, feed: cuda(blocks, ring, DeviceFeed("cpu")))
    X = np.random.default_rng(2).standard_normal((3, 500)).astype(np.float32)
    assert_same_gram(gram_module.accumulate_gram(blocks_of(X, 128), backend="cuda"), X)
    assert any(e[0] == "copy" and e[2] for e in fake_cuda)


def test_a_memmap_for_cuda_is_read_into_pinned_slots(fake_cuda: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    path = tmp_path / "X.npy"
    X = np.random.default_rng(3).standard_normal((6, 4000)).astype(np.float32)
    np.save(path, X)
    seen: list[np.ndarray] = []
    monkeypatch.setattr(gram_module, "accumulate_gram", lambda blocks, backend: seen.extend(b.copy() for b in blocks) or 0)
    gram_module.gram_from_array(np.load(path, mmap_mode="r"), memory_budget=SLOTS * 6 * 1000 * 4, backend="cuda")
    assert [e for e in fake_cuda if e[0] == "pin"] == [("pin",)] * SLOTS
    np.testing.assert_array_equal(np.concatenate(seen, axis=1), X)


def test_one_pinned_ring_and_one_feed_serve_every_position_of_a_dual_gram(
    fake_cuda: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.data.layout import AdapterLayout
    from harness.data.synthetic import SyntheticData, SyntheticSource
    from harness.data.workload import Workload
    from harness.strategies import gram as strategy_module
    from harness.strategies.base import ExecContext

    config = SyntheticData(form="lora", adapters=3, layers=2, modules={"up": (12, 8), "down": (8, 12)}, rank=3)
    w = Workload.from_source(SyntheticSource(config, seed=3))
    layout = AdapterLayout.from_workload(w)
    assert len(layout.positions) > 1
    feeds: list[DeviceFeed] = []
    monkeypatch.setattr(strategy_module, "DeviceFeed", lambda: feeds.append(DeviceFeed("cpu")) or feeds[-1])
    strategy = strategy_module.DualGramStrategy()

    def grams(backend: str) -> np.ndarray:
        ctx = ExecContext(dtype=np.dtype(np.float32), backend=backend, workers=1, seed=0, executor=lambda: None)  # type: ignore[arg-type, return-value]
        return strategy.grams(w.source, layout, ctx, 2**20)

    G = grams("cuda")
    assert len(feeds) == 1  # one side stream for the whole computation
    assert [e for e in fake_cuda if e[0] == "pin"] == [("pin",)] * SLOTS  # one pinned ring, not one per position
    assert len({e[3] for e in fake_cuda if e[0] == "copy"}) <= SLOTS
    reference = grams("numpy")  # float32 sums in another order: errors relative to the largest entry
    np.testing.assert_allclose(G, reference, rtol=1e-5, atol=1e-6 * np.abs(reference).max())
