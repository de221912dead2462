"""Gram matrices of stored deltas read and reduced a cache-sized piece at a time on every core.

When the files are in the page cache, a streamed Gram is not bound by the disk but by how often
its values cross memory. The ring route (:mod:`harness.linalg.prefetch`) reads each block into a
64 MiB buffer, writes its deltas there and reads them back for the product: three or four
crossings of main memory per value, on 2 cores 26% of a plain read of the same files. Here each
thread reads one piece's spans (the base's and each fine-tune's, a few MiB in all) into its own
stage, which stays in cache, and at once widens, subtracts and multiplies it there with the
compiled kernel (:func:`harness.linalg.gram_kernel.add_piece_delta_gram`), so a value crosses
memory once, in the read's own kernel copy, as in a plain read. Threads take pieces in turn; the
reads (``preadv``) and the kernel release the GIL, so the cores copy and multiply side by side
(measured on 2 cores: 73-85% of a plain read, against 26% for the ring).

Every piece's Gram is kept apart (n x n float64 each, a few MB for thousands of pieces) and the
pieces are summed in their order, so the result is the same whichever thread took which piece.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from harness.linalg.compiled import load_kernel
from harness.linalg.gram import StoredDeltas

__all__ = ["Piece", "StoredPieces", "piece_grams"]


@dataclass(frozen=True)
class Piece:
    """Values ``[first, first + count)`` of every flattened tensor of one position."""

    position: int
    first: int
    count: int


@dataclass(frozen=True)
class StoredPieces:
    """What a source hands over to be read piece by piece: `pieces` in order (position by
    position), `fill(piece, stage)` reading one piece's n + 1 spans into a thread's own `stage`
    (``stage_bytes`` bytes) and returning them as :class:`StoredDeltas` views of it (raising,
    naming the file, when a read fails), and `close` to release what the reads hold."""

    positions: int
    n: int
    pieces: Sequence[Piece]
    stage_bytes: int
    fill: Callable[[Piece, np.ndarray], StoredDeltas]
    close: Callable[[], None]


def piece_grams(stored: StoredPieces, threads: int) -> np.ndarray:
    """(positions, n, n) float64: the Gram of each position's deltas ``widen(rows) - widen(base)``,
    from `threads` threads each reading a piece into its stage and adding its Gram while it is
    in cache. The deltas and float32 partial sums are :func:`~harness.linalg.gram.accumulate_delta_gram`'s
    (per 1024 columns, then float64). A delta that is NaN or Inf raises through its block's
    :meth:`StoredDeltas.refuse`; the first failure stops every thread and is raised here.
    `stored` is closed on return. Needs the compiled kernel (numba, the `fast` extra)."""
    kernel = load_kernel("gram_kernel")
    if kernel is None:
        raise RuntimeError("a Gram of stored pieces needs the compiled kernel (numba, the `fast` extra)")
    n, pieces = stored.n, stored.pieces
    parts = np.zeros((len(pieces), n, n))
    taken = iter(range(len(pieces)))
    lock, stop = threading.Lock(), threading.Event()

    def work() -> None:
        stage = np.empty(stored.stage_bytes, np.uint8)
        scratch = kernel.piece_scratch(n)
        while not stop.is_set():
            with lock:
                j = next(taken, None)
            if j is None:
                return
            block = stored.fill(pieces[j], stage)
            if not kernel.add_piece_delta_gram(parts[j], block.rows, block.base, scratch):
                block.refuse()

    def guarded() -> None:
        try:
            work()
        except BaseException:
            stop.set()  # the others stop at their next piece
            raise

    helpers = max(1, min(threads, len(pieces))) - 1
    pool = ThreadPoolExecutor(helpers, thread_name_prefix="harness-piece") if helpers else None
    try:
        futures = [pool.submit(guarded) for _ in range(helpers)] if pool else []
        guarded()  # this thread takes pieces too: one start fewer (3 ms each with the cores busy)
        for future in futures:
            future.result()
    finally:
        if pool is not None:
            pool.shutdown()  # after a failure, once the others have stopped
        stored.close()
    out = np.zeros((stored.positions, n, n))
    for j, piece in enumerate(pieces):  # in order: the same sums whatever thread took a piece
        out[piece.position] += parts[j]
    return np.stack([kernel.full_from_lower(G) for G in out]) if len(out) else out
