"""A Work for the timing-worker tests: picklable, built in the worker, doing as it is told."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Told:
    label: str = "told"
    call_s: float = 0.001  # how long a call sleeps
    fail: str = ""  # "build", "block": raise there; "exit": the worker dies in its block; "stop": it stops (SIGSTOP)
    holds: str = ""  # a file: the target holds a named semaphore (as a process pool does) and writes it when a block starts

    def build(self) -> ToldTarget:
        if self.fail == "build":
            raise ValueError("cannot build its inputs")
        return ToldTarget(self)


class ToldTarget:
    backend = "numpy"

    def __init__(self, work: Told) -> None:
        self.work = work
        self.warmed = False
        # a spawn context's Lock is a named semaphore the resource tracker watches until it is unlinked
        self.lock = multiprocessing.get_context("spawn").Lock() if work.holds else None

    def warm(self) -> None:
        self.warmed = True

    def prepare(self, part: int, r: int) -> Callable[[], object]:
        if self.work.fail == "block" and r == 1:
            raise ZeroDivisionError(f"round {r} of part {part}")
        if self.work.fail == "exit":
            os._exit(3)
        if self.work.fail == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        if self.work.holds:
            Path(self.work.holds).write_text("in its block")
        return lambda: (os.getpid(), part, r, os.environ.get("HARNESS_TEST_ENV"), self.warmed, time.sleep(self.work.call_s))

    def notes(self) -> dict[str, Any]:
        return {"pid": os.getpid()}

    def close(self) -> None:
        pass
