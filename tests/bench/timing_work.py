"""A Work for the timing-worker tests: picklable, built in the worker, doing as it is told."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Told:
    label: str = "told"
    call_s: float = 0.001  # how long a call sleeps
    fail: str = ""  # "build", "block": raise there; "exit": the worker dies in its block; "stop": it stops (SIGSTOP)

    def build(self) -> ToldTarget:
        if self.fail == "build":
            raise ValueError("cannot build its inputs")
        return ToldTarget(self)


class ToldTarget:
    backend = "numpy"

    def __init__(self, work: Told) -> None:
        self.work = work
        self.warmed = False

    def warm(self) -> None:
        self.warmed = True

    def prepare(self, part: int, r: int) -> Callable[[], object]:
        if self.work.fail == "block" and r == 1:
            raise ZeroDivisionError(f"round {r} of part {part}")
        if self.work.fail == "exit":
            os._exit(3)
        if self.work.fail == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        return lambda: (os.getpid(), part, r, os.environ.get("HARNESS_TEST_ENV"), self.warmed, time.sleep(self.work.call_s))

    def notes(self) -> dict[str, Any]:
        return {"pid": os.getpid()}

    def close(self) -> None:
        pass
