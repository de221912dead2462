"""Every exit code the CLI answers with, and the SIGTERM exception that unwinds a run as Ctrl-C
does. Standard library only: the launcher imports it before the heavy imports start."""

from __future__ import annotations

EXIT_OK = 0
EXIT_REGRESSION = 1  # `compare --fail-on-regression` found a regression: what CI gates on
EXIT_USER_ERROR = 2  # a mistake in the spec, the input or the command line
EXIT_VERIFICATION_FAILED = 3  # a strategy failed verification
EXIT_INCONCLUSIVE = 4  # a gate could not judge (no group gated, an incomplete run); calibrate kept nothing
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: stdout's reader left, as `yes | head` ends
EXIT_TERMINATED = 143  # 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so a run unwinds as it does on Ctrl-C: its record
    is marked incomplete and no partial result file is left."""


def terminate(signum: int, frame: object) -> None:
    """The SIGTERM handler: Terminated, raised where the program is."""
    raise Terminated


def exit_code(exc: KeyboardInterrupt) -> int:
    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED


def stopped(exc: KeyboardInterrupt) -> str:
    return "terminated" if isinstance(exc, Terminated) else "interrupted"
