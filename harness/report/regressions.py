"""Did a speedup change between two commits? Judged from asv's series of the speedups suite
(benchmarks/speedups.py): per commit, the time ratio (1 / speedup), the factor f of the speedup's
95% interval [s / f, s * f], and the share of its rounds timed on a busy machine.

Each side's log speedup has the standard error its interval implies, ln f / 1.96 (the harness's
interval is a t interval, whose quantile is larger: this errs wide). A difference is a change as
`harness compare` judges one (report.compare: p < ALPHA and beyond FACTOR); it is "no change" only
when its interval at that level rules out a change of RESOLUTION either way, otherwise
"inconclusive": a verdict that could not have seen a 1.5x change says so. `judge` compares one
run with one run (the history's steps and headline), where a side timed on a busy machine is
inconclusive too (a busy machine measures another machine: its between-run spread is wider than
one run's interval says); the regression gate's several runs per commit measure that spread
instead (report.gate).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from harness.base.units import format_ratio, format_speedup, p_clause
from harness.bench.statistics import lower_tail, quantile
from harness.report.compare import ALPHA, FACTOR
from harness.report.history import Series

RESOLUTION = 1.5  # "no change" rules out a change of this factor either way
BUSY = 0.0  # a side with more than this share of its rounds busy is not judged: the harness uses busy
# rounds only when fewer than two quiet ones were timed, so any share above 0 means mostly busy
Z95 = 1.959963984540054
SUITE = "speedups."  # benchmarks/speedups.py: a class per tracked spec
RATIO, INTERVAL, SHARE_BUSY = "track_time_ratio", "track_interval", "track_busy"
UNTIMED, LOAD = "track_untimed", "track_load"  # why a point was not timed (a code of CAUSES); the run's load
# what a run that did not time a point recorded of why (benchmarks/speedups.py): asv keeps numbers only,
# and its log of a run says only n/a, so the cause travels as one of these codes (0: timed)
BUSY_CAUSE, ELSEWHERE_CAUSE, FAILED_CAUSE = 1, 2, 3
CAUSES = {BUSY_CAUSE: "not timed: out of time on a busy machine",
          ELSEWHERE_CAUSE: "not timed: unable to run here, or its worker was lost",
          FAILED_CAUSE: "failed: it gave no answer to time"}

Verdict = Literal["regression", "improvement", "no change", "inconclusive"]


class Side(BaseModel):
    """One commit's speedup of one point on one machine, as asv recorded it."""

    commit: str
    speedup: float | None  # None: not measured at this commit (failed, skipped, not run)
    interval: float | None = None  # f of [s / f, s * f]
    busy: float | None = None  # share of its rounds timed while the machine was busy
    untimed: float | None = None  # why it was not timed, a code of CAUSES (0: timed; None: not recorded)
    load: float | None = None  # the highest load average the run saw
    cores: int | None = None  # the machine's CPUs (asv's machine.json), which the load is read against

    @property
    def cause(self) -> str | None:
        """Why the run did not time it, as it recorded (`... (load 6.1 on 2 cores)` when busy: a load
        means little without the cores it is shared by); None when it did not say."""
        said = CAUSES.get(self.untimed) if self.untimed is not None else None  # type: ignore[call-overload]
        if said is None or self.untimed != BUSY_CAUSE or not self.load:
            return said
        return f"{said} (load {self.load:.1f}{f' on {self.cores} cores' if self.cores else ''})"

    @property
    def baseline(self) -> bool:
        """The analysis' baseline: its speedup over itself, exactly 1 with no interval to speak of."""
        return self.speedup == 1.0 and self.interval == 1.0

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
    low: float | None = None  # its interval, at `level`
    high: float | None = None
    p: float | None = None
    level: float | None = None  # set with the interval: a point not judged has neither
    verdict: Verdict
    why: str
    runs: list[list[Side]] = []  # the gate's: each commit's runs (before's, after's), when it ran several

    def describe(self) -> str:
        """`task_geometry:spectrum/torch on vm-cpu: 2.41x -> 1.60x (0.66x, 99% interval 0.55-0.80; p=0.001):
        regression, ...`."""
        def speedup(side: Side) -> str:
            return "n/a" if side.speedup is None else format_speedup(side.speedup)

        ratio = "" if self.ratio is None or self.low is None or self.high is None or self.level is None else (
            f" ({format_ratio(self.ratio)}x, {100 * self.level:.3g}% interval {format_ratio(self.low)}-{format_ratio(self.high)}; "
            f"{p_clause(self.p)})")
        runs = "".join(f"; {side.commit[:8]} runs " + ", ".join(speedup(s) for s in sides)
                       for side, sides in zip((self.before, self.after), self.runs) if sides)
        return (f"{self.point} on {self.machine}: {speedup(self.before)} -> {speedup(self.after)}{ratio}: "
                f"{self.verdict}, {self.why}{runs}")


def se(side: Side) -> float:
    """The standard error of a side's log speedup that its 95% interval implies."""
    return math.log(side.interval) / Z95  # type: ignore[arg-type]


def unmeasured(named: Sequence[tuple[str, Side]]) -> str | None:
    """Why a side cannot be judged (no speedup, or one without an interval); None when all can."""
    for name, side in named:
        if side.speedup is None or not side.interval or not 1 <= side.interval < math.inf:
            return (f"{name} ({side.commit[:8]}) has no speedup with an interval: not timed (skipped on a busy "
                    "machine, failed, or not run)")
    return None


def _exp(x: float) -> float:
    """e^x, inf beyond a float's range: asv's results may hold speedups of 1e-308 and 1e308."""
    return math.exp(x) if x < math.log(sys.float_info.max) else math.inf


def decide(judged: Judged, diff: float, se: float, df: float = math.inf, alpha: float = ALPHA,
           one_sided: bool = False, factor: float = FACTOR, resolution: float = RESOLUTION) -> Judged:
    """`judged` with the verdict on a log difference `diff` of standard error `se` (Student's t
    with `df` degrees of freedom, the normal for inf): p two-sided, or with `one_sided` the tail in
    the difference's direction. The interval reported, and held against `resolution` for "no
    change", is at the test's own level: 1 - alpha two-sided, 1 - 2 alpha one-sided."""
    z = -abs(diff) / se if se > 0 else (0.0 if diff == 0 else -math.inf)
    tail = lower_tail(z, df)
    p = tail if one_sided else 2 * tail
    level = 1 - 2 * alpha if one_sided else 1 - alpha
    q = quantile(df, level)
    found = judged.model_copy(update={"ratio": _exp(diff), "low": _exp(diff - q * se),
                                      "high": _exp(diff + q * se), "p": p, "level": level})
    if p < alpha and not 1 / factor < found.ratio < factor:  # type: ignore[operator]
        verdict: Verdict = "improvement" if diff > 0 else "regression"
        return found.model_copy(update={"verdict": verdict, "why": f"p < {alpha:.2g} and beyond x{factor:g}"})
    if 1 / resolution < found.low and found.high < resolution:  # type: ignore[operator]
        return found.model_copy(update={"verdict": "no change", "why": f"a change beyond x{resolution:g} is ruled out"})
    return found.model_copy(update={"verdict": "inconclusive",
                                    "why": f"the interval is too wide to rule out a change of x{resolution:g}"})


def judge(machine: str, point: str, before: Side, after: Side) -> Judged:
    """After against before, one run each (the history's steps and headline): a regression or an
    improvement when the speedups differ at ALPHA by more than FACTOR; no change when the
    difference's interval lies within 1/RESOLUTION to RESOLUTION; else inconclusive, and so when a
    side is missing, has no interval, or was busy."""
    judged = Judged(machine=machine, point=point, before=before, after=after, verdict="inconclusive", why="")
    if (why := unmeasured([("before", before), ("after", after)])) is not None:
        return judged.model_copy(update={"why": why})
    diff = math.log(after.speedup) - math.log(before.speedup)  # type: ignore[arg-type]  # a quotient may overflow
    found = decide(judged, diff, math.hypot(se(before), se(after)))
    busy = [f"{name} {100 * s.busy:.0f}%" for name, s in (("before", before), ("after", after))
            if s.busy is not None and s.busy > BUSY]
    if busy:
        return found.model_copy(update={"verdict": "inconclusive",
                                        "why": f"rounds timed on a busy machine ({', '.join(busy)})"})
    return found


def _values(series: Series | None) -> dict[str, float | None]:
    return {p.commit: p.value for p in series.points} if series is not None else {}


def track_of(s: Series) -> str | None:
    """The speedups suite's track a series is (`track_time_ratio`, ...); None for other suites'."""
    return s.benchmark.rsplit(".", 1)[1] if s.benchmark.startswith(SUITE) else None


def sides(all_series: Sequence[Series]) -> dict[tuple[str, str], dict[str, Side]]:
    """(machine, point) -> commit -> its Side, from the speedups suite's series; the baselines
    (exactly 1 wherever measured) left out: they are not compared."""
    by_track = {name: {(s.line, s.params.get("point", "")): s for s in all_series if track_of(s) == name}
                for name in (RATIO, INTERVAL, SHARE_BUSY, UNTIMED, LOAD)}
    found: dict[tuple[str, str], dict[str, Side]] = {}
    for key, ratio in by_track[RATIO].items():
        interval, busy, untimed, load = (_values(by_track[name].get(key)) for name in (INTERVAL, SHARE_BUSY, UNTIMED, LOAD))
        by_commit = {p.commit: Side(commit=p.commit, speedup=1 / p.value if p.value else None,
                                    interval=interval.get(p.commit), busy=busy.get(p.commit),
                                    untimed=untimed.get(p.commit), load=load.get(p.commit), cores=ratio.cores)
                     for p in ratio.points}
        if not any(side.baseline for side in by_commit.values()):
            found[key] = by_commit
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
