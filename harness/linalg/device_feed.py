"""Host blocks to a CUDA device so that the copy of block i + 1 overlaps the product of block i.

Measured on an H100, the streamed Gram ran at 3.1 GB/s on CUDA against 27 GB/s on the host: each
slice went over as a pageable, synchronous copy of a strided view, so the GPU waited for every
copy and the copy engine for every product. Here blocks come from pinned host memory (the
prefetch ring's slots) and are copied with ``non_blocking=True`` on a side stream; the compute
stream waits only on that copy's event, and the device tensor is marked as used by the compute
stream (``record_stream``) so the caching allocator does not hand its memory to the next copy
before the product has read it. The host buffer may be reused once :meth:`Sent.release` returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.linalg.device import torch_module

__all__ = ["DeviceFeed", "Sent", "is_pinned"]


def is_pinned(block: np.ndarray) -> bool:
    """Whether `block` is C-contiguous page-locked memory, so its copy can be asynchronous."""
    torch = torch_module()
    return bool(torch is not None and block.flags.c_contiguous and block.flags.writeable
                and torch.from_numpy(block).is_pinned())


@dataclass(frozen=True)
class Sent:
    tensor: Any  # the block on the device, ready for the compute stream
    copied: Any  # torch.cuda.Event recorded on the side stream after the copy

    def release(self) -> None:
        """Wait until the host buffer has been read by the copy (not for the product)."""
        self.copied.synchronize()


class DeviceFeed:
    """Copies on a side stream of `device`; products run on its current stream."""

    def __init__(self, device: str = "cuda") -> None:
        torch = torch_module()
        if torch is None:
            raise RuntimeError("a device feed needs torch")
        self.torch = torch
        self.device = device
        self.side = torch.cuda.Stream(device=device)
        self.main = torch.cuda.current_stream(device)

    def send(self, host: np.ndarray) -> Sent:
        """Start copying the pinned, C-contiguous `host` to the device; returns at once."""
        torch = self.torch
        source = torch.from_numpy(host)
        with torch.cuda.stream(self.side):
            tensor = torch.empty(source.shape, dtype=source.dtype, device=self.device)
            tensor.copy_(source, non_blocking=True)
            copied = torch.cuda.Event()
            copied.record(self.side)
        self.main.wait_event(copied)
        tensor.record_stream(self.main)
        return Sent(tensor, copied)
