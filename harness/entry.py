"""The console entry point: SIGTERM becomes an exception like Ctrl-C's, and both are answered
with one line and exit 130 / 143, even while the heavy imports (numpy, scipy, rich) are under
way, before `harness.cli` can handle anything. Nothing here imports more than the standard library."""

from __future__ import annotations

import importlib
import signal
import sys
from types import FrameType

EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so a run unwinds as it does on Ctrl-C: its record
    is marked incomplete and no partial result file is left."""


def exit_code(exc: KeyboardInterrupt) -> int:
    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED


def stopped(exc: KeyboardInterrupt) -> str:
    return "terminated" if isinstance(exc, Terminated) else "interrupted"


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        cli = importlib.import_module("harness.cli")
        return int(cli.main(argv))
    except KeyboardInterrupt as exc:  # before the CLI could answer it: while importing
        print(f"harness: {stopped(exc)}", file=sys.stderr)
        return exit_code(exc)
