"""A live display whose tasks' elapsed time is a clock the test sets: the ETA tests' one setting."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

from harness.base.progress import Display


@contextmanager
def clocked_display(clock: Callable[[], float]) -> Iterator[Display]:
    """A live display at 100 columns on a terminal, its progress timed by `clock`."""
    with Display(Console(file=io.StringIO(), width=100, force_terminal=True), live=True) as display:
        assert display.progress is not None
        display.progress.get_time = clock
        yield display
