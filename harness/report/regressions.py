"""Did a speedup change between two commits? Judged from asv's series of the speedups suite
(benchmarks/speedups.py): per commit, the time ratio (1 / speedup), the factor f of the speedup's
95% interval [s / f, s * f], and the share of its rounds timed on a busy machine.

Each side's log speedup has the standard error its interval implies, ln f / 1.96 (the harness's
interval is a t interval, whose quantile is larger: this errs wide). The difference is tested as
`harness compare` tests one (report.compare: p < ALPHA and beyond FACTOR is a change). A
difference that is not a change is "no change" only when its own 95% interval rules out a change
of RESOLUTION either way; otherwise it is "inconclusive", and so is a side measured mostly while
the machine was busy (a busy machine measures another machine: its between-run spread is wider
than any single run's interval says). A gate that could not have seen a 1.5x regression says so;
it never passes or fails on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from harness.report.compare import ALPHA, FACTOR
from harness.report.history import Series

RESOLUTION = 1.5  # "no change" rules out a change of this factor either way
BUSY = 0.0  # a side with more than this share of its rounds busy is not judged: the harness uses busy
# rounds only when fewer than two quiet ones were timed, so any share above 0 means mostly busy
Z95 = 1.959963984540054
SUITE = "speedups.Speedups."
RATIO, INTERVAL, SHARE_BUSY = SUITE + "track_time_ratio", SUITE + "track_interval", SUITE + "track_busy"

Verdict = Literal["regression", "improvement", "no change", "inconclusive"]


class Side(BaseModel):
    """One commit's speedup of one point on one machine, as asv recorded it."""

    commit: str
    speedup: float | None  # None: not measured at this commit (failed, skipped, not run)
    interval: float | None = None  # f of [s / f, s * f]
    busy: float | None = None  # share of its rounds timed while the machine was busy

    @property
    def low(self) -> float | None:
        return self.speedup / self.interval if self.speedup and self.interval else None

    @property
    def high(self) -> float | None:
        return self.speedup * self.interval if self.speedup and self.interval else None


class Judged(BaseModel):
    """A point's speedup after against before, and the verdict."""

    machine: str
    point: str  # `experiment:analysis/strategy`
    before: Side
    after: Side
    ratio: float | None = None  # after's speedup over before's: below 1 is slower
    low: float | None = None  # its 95% interval
    high: float | None = None
    p: float | None = None
    verdict: Verdict
    why: str

    def describe(self) -> str:
        """`task_geometry:spectrum/torch on vm-cpu: 2.41x -> 1.60x (0.66x, 0.55-0.80; p=0.001): regression`."""
        def speedup(side: Side) -> str:
            return "n/a" if side.speedup is None else f"{side.speedup:.3g}x"

        ratio = "" if self.ratio is None else f" ({self.ratio:.3g}x, {self.low:.3g}-{self.high:.3g}; p={self.p:.2g})"
        return (f"{self.point} on {self.machine}: {speedup(self.before)} -> {speedup(self.after)}{ratio}: "
                f"{self.verdict}, {self.why}")


def _se(side: Side) -> float:
    return math.log(side.interval) / Z95  # type: ignore[arg-type]


def judge(machine: str, point: str, before: Side, after: Side, alpha: float = ALPHA, factor: float = FACTOR,
          resolution: float = RESOLUTION) -> Judged:
    """After against before: a regression or an improvement when the speedups differ at `alpha` by
    more than `factor`; no change when the difference's interval lies within 1/resolution to
    resolution; else inconclusive, and so when a side is missing, has no interval, or was busy."""
    base = {"machine": machine, "point": point, "before": before, "after": after}
    for name, side in (("before", before), ("after", after)):
        if side.speedup is None or not side.interval or not math.isfinite(side.interval):
            return Judged(**base, verdict="inconclusive", why=f"{name} ({side.commit[:8]}) has no speedup "
                          "with an interval: not timed (skipped on a busy machine, failed, or not run)")
    diff = math.log(after.speedup / before.speedup)  # type: ignore[operator]
    se = math.hypot(_se(before), _se(after))
    p = math.erfc(abs(diff) / se / math.sqrt(2)) if se > 0 else float(diff == 0)
    ratio, low, high = math.exp(diff), math.exp(diff - Z95 * se), math.exp(diff + Z95 * se)
    found = {**base, "ratio": ratio, "low": low, "high": high, "p": p}
    busy = [f"{name} {100 * s.busy:.0f}%" for name, s in (("before", before), ("after", after))
            if s.busy is not None and s.busy > BUSY]
    if busy:
        return Judged(**found, verdict="inconclusive", why=f"rounds timed on a busy machine ({', '.join(busy)})")
    if p < alpha and not 1 / factor < ratio < factor:
        verdict: Verdict = "improvement" if ratio > 1 else "regression"
        return Judged(**found, verdict=verdict, why=f"p < {alpha:g} and beyond x{factor:g}")
    if 1 / resolution < low and high < resolution:
        return Judged(**found, verdict="no change", why=f"a change beyond x{resolution:g} is ruled out")
    return Judged(**found, verdict="inconclusive",
                  why=f"the intervals are too wide to rule out a change of x{resolution:g}")


def _values(series: Series | None) -> dict[str, float | None]:
    return {p.commit: p.value for p in series.points} if series is not None else {}


def sides(all_series: Sequence[Series]) -> dict[tuple[str, str], dict[str, Side]]:
    """(machine, point) -> commit -> its Side, from the speedups suite's series."""
    by_name = {name: {(s.line, s.params.get("point", "")): s for s in all_series if s.benchmark == name}
               for name in (RATIO, INTERVAL, SHARE_BUSY)}
    found: dict[tuple[str, str], dict[str, Side]] = {}
    for key, ratio in by_name[RATIO].items():
        interval, busy = _values(by_name[INTERVAL].get(key)), _values(by_name[SHARE_BUSY].get(key))
        found[key] = {p.commit: Side(commit=p.commit, speedup=1 / p.value if p.value else None,
                                     interval=interval.get(p.commit), busy=busy.get(p.commit))
                      for p in ratio.points}
    return found


def compare_commits(all_series: Sequence[Series], before: str, after: str) -> list[Judged]:
    """Every tracked point of every machine with results at either commit, after against before."""
    judged = []
    for (machine, point), by_commit in sorted(sides(all_series).items()):
        if before not in by_commit and after not in by_commit:
            continue
        judged.append(judge(machine, point, by_commit.get(before, Side(commit=before, speedup=None)),
                            by_commit.get(after, Side(commit=after, speedup=None))))
    return judged
