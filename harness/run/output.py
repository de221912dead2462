"""The run folder's writes: an OSError there is the user's to fix (a full disk, a read-only
mount), so it becomes one line naming the folder and the file, and exit 2."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class OutputError(Exception):
    """The run folder refused a write (a full disk, a read-only mount, permissions): the user's
    to fix, so one line and exit 2; what is on disk is what was whole before it."""


@contextmanager
def writing(folder: Path, name: str) -> Iterator[None]:
    """Writes of `name` into the run folder, whose OSError becomes an OutputError naming both."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"{folder}: cannot write {name}: {exc.strerror or exc}; free space there or "
                          "choose another folder with -o") from exc
