"""Checkpoint deltas handed over as cache-sized pieces of the files, when the files are warm.

From the page cache a streamed Gram is bound by memory traffic, not by the disk: the ring route
(:mod:`harness.data.delta_stream`) writes every block into a large buffer and reads it back, and
held a warm checkpoint PCA to 26% of a plain read of its files. Here a piece is the same values
of the base and of each fine-tune, a few MiB in all, which the Gram's thread reads straight into
its own stage (``preadv``, one kernel copy) and multiplies while they are in cache
(:mod:`harness.linalg.piece_gram`). Cold files keep the ring route: there the disk wants many
large reads in flight (4 readers, 64 MiB blocks), which is what its cold full-size figure
measured; so pieces are offered only when the files are in the page cache (sampled by mincore)
and fit in memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.data.delta_stream import StoredBlock, StoredTensor
from harness.data.workload import DataError
from harness.linalg.gram import STORED_DTYPES
from harness.linalg.piece_gram import Piece, StoredPieces
from harness.linalg.spans import ReadError, SpanReader, cached_fraction
from harness.machine.info import memory_available

__all__ = ["STAGE_BYTES", "WARM", "delta_pieces", "is_warm", "pieceable"]

# Bytes of one piece (the base's span and every fine-tune's): held in cache while it is
# multiplied. Measured with 6 fine-tunes of 8 x 2048^2 float32 tensors on 2 cores, warm: 0.45 MiB
# pieces 48% of a plain read (Python and syscalls per span), 0.9 MiB 73%, 1.8 MiB 78%, 3.5 MiB 85%.
STAGE_BYTES = 4 << 20
MIN_SPAN_VALUES = 1 << 14  # many fine-tunes: spans shorter than this cost more per call than they carry
WARM = 0.9  # share of the bytes in the page cache above which the files count as warm

Positions = Sequence[tuple[Sequence[StoredTensor], StoredTensor]]


def pieceable(positions: Positions, dtype: np.dtype) -> bool:
    """Whether the compiled kernel widens these positions as stored: a float32 run, each
    position's fine-tunes of one dtype and its base of STORED_DTYPES (BF16 or F32)."""
    return np.dtype(dtype) == np.float32 and all(
        base.stored in STORED_DTYPES and len({t.stored for t in tuned}) == 1 and tuned[0].stored in STORED_DTYPES
        for tuned, base in positions)


def _spans(positions: Positions) -> list[tuple[StoredTensor, int]]:
    """Every tensor the positions read, with its bytes."""
    return [(t, math.prod(t.shape) * t.stored.itemsize) for tuned, base in positions for t in (base, *tuned)]


def is_warm(positions: Positions) -> bool:
    """Whether the tensors fit in the memory available and are (nearly) all in the page cache."""
    spans = _spans(positions)
    if sum(nbytes for _, nbytes in spans) > memory_available():
        return False
    return cached_fraction((t.path, t.start, nbytes) for t, nbytes in spans) >= WARM


def _aligned(nbytes: int) -> int:
    return -(-nbytes // 64) * 64


def delta_pieces(positions: Positions, dtype: np.dtype) -> StoredPieces:
    """The positions (all :func:`pieceable` to `dtype`) as pieces of at most STAGE_BYTES (at
    least MIN_SPAN_VALUES values of each file), position by position; each piece's fill reads
    the base's span and then each fine-tune's into the stage, as stored. Read errors raise
    DataError naming the file; a NaN or Inf delta names it through :class:`StoredBlock`."""
    widest = max((sum(t.stored.itemsize for t in (base, *tuned)) for tuned, base in positions), default=4)
    span = max(MIN_SPAN_VALUES, STAGE_BYTES // widest)
    pieces = [Piece(g, first, min(span, math.prod(base.shape) - first))
              for g, (_, base) in enumerate(positions) for first in range(0, math.prod(base.shape), span)]
    stage_bytes = max((_aligned(span * base.stored.itemsize) + len(tuned) * span * tuned[0].stored.itemsize
                       for tuned, base in positions), default=0)
    reader = SpanReader()

    def fill(piece: Piece, stage: np.ndarray) -> StoredBlock:
        tuned, base = positions[piece.position]
        c, rows_dtype = piece.count, tuned[0].stored
        below = stage[: c * base.stored.itemsize].view(base.stored)
        at = _aligned(below.nbytes)
        rows = stage[at : at + len(tuned) * c * rows_dtype.itemsize].view(rows_dtype).reshape(len(tuned), c)
        try:
            for t, out in ((base, below), *zip(tuned, rows)):
                reader.read_into(t.path, t.start + piece.first * t.stored.itemsize, out)
        except ReadError as e:
            raise DataError(str(e)) from e
        return StoredBlock(rows, below, tuple(tuned), base)

    n = len(positions[0][0]) if positions else 0
    return StoredPieces(len(positions), n, pieces, stage_bytes, fill, reader.close)
