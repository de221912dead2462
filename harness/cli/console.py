"""The two consoles every command writes to: results on stdout, progress and problems on stderr.
Without a terminal (a pipe, a log, CI) rich would assume 80 columns; tables get 160, or the
width COLUMNS asks for (`COLUMNS=100 harness run ... | tee log` in a 100-column terminal), at
which lines wrap too (harness.base.lines)."""

from __future__ import annotations

import sys

from rich.console import Console

from harness.base.lines import asked_width, print_line

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
    return None if terminal else asked_width() or WIDE


out = _Console(width=width(sys.stdout.isatty()))
err = _Console(stderr=True, width=width(sys.stderr.isatty()))


def say(line: str, console: Console = out, markup: bool = True, hang: int = 2) -> None:
    """One line (markup applied unless `markup` is False: a user's path or key is text), wrapped
    where the width is known (a terminal, or COLUMNS asked for), its continuations indented `hang`
    columns past its own indent (the plan's sub-lines stay under their item), elsewhere kept whole
    (a log or a pipe keeps each line, so `grep` and a test find a phrase however long the line)."""
    print_line(console, line, markup=markup, hang=hang)
