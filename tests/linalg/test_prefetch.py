"""The prefetch ring: order, bounded read-ahead, no block overwritten while in use, reader errors
raised in the consumer, and a reader that stops when the consumer does. No sleeps: the tests
wait on events the reader sets."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import numpy as np
import pytest

from harness.linalg.prefetch import SLOTS, Ring, prefetched, slot_bytes
from harness.linalg.spans import ReadError, SpanReader


def ring(count: int, size: int = 4) -> list[np.ndarray]:
    return [np.empty(size) for _ in range(count)]


def readers_alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "prefetch-reader"]


def test_blocks_come_in_order_from_reused_buffers() -> None:
    slots = ring(3)
    seen: list[tuple[float, int]] = []
    for block in prefetched(range(10), lambda job, slot: np.copyto(slot, job) or slot, slots):
        seen.append((float(block[0]), id(block)))
    assert [value for value, _ in seen] == list(range(10))
    assert {ident for _, ident in seen} <= {id(slot) for slot in slots}
    assert not readers_alive()


@pytest.mark.parametrize("count", [2, 3, 5])
def test_reader_stays_at_most_slots_minus_one_ahead(count: int) -> None:
    """The consumer holds one slot, so at most count - 1 later jobs are filled while it looks at
    a block: memory is the ring's, whatever the number of jobs."""
    filled: list[int] = []

    def fill(job: int, slot: np.ndarray) -> np.ndarray:
        filled.append(job)
        slot[:] = job
        return slot

    for k, block in enumerate(prefetched(range(40), fill, ring(count))):
        assert max(filled) <= k + count - 1
        assert block[0] == k


def test_a_block_is_not_overwritten_while_the_consumer_holds_it() -> None:
    """With the reader as far ahead as the ring lets it (every other slot filled), the held block
    still holds its own job's values."""
    jobs, count = 12, 3
    filled = [threading.Event() for _ in range(jobs)]

    def fill(job: int, slot: np.ndarray) -> np.ndarray:
        slot[:] = job
        filled[job].set()
        return slot

    for k, block in enumerate(prefetched(range(jobs), fill, ring(count))):
        filled[min(k + count - 1, jobs - 1)].wait()
        assert np.all(block == k)


def test_a_reader_error_is_raised_in_the_consumer_at_its_block() -> None:
    def fill(job: int, slot: np.ndarray) -> np.ndarray:
        if job == 3:
            raise ValueError("model.safetensors: tensor 'w' is cut short")
        slot[:] = job
        return slot

    got: list[float] = []
    with pytest.raises(ValueError, match="model.safetensors: tensor 'w' is cut short"):
        for block in prefetched(range(10), fill, ring(2)):
            got.append(float(block[0]))
    assert got == [0.0, 1.0, 2.0]
    assert not readers_alive()


def test_a_consumer_that_stops_early_stops_the_reader() -> None:
    """Endless jobs: a reader that did not stop would never be joined."""
    blocks = prefetched(itertools.count(), lambda job, slot: slot, ring(3))
    next(blocks)
    blocks.close()
    assert not readers_alive()


def test_an_exception_in_the_consumer_stops_the_reader() -> None:
    with pytest.raises(KeyError):
        for _ in prefetched(itertools.count(), lambda job, slot: slot, ring(2)):
            raise KeyError("consumer failed")
    assert not readers_alive()


def test_a_ring_needs_two_slots() -> None:
    with pytest.raises(ValueError, match="at least 2 slots"):
        next(prefetched(range(3), lambda job, slot: slot, ring(1)))


def test_a_ring_fits_its_budget_in_aligned_slots_and_grows_only_for_a_block_that_cannot_be_cut() -> None:
    ring = Ring.within(3 * 1000)
    assert len(ring.slots) == SLOTS and ring.nbytes == 960 <= slot_bytes(3 * 1000) and not ring.pinned
    assert ring.holding(960) is ring
    wider = ring.holding(1001)
    assert wider.nbytes == 1024 and all(slot.nbytes == 1024 for slot in wider.slots)
    assert Ring.within(2**40).nbytes == 64 << 20  # a slot is capped whatever the budget


def test_a_ring_allocates_nothing_until_a_stream_uses_it() -> None:
    """A pinned ring handed to a source that loads whole matrices costs no page-locked memory."""
    ring = Ring.within(3 << 30, pinned=True)
    assert "slots" not in vars(ring)


def test_span_reader_reads_spans_and_names_the_file_on_errors(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    data = np.arange(100, dtype=np.float32)
    data.tofile(path)
    out = np.empty(10, np.float32)
    with SpanReader() as reader:
        reader.read_into(path, 40 * 4, out)
        assert np.array_equal(out, data[40:50])
        reader.drop(path, 0, 400)  # leaves the page cache, not the file
        reader.read_into(path, 40 * 4, out)
        assert np.array_equal(out, data[40:50])
        with pytest.raises(ReadError, match=rf"{path}: ends at byte 400, inside a span of bytes 380-420; the file is truncated"):
            reader.read_into(path, 95 * 4, out)
        with pytest.raises(ReadError, match=rf"{tmp_path / 'gone.bin'}: cannot open"):
            reader.read_into(tmp_path / "gone.bin", 0, out)
