"""The torch routes of harness.linalg.gram.accumulate_gram: on the CPU, MKL's batched products
of a block's slices; on CUDA, blocks from pinned host memory copied on a side stream while the
previous block's product runs (harness.linalg.device_feed)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

import numpy as np

from harness.linalg.device import Backend, as_backend, to_numpy, torch_missing_reason, torch_module
from harness.linalg.device_feed import DeviceFeed, is_pinned
from harness.linalg.gram_blocks import SUM_COLUMNS, _check_block, _symmetrize
from harness.linalg.prefetch import Ring, prefetched

# Rows of the top block in the torch path's hand-made syrk (see _add_float32_gram).
TOP_ROWS = 16
# Columns the torch path takes at a time: on the CPU a numpy block's chunk is wrapped, not
# copied; on CUDA a pageable block is staged into pinned slots of this width when no ring is
# given (see _pinned_blocks). Bounds that copy whatever the block width.
CHUNK_COLUMNS = 1 << 20


def _accumulate_torch(
    blocks: Iterable[np.ndarray], backend: Backend, ring: Ring | None = None, feed: DeviceFeed | None = None
) -> np.ndarray:
    torch = torch_module()
    if torch is None:
        raise RuntimeError(f"backend {backend!r} needs torch, but {torch_missing_reason()}")
    if backend == "cuda":
        return _accumulate_cuda(blocks, ring, feed)
    G = None
    n: int | None = None
    for block in blocks:
        n = _check_block(block, n)
        if G is None:
            G = torch.zeros((n, n), dtype=torch.float64, device=backend)
        for start in range(0, block.shape[1], CHUNK_COLUMNS):
            _add_tensor_gram(G, _stored_tensor(block[:, start : start + CHUNK_COLUMNS], backend))
    if G is None:
        raise ValueError("no blocks given; cannot infer n")
    return _symmetrize(to_numpy(G))


def _accumulate_cuda(
    blocks: Iterable[np.ndarray], ring: Ring | None = None, feed: DeviceFeed | None = None
) -> np.ndarray:
    """Blocks from pinned host memory (see _pinned_blocks; staged through `ring` when given),
    each copied on the side stream of `feed` (a new one when None) while the previous block's
    product runs (harness.linalg.device_feed); the host buffer goes back to its ring as soon as
    its copy is done. G lives on the feed's device."""
    torch = torch_module()
    assert torch is not None
    feed = DeviceFeed() if feed is None else feed
    G = None
    n: int | None = None
    for host in _pinned_blocks(blocks, ring):
        n = _check_block(host, n)
        if G is None:
            G = torch.zeros((n, n), dtype=torch.float64, device=feed.device)
        sent = feed.send(host)
        _add_tensor_gram(G, sent.tensor)
        sent.release()
    if G is None:
        raise ValueError("no blocks given; cannot infer n")
    return _symmetrize(to_numpy(G))


def _pinned_blocks(blocks: Iterable[np.ndarray], ring: Ring | None = None) -> Iterator[np.ndarray]:
    """The blocks as C-contiguous pinned host arrays: as they are when the first one is (a
    source's pinned ring), else copied by a reader thread, as many columns as a slot holds at a
    time, into the pinned `ring` (by default a ring of CHUNK_COLUMNS-column slots; the copy of a
    strided memmap view runs beside the GPU). A given ring that the blocks themselves lie in is
    not written to: a ring of the default size is used instead."""
    blocks = iter(blocks)
    first = next(blocks, None)
    if first is None:
        return
    blocks = chain([first], blocks)
    if isinstance(first, np.ndarray) and is_pinned(first):
        yield from blocks
        return
    n = max(first.shape[0], 1)
    if ring is None or any(np.may_share_memory(first, slot) for slot in ring.slots):
        ring = Ring(n * first.dtype.itemsize * CHUNK_COLUMNS, pinned=True)
    ring = ring.holding(n * first.dtype.itemsize)
    width = ring.nbytes // n  # bytes of each row a slot holds

    def chunks() -> Iterator[tuple[np.ndarray, int, int]]:
        for block in blocks:
            step = max(1, width // block.dtype.itemsize)
            for start in range(0, block.shape[1], step):
                yield block, start, step

    def fill(job: tuple[np.ndarray, int, int], slot: np.ndarray) -> np.ndarray:
        block, start, step = job
        piece = to_numpy(block[:, start : start + step])
        out = slot[: piece.nbytes].view(piece.dtype).reshape(piece.shape)
        np.copyto(out, piece)
        return out

    yield from prefetched(chunks(), fill, ring.slots)


def _add_tensor_gram(G: Any, Xc: Any) -> None:
    """G += Xc @ Xc.T: float32 slices for float32 and narrower floats, else in float64."""
    torch = torch_module()
    assert torch is not None
    if Xc.is_floating_point() and Xc.element_size() <= 4:
        _add_float32_gram(G, Xc.to(torch.float32))
    else:
        Xc = Xc.to(torch.float64)
        G.addmm_(Xc, Xc.T)


def _add_float32_gram(G: Any, X: Any) -> None:
    """G += X @ X.T with float32 sums over at most SUM_COLUMNS columns, summed in float64.

    The full slices go through batched products (p, h, S) @ (p, S, n) on a strided view (no
    copy), the tail as a batch of one. torch exposes no syrk, so symmetry is used by hand: rows
    [:h] against all rows, rows [h:] against rows [h:], the lower-left block mirrored. With
    h = TOP_ROWS = 16 and n = 18 on 2 cores (MKL, AVX-512) this ran 17% faster than the batched
    full product (which beats one (n, c) @ (c, n) gemm by ~20%); h = n // 2 gained nothing.
    """
    torch = torch_module()
    assert torch is not None
    n, c = X.shape
    h = min(n, TOP_ROWS)
    full = c // SUM_COLUMNS * SUM_COLUMNS
    batches = [X[:, full:].unsqueeze(0)] if full < c else []
    if full:
        batches.append(X[:, :full].unflatten(1, (full // SUM_COLUMNS, SUM_COLUMNS)).transpose(0, 1))
    for batch in batches:
        top = torch.bmm(batch[:, :h], batch.transpose(1, 2)).sum(0, dtype=torch.float64)
        low = batch[:, h:]
        G[:h] += top
        G[h:, h:] += torch.bmm(low, low.transpose(1, 2)).sum(0, dtype=torch.float64)
        G[h:, :h] += top[:, h:].T


def _stored_tensor(block: Any, backend: Backend) -> Any:
    """The block as a torch tensor on `backend` in its stored dtype, without a host copy.

    torch.from_numpy takes strided views and warns on read-only arrays (a memmap opened with
    mode="r"); the tensor here is only read, so the warning is silenced instead of copying.
    """
    torch = torch_module()
    assert torch is not None
    if isinstance(block, torch.Tensor):
        return block.to(backend)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(np.asarray(block)).to(backend)


def _float64_tensor(block: Any, backend: Backend) -> Any:
    """The block as a float64 torch tensor on `backend`, moved in its stored dtype, cast there.

    A read-only array (a memmap opened with mode="r") is copied first, in its own dtype:
    torch.from_numpy warns on non-writable arrays. The copy stays within block_columns' budget
    (stored copy + float64 copy).
    """
    torch = torch_module()
    assert torch is not None
    if isinstance(block, np.ndarray) and not block.flags.writeable:
        block = np.array(block, order="C")
    return as_backend(block, backend).to(torch.float64)
