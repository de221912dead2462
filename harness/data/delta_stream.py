"""Deltas of stored tensors (fine-tuned minus base), streamed in row blocks through a prefetch
ring: reader threads read the next blocks' spans of every file while the Gram of the current
block is computed.

A block is rows ``[r0, r1)`` of one position's n tensors, flattened: row i of the block is
``tuned_i[r0:r1] - base[r0:r1]``, the contiguous piece ``[r0 k, r1 k)`` of adapter i's vector
at that position (C order), so a Gram summed over blocks is the Gram of the whole vectors. Each
block reads n + 1 contiguous spans (the base once, not n times) into the ring's buffers. Dense
blocks, for any consumer, are read 1 MiB at a time through a small buffer that stays in cache,
where each piece is widened (BF16, F16), subtracted and checked finite; stored blocks, for the
compiled Gram, are read as the files hold them and the kernel does that work in cache. Memory is
the ring's (harness.linalg.prefetch), shared by every position of a computation.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeVar

import numpy as np

from harness.data.paths import require_finite
from harness.data.safetensors_io import DTYPES, bf16_to_f32
from harness.data.workload import DataError
from harness.linalg.compiled import load_kernel
from harness.linalg.gram import STORED_DTYPES, StoredDeltas
from harness.linalg.prefetch import Ring
from harness.linalg.spans import ReadError, SpanReader
from harness.machine.info import memory_available

__all__ = ["StoredBlock", "StoredTensor", "as_stored", "read_delta", "row_bytes", "stream_deltas", "stream_stored",
           "streamable", "warm_deltas"]

# Files whose spans are read at once: a cold disk serves several requests in flight faster than
# one (queue depth), and the widening and subtraction run beside each other (numpy releases the
# GIL). Measured at full size, cold (benchmarks/pca_full.py): see docs/INTERNALS.md.
READERS = 4
# Values read, widened, subtracted and checked at a time: 1 MiB of float32 stays in L2, where a
# page-cache copy ran 1.5-2x faster than into a 64 MiB buffer (benchmarks/gram_memmap.py, pca_full).
PIECE = 1 << 18
B = TypeVar("B")  # what a stream hands over per block: a dense block or a StoredBlock


@dataclass(frozen=True)
class StoredTensor:
    """Where a 2-D tensor's bytes are: file, absolute offset of its data, safetensors dtype."""

    path: Path
    name: str
    start: int
    dtype: str
    shape: tuple[int, int]

    @property
    def stored(self) -> np.dtype:
        return DTYPES[self.dtype]


def streamable(tensors: Sequence[StoredTensor], dtype: np.dtype) -> bool:
    """Whether every tensor widens exactly to `dtype` (BF16, F16 -> float32; anything -> float64):
    then each is cast before the subtraction with no loss. A float64 tensor in a float32 run
    must be subtracted in float64 first, which the whole-matrix load does."""
    dtype = np.dtype(dtype)
    return all(dtype.itemsize >= 4 if t.dtype == "BF16" else t.stored.itemsize <= dtype.itemsize for t in tensors)


def row_bytes(n: int, k: int, itemsize: int) -> int:
    """Ring bytes of one row of a block: the row of each of n deltas and of their base, widened."""
    return (n + 1) * k * itemsize


def _read_raw(reader: SpanReader, t: StoredTensor, first: int, count: int, stage: np.ndarray) -> np.ndarray:
    """Values [first, first + count) of `t`, flattened, as stored, into the small reused `stage`."""
    raw = stage.view(t.stored)[:count]
    reader.read_into(t.path, t.start + first * t.stored.itemsize, raw)
    return raw


def _stage(local: threading.local, nbytes: int) -> np.ndarray:
    """This thread's own small staging buffer, allocated on its first use."""
    if getattr(local, "stage", None) is None:
        local.stage = np.empty(nbytes, dtype=np.uint8)
    return local.stage


def _widen(raw: np.ndarray, out: np.ndarray, t: StoredTensor) -> None:
    """`raw` (as stored) into `out` in out's dtype: exact, since t is streamable to it."""
    if t.dtype == "BF16" and out.dtype == np.float32:
        bf16_to_f32(raw, out=out)
    else:
        np.copyto(out, bf16_to_f32(raw) if t.dtype == "BF16" else raw)


def _subtract(raw: np.ndarray, below: np.ndarray, out: np.ndarray, t: StoredTensor) -> None:
    """out = widen(raw) - below, checked finite (NaN or Inf raises, naming t's file): in one
    compiled pass where it can (BF16 to float32, or one dtype throughout), else numpy's passes."""
    kernel = load_kernel("delta_kernel")
    if kernel is not None and t.dtype == "BF16" and out.dtype == np.float32:
        finite = kernel.bf16_delta(raw, below, out)
    elif kernel is not None and raw.dtype == out.dtype:
        finite = kernel.delta(raw, below, out)
    else:
        _widen(raw, out, t)
        np.subtract(out, below, out=out)
        _check_finite(out, t)
        return
    if not finite:
        require_finite(out, t.path, t.name)


def fill_base(reader: SpanReader, t: StoredTensor, first: int, below: np.ndarray, stage: np.ndarray) -> None:
    """Values [first, first + below.size) of the base `t` into `below`: read, widened and checked
    finite a piece at a time through the small `stage`."""
    for p in range(0, below.size, PIECE):
        piece = below[p : p + PIECE]
        _widen(_read_raw(reader, t, first + p, piece.size, stage), piece, t)
        _check_finite(piece, t)


def fill_delta(
    reader: SpanReader, t: StoredTensor, first: int, below: np.ndarray, row: np.ndarray, stage: np.ndarray
) -> None:
    """row = values [first, first + row.size) of `t` less `below`: read, widened, subtracted
    and checked a piece at a time while it is in cache."""
    for p in range(0, row.size, PIECE):
        piece = row[p : p + PIECE]
        _subtract(_read_raw(reader, t, first + p, piece.size, stage), below[p : p + PIECE], piece, t)


def read_delta(tuned: StoredTensor, base: StoredTensor, out: np.ndarray) -> None:
    """out (C-contiguous, of the tensors' shape, a dtype both are :func:`streamable` to) = tuned
    - base, a piece at a time: the whole-tensor reads held the raw tensors and their widened
    copies beside out (a bf16 embedding of 48838 x 1024: 600 MB for a 200 MB delta). Read
    errors and NaN/Inf raise DataError naming the file."""
    if not out.flags.c_contiguous:
        raise ValueError("read_delta fills a C-contiguous array in place")  # reshape would copy
    flat = out.reshape(-1)
    stage, below = np.empty(PIECE * 8, np.uint8), np.empty(PIECE, out.dtype)
    with SpanReader() as reader:
        try:
            for p in range(0, flat.size, PIECE):
                piece = flat[p : p + PIECE]
                fill_base(reader, base, p, below[: piece.size], stage)
                fill_delta(reader, tuned, p, below[: piece.size], piece, stage)
        except ReadError as e:
            raise DataError(str(e)) from e


def warm_deltas() -> None:
    """Load the compiled kernel for each kind of piece a stream subtracts (BF16, float32, float64)."""
    for stored, dtype in (("BF16", np.float32), ("F32", np.float32), ("F64", np.float64)):
        t = StoredTensor(Path("warm"), "warm", 0, stored, (1, 1))
        _subtract(np.zeros(1, t.stored), np.zeros(1, dtype), np.empty(1, dtype), t)


def _check_finite(values: np.ndarray, t: StoredTensor) -> None:
    """NaN or Inf raises, naming the file: a dot product (4x cheaper than isfinite) flags the
    piece; only then is it scanned (so an overflowing dot of finite values passes)."""
    if not math.isfinite(float(np.dot(values, values))):
        require_finite(values, t.path, t.name)


@dataclass(frozen=True)
class Span:
    """Rows [r0, r1) of one position's tensors: one block."""

    position: int
    r0: int
    r1: int


def stream_deltas(
    positions: Sequence[tuple[Sequence[StoredTensor], StoredTensor]], dtype: np.dtype, ring: Ring
) -> Iterator[tuple[int, np.ndarray]]:
    """(position, block) pairs: (n, c_b) float blocks of ``tuned_i - base`` over row ranges of
    each position in turn, read ahead into the `ring`'s slots (as many rows per block as a slot
    holds) by READERS threads.

    The blocks are pipelined, not filled one at a time: every block the ring has a slot for is
    queued at once as n + 1 file tasks (its base rows first, then each tuned file's, which wait
    for the base rows they subtract), so the readers go on to the next block's files while the
    last of this block's are read. Filling a block whole before starting the next left the
    threads idle at each block's end (the base read alone, a last wave of 2 files on 4 threads):
    a cold bf16 PCA ran at 61-68% of a plain read of the same files, pipelined at 55-84% (median
    71%); the rest is the widening and the kernel's copies on 2 cores, not the disk.

    Parameters
    ----------
    positions : sequence of (tuned, base): the n tuned tensors and the base of one position,
        all of one shape (m, k)
    dtype : the run's dtype; every tensor must be :func:`streamable` to it.
    ring : Ring, its slots carved into the base rows and the block (each thread reads through
        its own small stage).

    Yields
    ------
    (int, ndarray of shape (n, rows * k)): the block is valid until the next one is asked for.
    Read errors and NaN/Inf raise DataError naming the file.
    """
    dtype = np.dtype(dtype)
    stage_bytes = PIECE * 8  # a piece of the widest stored dtype
    local = threading.local()

    def read_base(reader: SpanReader, t: StoredTensor, first: int, below: np.ndarray) -> None:
        """The block's base rows."""
        fill_base(reader, t, first, below, _stage(local, stage_bytes))

    def read_row(reader: SpanReader, t: StoredTensor, first: int, below: np.ndarray, row: np.ndarray,
                 based: Future[None]) -> None:
        """One row of the block, once its base rows are in."""
        based.result()
        fill_delta(reader, t, first, below, row, _stage(local, stage_bytes))

    def queue(job: Span, slot: np.ndarray, files: ThreadPoolExecutor,
              reader: SpanReader) -> tuple[np.ndarray, list[Future[None]]]:
        """The block's n + 1 file tasks, queued on the readers; its view of `slot`, and the tasks."""
        tuned, base = positions[job.position]
        n, k = len(tuned), base.shape[1]
        first, c = job.r0 * k, (job.r1 - job.r0) * k
        rest = slot.view(dtype)
        below, block = rest[:c], rest[c : c + n * c].reshape(n, c)  # C-contiguous
        based = files.submit(read_base, reader, base, first, below)
        return block, [based, *(files.submit(read_row, reader, t, first, below, block[i], based)
                                for i, t in enumerate(tuned))]

    return _pipelined(positions, dtype, ring, queue)


def as_stored(positions: Sequence[tuple[Sequence[StoredTensor], StoredTensor]], dtype: np.dtype) -> bool:
    """Whether these positions are handed over as stored (:func:`stream_stored`): a float32 run,
    BF16 fine-tunes, and a base the compiled kernel widens (STORED_DTYPES: BF16 or F32). F32
    fine-tunes stay dense: read as stored, their copies into the ring cost more kernel time than
    the kernel saved (26.8 GB cold, alternated: 29.8-30.6 s against 22.8-25.8 s, system time 8.0-8.5
    -> 12.4-13.1 s), while a bf16 block is half the bytes it is widened to."""
    return np.dtype(dtype) == np.float32 and all(
        all(t.dtype == "BF16" for t in tuned) and base.stored in STORED_DTYPES for tuned, base in positions)


@dataclass(frozen=True)
class StoredBlock(StoredDeltas):
    """One block's values of each fine-tune and of their base as the files store them; `tuned`
    and `stored_base` are the tensors they come from, named when a delta is NaN or Inf."""

    tuned: tuple[StoredTensor, ...]
    stored_base: StoredTensor

    def refuse(self) -> NoReturn:
        """Names the file and tensor of the first value that is NaN or Inf (in the base, then
        in each fine-tune's delta, as the widened stream finds them)."""
        below = np.empty(self.base.size, np.float32)
        _widen(self.base, below, self.stored_base)
        require_finite(below, self.stored_base.path, self.stored_base.name)
        delta = np.empty_like(below)
        for t, row in zip(self.tuned, self.rows):
            _subtract(row, below, delta, t)  # the dense stream's own widen, subtract and check
        super().refuse()


def stream_stored(
    positions: Sequence[tuple[Sequence[StoredTensor], StoredTensor]], dtype: np.dtype, ring: Ring
) -> Iterator[tuple[int, StoredBlock]]:
    """(position, block) pairs as :func:`stream_deltas` has them, in the same rows per block,
    but each block as the files store it (positions must be :func:`as_stored`): one read per
    file span straight into the ring, no widening, subtraction or check here. The consumer does
    those a piece at a time in cache, in the Gram's kernel (linalg.gram.accumulate_delta_gram):
    widened into the ring and read back, a bf16 block crossed memory three times at twice its
    size (see docs/INTERNALS.md: a cold bf16 PCA's user time 10.4-13.0 -> 7.4 core-seconds)."""

    def queue(job: Span, slot: np.ndarray, files: ThreadPoolExecutor,
              reader: SpanReader) -> tuple[StoredBlock, list[Future[None]]]:
        """The block's n + 1 reads, queued on the readers, and its views of `slot`."""
        tuned, base = positions[job.position]
        n, k = len(tuned), base.shape[1]
        first, c = job.r0 * k, (job.r1 - job.r0) * k
        below = slot[: c * base.stored.itemsize].view(base.stored)
        rows = slot[below.nbytes : below.nbytes + n * c * 2].view(DTYPES["BF16"]).reshape(n, c)
        reads = [files.submit(reader.read_into, t.path, t.start + first * t.stored.itemsize, out)
                 for t, out in ((base, below), *zip(tuned, rows))]
        return StoredBlock(rows, below, tuple(tuned), base), reads

    return _pipelined(positions, dtype, ring, queue)


def _pipelined(
    positions: Sequence[tuple[Sequence[StoredTensor], StoredTensor]], dtype: np.dtype, ring: Ring,
    queue: Callable[[Span, np.ndarray, ThreadPoolExecutor, SpanReader], tuple[B, list[Future[None]]]],
) -> Iterator[tuple[int, B]]:
    """Each position's row blocks in turn, as many rows per block as a slot of the `ring` holds
    widened to `dtype` (the plan's figure, whatever a block holds); `queue` carves a block from
    a slot and queues its file tasks on the READERS threads. Every block a free slot can take is
    queued at once; a block is handed over when its tasks are done, its slot reused after."""
    rows_bytes = [row_bytes(len(tuned), base.shape[1], np.dtype(dtype).itemsize) for tuned, base in positions]
    ring = ring.holding(max(rows_bytes, default=0))
    rows = [max(1, ring.nbytes // b) for b in rows_bytes]
    jobs = [Span(g, r0, min(base.shape[0], r0 + rows[g]))
            for g, (_, base) in enumerate(positions) for r0 in range(0, base.shape[0], rows[g])]
    reader = SpanReader()
    total = sum(math.prod(base.shape) * sum(t.stored.itemsize for t in (base, *tuned)) for tuned, base in positions)
    drop_behind = total > memory_available()  # it cannot stay cached: keep the cache small

    def drop(job: Span) -> None:
        """Every file's span of `job` out of the page cache (SpanReader.drop)."""
        tuned, base = positions[job.position]
        k = base.shape[1]
        for t in (base, *tuned):
            reader.drop(t.path, t.start + job.r0 * k * t.stored.itemsize, (job.r1 - job.r0) * k * t.stored.itemsize)

    files = ThreadPoolExecutor(READERS, thread_name_prefix="harness-span")
    free, queued = list(ring.slots), deque[tuple[np.ndarray, B, list[Future[None]]]]()
    try:
        for j, job in enumerate(jobs):
            while free and j + len(queued) < len(jobs):  # every block a free slot can take
                slot = free.pop()
                queued.append((slot, *queue(jobs[j + len(queued)], slot, files, reader)))
            slot, block, tasks = queued.popleft()
            try:
                for task in tasks:
                    task.result()
            except ReadError as e:
                raise DataError(str(e)) from e
            yield job.position, block
            free.append(slot)
            if drop_behind:
                files.submit(drop, job)
        files.shutdown()  # the last drops run
    finally:
        files.shutdown(cancel_futures=True)
        reader.close()
