"""The two consoles every command writes to: results on stdout, progress and problems on stderr.
Without a terminal (a pipe, a log, CI) rich would assume 80 columns; tables get 160, or the
width COLUMNS asks for (`COLUMNS=100 harness run ... | tee log` in a 100-column terminal)."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.text import Text

from harness.report.fitting import wrapped

WIDE = 160  # tables are unreadable at the 80 columns rich assumes without a terminal


class _Console(Console):
    """rich answers a closed pipe with SystemExit(1), which reads as `compare`'s regression code:
    the BrokenPipeError goes on to the launcher instead, which exits 141 as `yes | head` does."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def width(terminal: bool) -> int | None:
    """A console's width: the terminal's own (None: rich reads it, COLUMNS first), else COLUMNS
    where it holds a width, else WIDE."""
    if terminal:
        return None
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and 0 < int(columns) <= 10_000 else WIDE


out = _Console(width=width(sys.stdout.isatty()))
err = _Console(stderr=True, width=width(sys.stderr.isatty()))


def say(line: str, console: Console = out, markup: bool = True, hang: int | None = None) -> None:
    """One line (markup applied unless `markup` is False: a user's path or key is text): on a
    terminal wrapped between words at its width (the terminal itself would cut mid-word), its
    continuations indented `hang` columns past its own indent where given (report.fitting.wrapped; the plan's
    sub-lines), elsewhere kept whole (a log or a pipe keeps each line, so `grep` and a test find a
    phrase however long the line)."""
    if hang is not None and console.is_terminal:
        plain = Text.from_markup(line).plain if markup else line
        console.print(wrapped(plain, console.width, hang), soft_wrap=True, highlight=False, markup=False)
        return
    console.print(line, soft_wrap=not console.is_terminal, highlight=False, markup=markup)
