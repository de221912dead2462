"""Reading a small file the user names (a spec, a run record, asv's results) with a size cap:
a 2.2 GB file given as a spec was read whole (4.45 GB resident) before it could be refused, and
`/dev/zero`, which stat calls empty, grew until MemoryError."""

from __future__ import annotations

import os
from pathlib import Path


class TooLarge(OSError):
    """A file over the cap its reader set; `size` is what stat said, or cap + 1 for a stream."""

    def __init__(self, path: Path, size: int, cap: int) -> None:
        super().__init__(f"{size:,} bytes or more; expected at most {cap:,}")
        self.size, self.cap = size, cap


def read_capped(path: Path, cap: int) -> bytes:
    """The file's bytes; TooLarge before reading a file stat says is larger, and after cap + 1
    bytes of one it does not (a device, a FIFO, /proc). Other OSErrors pass through."""
    with path.open("rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > cap:
            raise TooLarge(path, size, cap)
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise TooLarge(path, len(data), cap)
    return data
