"""The console entry point: SIGTERM becomes an exception like Ctrl-C's, and both are answered
with one line and exit 130 / 143, even while the heavy imports (numpy, scipy, rich) are under
way, before `harness.cli.main` can handle anything. Nothing here imports more than the standard
library and the exit codes."""

from __future__ import annotations

import importlib
import io
import os
import signal
import sys
from types import FrameType

from harness.cli.exit_codes import EXIT_BROKEN_PIPE, Terminated, exit_code, stopped


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


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


def _quiet_thread_pools() -> None:
    """Idle threads that sleep instead of spinning, unless the user chose otherwise: the
    benchmark's rounds run strategies back to back, and a pool still spinning takes the cores
    from the next call's pool. Set before anything imports numpy or torch, which read these once.
    - OpenMP (torch): its spinning pool took the second core from the next strategy's BLAS
      (round-to-round spread of the main job's top-3 timings, log seconds: torch 0.11 -> 0.05,
      torch_lowrank 0.12 -> 0.04, factored 0.06 -> 0.00).
    - OpenBLAS: numpy and scipy each bundle one, and ARPACK (scipy_svds) alternates between them
      for every product, so two pools of spinning threads shared 2 cores: svds of a 3072x768
      matrix took 16-32 ms with IQR 50-120% of its median; with idle threads asleep after 2^18
      cycles (~0.1 ms), 5 ms with IQR 3%, while dense svdvals and GEMM did not change (load 0.3)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "18")


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    _quiet_thread_pools()
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
