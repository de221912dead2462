"""The console entry point: SIGTERM becomes an exception like Ctrl-C's, and both are answered
with one line and exit 130 / 143, even while the heavy imports (numpy, scipy, rich) are under
way, before `harness.cli.main` can handle anything. Nothing here imports more than the standard
library and the exit codes, and nothing here touches the environment: the harness times the
program the user runs, with the user's thread settings (harness.bench.worker)."""

from __future__ import annotations

import importlib
import io
import os
import signal
import sys

from harness.cli.exit_codes import EXIT_BROKEN_PIPE, exit_code, stopped, terminate


def _tolerant_streams() -> None:
    """A terminal or pipe whose encoding cannot show a character ("µs" under
    PYTHONIOENCODING=ascii) gets "?" for it, rather than a traceback after the results are written."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")


def _reader_gone() -> int:
    """stdout's reader left (`harness schema | head -1`): the rest of the output goes nowhere,
    as it would for any Unix tool, instead of a BrokenPipeError traceback at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, terminate)
    _tolerant_streams()
    try:
        cli = importlib.import_module("harness.cli.main")
        code = int(cli.main(argv))
        sys.stdout.flush()  # here, where a gone reader can be answered, not at exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except KeyboardInterrupt as exc:  # before the CLI could answer it: while importing
        print(f"harness: {stopped(exc)}", file=sys.stderr)
        return exit_code(exc)
