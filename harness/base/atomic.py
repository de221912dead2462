"""Atomic file writes: a reader sees the old file or the whole new one, never part of one; and
an output folder one writer holds at a time."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

NAME_ROOM = 200  # bytes of the target's name in a temporary file's: "." + name + ".XXXXXXXX.tmp" stays under 255


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def _replacing(path: Path) -> Iterator[str]:
    """A temporary file in `path`'s folder, renamed over `path` when the block exits normally.

    The file gets the mode a plain open() would give it (0666 less the umask), not mkstemp's
    0600; on any exception it is removed and `path` is untouched.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    name = os.fsencode(path.name)[:NAME_ROOM].decode(errors="ignore")  # a 255-byte name leaves no room for more
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{name}.", suffix=".tmp")
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Write through a temporary file in the same folder, fsync, then rename over `path`."""
    with _replacing(path) as tmp, open(tmp, "wb") as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())


class NpyColumns:
    """A (rows, columns) C-order .npy file being written column range by column range.

    Each piece is a few pwrite calls, one per row: writing through a memmap instead cost 20 to
    200x more on a fresh file (a page fault per page, 0.2-2.5 s against 0.01 s for 47 MB here).
    """

    def __init__(self, path: str, fd: int, offset: int, shape: tuple[int, int], dtype: np.dtype) -> None:
        self.path, self.fd, self.offset, self.shape, self.dtype = path, fd, offset, shape, dtype

    def write(self, column: int, values: np.ndarray) -> None:
        """`values` (rows, w) become columns [column, column + w) of every row."""
        rows, columns = self.shape
        if values.shape[0] != rows or not 0 <= column <= column + values.shape[1] <= columns:
            raise ValueError(f"a ({values.shape}) piece at column {column} does not fit shape {self.shape}")
        values = np.ascontiguousarray(values, dtype=self.dtype)
        for j in range(rows):
            data = memoryview(values[j]).cast("B")
            at = self.offset + (j * columns + column) * self.dtype.itemsize
            while data:  # pwrite may write less than asked (at most ~2 GiB a call on Linux)
                written = os.pwrite(self.fd, data, at)
                data, at = data[written:], at + written


@contextmanager
def atomic_npy(path: Path, shape: tuple[int, int], dtype: np.dtype) -> Iterator[NpyColumns]:
    """A .npy file written in pieces (:class:`NpyColumns`) that becomes `path` only if the block
    exits normally, fsynced; for arrays too large to build in memory (principal axes are as long
    as an adapter). Inside the block the file can be read back at ``.path``."""
    with _replacing(path) as tmp, open(tmp, "r+b") as fh:
        header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
        np.lib.format.write_array_header_1_0(fh, header)
        fh.flush()
        offset = fh.tell()
        fh.truncate(offset + int(np.prod(shape)) * dtype.itemsize)
        yield NpyColumns(tmp, fh.fileno(), offset, shape, dtype)
        os.fsync(fh.fileno())


class FolderTaken(OSError):
    """Another process holds the folder (:func:`exclusive_folder`)."""


@contextmanager
def exclusive_folder(folder: Path) -> Iterator[None]:
    """`folder`, made if missing, held by this process alone while the block runs: an exclusive
    flock on the folder itself, which the kernel drops when the holder dies, however it dies (no
    stale lock file to clean). A second holder gets FolderTaken at once: two runs given one `-o`
    both exited 0 with one `results:` line, and one run's results were gone. A folder this call
    made and the block left empty is removed again."""
    made = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderTaken(f"{folder}: another process is writing into this folder") from None
        yield
    finally:
        os.close(fd)
        if made and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def folder_in_use(folder: Path) -> bool:
    """Whether a process holds `folder` (:func:`exclusive_folder`): a run still writing into it."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
