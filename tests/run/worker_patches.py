"""Patches a test needs inside the timing workers as well as in the run's own process, applied on
import as the environment asks: `forkserver_run` (tests/conftest.py) imports this module in a fresh
process and preloads it into the forkserver the workers fork from. Forking the workers from the
test process instead deadlocked now and then: its OpenMP pool, already used by earlier tests,
does not survive a fork (a worker hung in GOMP_parallel inside torch's SVD)."""

from __future__ import annotations

import inspect
import multiprocessing
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

RAISE = "HARNESS_TEST_RAISING"  # a strategy's name: its compute raises
COMPILE_LOG = "HARNESS_TEST_COMPILE_LOG"  # a file: torch.compile faked, each call of a compiled function says
# there whether a timed block was under way
# set: the run sees a quiet machine whatever else runs here, so that the limit never cuts a point's
# first round (bench.budget.Budget.fits: a floor on a quiet machine always fits) and every compared
# point is timed at least once; a test of what a point's timing records must not depend on the load
QUIET = "HARNESS_TEST_QUIET"
STOP = "HARNESS_TEST_STOP"  # "strategy=folder": in a timing worker, its compute writes the worker's pid into
# folder and stops the worker (SIGSTOP), as a worker stuck in a kernel would
MESSAGE = "ARPACK did not converge\nsecond line the table never shows"


def raising(*args: object, **kwargs: object) -> None:
    raise RuntimeError(MESSAGE)


def fake_compile(log: Path) -> Callable[..., Any]:
    """torch.compile without inductor's ~20 s C++ build."""

    def compile_(fn: Callable[..., Any], dynamic: bool = False) -> Callable[..., Any]:
        def compiled(*args: Any) -> Any:
            timed = any(f.function == "measure" and f.filename.endswith("bench/measure.py") and
                        f.frame.f_locals.get("samples") is not None for f in inspect.stack())
            with log.open("a") as fh:
                fh.write("timed\n" if timed else "untimed\n")
            return fn(*args)
        return compiled
    return compile_


def no_conditions(conditions: object) -> list[str]:
    """bench.noise.condition_reasons on a quiet machine: nothing else took it."""
    return []


if os.environ.get(QUIET):
    from harness.run import rounds

    rounds.condition_reasons = no_conditions  # type: ignore[assignment]


def stopping(compute: Callable[..., Any], folder: Path) -> Callable[..., Any]:
    """`compute`, but a timing worker (not the run's own process) stops itself first."""
    def stopped(*args: Any, **kwargs: Any) -> Any:
        if multiprocessing.parent_process() is not None:
            (folder / str(os.getpid())).write_text("stopping")
            os.kill(os.getpid(), signal.SIGSTOP)
        return compute(*args, **kwargs)
    return stopped


if name := os.environ.get(RAISE):
    from harness.strategies.registry import STRATEGIES

    type(STRATEGIES[name]).compute = raising  # type: ignore[method-assign]
if log := os.environ.get(COMPILE_LOG):
    import torch

    torch.compile = fake_compile(Path(log))  # type: ignore[assignment]
if stop := os.environ.get(STOP):
    from harness.strategies.registry import STRATEGIES

    name, _, folder = stop.partition("=")
    kind = type(STRATEGIES[name])
    kind.compute = stopping(kind.compute, Path(folder))  # type: ignore[method-assign]
