"""Measuring one call (a Block: its untimed warm-ups and timed calls, the device synchronised,
the threads recorded), and the summary of a strategy's rounds on one group (a Measurement: their
median and IQR, the machine's conditions over them, and why they are unreliable).

A block's calls are not replicates (consecutive calls in one process are correlated); rounds are
(bench.series). Measuring, recording (record/) and presenting (report/) stay separate, as in
torch.utils.benchmark.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np
from pydantic import BaseModel, field_validator

from harness.base.numbers import NonNegative, Positive, Tally
from harness.bench.conditions import Conditions
from harness.bench.noise import FEW, judge
from harness.bench.statistics import quartiles
from harness.bench.threads import thread_counts
from harness.linalg.device import Backend, synchronize

T = TypeVar("T")

MIN_TIME_S = 0.1  # fast calls repeat until this much is sampled, so the median is stable
MAX_REPEATS = 200


class Block(BaseModel):
    """One block of calls in a round: each timed call's seconds, in order, and their mean: what a
    user's run of such calls pays per call, as torch.utils.benchmark's blocks report it (ARPACK's
    svds swung 95-290 ms a call with a long tail: a median put it 20% below what its calls cost)."""

    calls_s: list[float]
    seconds: float
    warmups: int = 0  # untimed calls before the first timed one
    warm_s: float = 0.0  # what they took
    threads: dict[str, int] = {}


class Measurement(BaseModel):
    """A strategy's rounds on one group: each round's seconds of one call, earlier runs' first."""

    samples_s: list[Positive]
    median_s: Positive
    iqr_s: NonNegative
    warmup: Tally
    threads: dict[str, int]
    conditions: Conditions | None = None
    unstable: bool = False
    reasons: list[str] = []  # why it is unstable

    @field_validator("reasons")
    @classmethod
    def _today(cls, reasons: list[str]) -> list[str]:
        """Records before walk 14 wrote `its 2 samples differ by`: read in today's words, so that no
        summary says an `its` with nothing before it."""
        return [r.replace(f"its {FEW}", FEW) for r in reasons]


def measure(
    fn: Callable[[], T],
    *,
    warmup: int,
    repeats: int,
    backend: Backend,
    allowance_s: float = math.inf,
    min_time_s: float = MIN_TIME_S,
    min_samples: int = 1,
    warm_time_s: float = 0.0,
    on_call: Callable[[str], None] = lambda what: None,
) -> tuple[Block, T]:
    """Time `fn` after `warmup` untimed calls (more, until `warm_time_s` has passed): `repeats`
    times, and for fast calls until `min_time_s` of samples (at most MAX_REPEATS), as
    torch.utils.benchmark's blocked_autorange does; but never start a call that would end past
    `allowance_s` from the start, once one timed call is made (`min_samples` of them). `on_call`
    hears which call starts. Returns the last result too."""
    start = time.perf_counter()
    done = 0
    while done < warmup or (done and time.perf_counter() - start < warm_time_s):
        on_call(f"warm-up {done + 1}" + (f" of {warmup}" if done < warmup else ""))
        result = fn()
        done += 1
    synchronize(backend)
    warm_s = time.perf_counter() - start
    samples: list[float] = []
    while True:
        on_call(f"call {len(samples) + 1}" + (f" of {repeats}" if len(samples) < repeats else ""))
        t0 = time.perf_counter()
        result = fn()
        synchronize(backend)
        samples.append(time.perf_counter() - t0)
        wanted = len(samples) < repeats or (sum(samples) < min_time_s and len(samples) < MAX_REPEATS)
        fits = time.perf_counter() - start + float(np.median(samples)) <= allowance_s or len(samples) < min_samples
        if not (wanted and fits):
            break
    block = Block(calls_s=samples, seconds=float(np.mean(samples)), warmups=done, warm_s=warm_s,
                  threads=thread_counts())
    return block, result  # fn ran once at least


def summarised(samples: list[float], warmup: int, conditions: Conditions | None,
               threads: dict[str, int], earlier: Iterable[Sequence[str]] = (), per: int = 1) -> Measurement:
    """The measurement of a strategy's rounds in time order: their median and IQR, the thread
    counts they were timed with, and every reason they are unreliable (noise.judge, `earlier`
    the busy reasons of the rounds earlier runs timed; `per` the matrices a sample times)."""
    q1, median, q3 = quartiles(samples)
    reasons = judge(samples, conditions, earlier, per)
    return Measurement(samples_s=samples, median_s=median, iqr_s=q3 - q1, warmup=warmup,
                       threads=threads, conditions=conditions, unstable=bool(reasons), reasons=reasons)
