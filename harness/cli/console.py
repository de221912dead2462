"""The two consoles every command writes to: results on stdout, progress and problems on stderr.
Without a terminal (a pipe, a log, CI) rich would assume 80 columns; tables get 160."""

from __future__ import annotations

import sys

from rich.console import Console

WIDE = 160  # tables are unreadable at the 80 columns rich assumes without a terminal


class _Console(Console):
    """rich answers a closed pipe with SystemExit(1), which reads as `compare`'s regression code:
    the BrokenPipeError goes on to the launcher instead, which exits 141 as `yes | head` does."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


out = _Console(width=None if sys.stdout.isatty() else WIDE)
err = _Console(stderr=True, width=None if sys.stderr.isatty() else WIDE)


def say(line: str, console: Console = out) -> None:
    """One line, markup applied: on a terminal wrapped between words at its width (the terminal
    itself would cut mid-word), elsewhere kept whole (a log or a pipe keeps each line, so `grep`
    and a test find a phrase however long the line)."""
    console.print(line, soft_wrap=not console.is_terminal, highlight=False)
