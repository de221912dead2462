"""The console entry point: SIGTERM becomes an exception like Ctrl-C's, and both are answered
with one line and exit 130 / 143, even while the heavy imports (numpy, scipy, rich) are under
way, before `harness.cli.main` can handle anything. Nothing here imports more than the standard
library and the exit codes."""

from __future__ import annotations

import importlib
import signal
import sys
from types import FrameType

from harness.cli.exit_codes import Terminated, exit_code, stopped


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        cli = importlib.import_module("harness.cli.main")
        return int(cli.main(argv))
    except KeyboardInterrupt as exc:  # before the CLI could answer it: while importing
        print(f"harness: {stopped(exc)}", file=sys.stderr)
        return exit_code(exc)
