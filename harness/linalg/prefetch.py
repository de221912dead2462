"""A ring of reused buffers that a reader thread fills ahead of the consumer: the next block is
read while the current one is multiplied.

Without it loading and computing alternate: the kernel waits while a block is read, the reader
while the kernel computes (a 0.9 GB checkpoint PCA ran at 6% of a plain read of its files). The
ring holds a fixed number of slots allocated once, so memory is bounded whatever the input size:
the consumer holds one slot, the reader fills the others. A slot goes back to the reader only when
the consumer asks for the next block, so a block is never overwritten while in use. On CUDA the
slots are pinned host memory, so host-to-device copies can run asynchronously
(:mod:`harness.linalg.device_feed`).

An exception in the reader is raised in the consumer, unchanged, at the block it failed on; a
consumer that stops early (break, an exception, garbage collection) stops and joins the reader.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterable
from functools import cached_property
from typing import TypeVar, cast

import numpy as np

from harness.linalg.device import torch_module

__all__ = ["SLOTS", "SLOT_BYTES", "Ring", "host_buffer", "prefetched", "slot_bytes"]

J = TypeVar("J")
B = TypeVar("B")  # what a fill returns: a block, or a block and its label
SLOTS = 3  # one block in use, one ready, one being read
SLOT_BYTES = 64 << 20  # per slot, whatever the budget: larger reads gained nothing measured
_DONE = object()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def slot_bytes(budget: int) -> int:
    """Bytes one slot of a ring of SLOTS may hold under `budget` for the whole ring."""
    return min(budget // SLOTS, SLOT_BYTES)


class Ring:
    """SLOTS byte buffers of `nbytes` each, allocated once and reused by every stream of one
    computation (each fill carves its views from a slot): a ring allocated per stream made every
    block's first write a page fault, which held a warm reader to 2 GB/s. Slots are allocated
    when first asked for, and untouched pages cost nothing, so a source that never streams, or
    a small workload, pays for nothing or only what it uses."""

    def __init__(self, nbytes: int, pinned: bool = False) -> None:
        self.nbytes = -(-nbytes // 64) * 64  # whole cache lines: any dtype's view of a slot is aligned
        self.pinned = pinned

    @cached_property
    def slots(self) -> list[np.ndarray]:
        return [host_buffer((self.nbytes,), np.dtype(np.uint8), self.pinned) for _ in range(SLOTS)]

    @classmethod
    def within(cls, budget: int, pinned: bool = False) -> Ring:
        """The ring whose SLOTS slots fit `budget` (at most SLOT_BYTES each)."""
        return cls(slot_bytes(budget) // 64 * 64, pinned)

    def holding(self, nbytes: int) -> Ring:
        """This ring, or a new one whose slots hold `nbytes` (one block that cannot be cut)."""
        return self if nbytes <= self.nbytes else Ring(nbytes, self.pinned)


def host_buffer(shape: tuple[int, ...], dtype: np.dtype, pinned: bool) -> np.ndarray:
    """An uninitialised host array; page-locked (torch's pinned allocator) when `pinned`, so a
    host-to-device copy from it can be asynchronous."""
    if not pinned:
        return np.empty(shape, dtype=dtype)
    torch = torch_module()
    if torch is None:
        raise RuntimeError("pinned host memory needs torch")
    count = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    raw = torch.empty(count, dtype=torch.uint8).pin_memory()
    return raw.numpy().view(dtype).reshape(shape)


def prefetched(
    jobs: Iterable[J],
    fill: Callable[[J, np.ndarray], B],
    slots: list[np.ndarray],
) -> Generator[B, None, None]:
    """Blocks ``fill(job, slot)`` for each job in order, filled by one reader thread up to
    ``len(slots) - 1`` jobs ahead of the consumer.

    Parameters
    ----------
    jobs : iterable
        What to read, in order (consumed by the reader thread).
    fill : callable (job, slot) -> block
        Reads one job into the slot and returns the block (views of it, maybe with a label). It
        runs in the reader thread: I/O and numpy copies there release the GIL.
    slots : list of ndarray
        The ring's buffers (e.g. :attr:`Ring.slots`), reused. At least 2 (one being read, one
        being used); memory is theirs whatever the number of jobs.

    Yields
    ------
    each job's block, valid until the consumer asks for the next one.
    """
    if len(slots) < 2:
        raise ValueError(f"a ring needs at least 2 slots, got {len(slots)}")
    free: queue.Queue[np.ndarray | None] = queue.Queue()
    ready: queue.Queue[object] = queue.Queue()
    for slot in slots:
        free.put(slot)
    stop = threading.Event()

    def read() -> None:
        try:
            for job in jobs:
                slot = free.get()
                if slot is None or stop.is_set():
                    return
                ready.put((fill(job, slot), slot))
            ready.put(_DONE)
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, raised there
            ready.put(_Failure(error))

    reader = threading.Thread(target=read, name="prefetch-reader", daemon=True)
    reader.start()
    try:
        while (item := ready.get()) is not _DONE:
            if isinstance(item, _Failure):
                raise item.error
            block, slot = cast(tuple[B, np.ndarray], item)  # what the reader put: (block, slot)
            yield block
            del item, block  # before the slot goes back: a fill that allocates its own block
            free.put(slot)  # then holds two at most, never a third for a moment
    finally:
        stop.set()
        free.put(None)  # wakes a reader waiting for a slot
        reader.join()
