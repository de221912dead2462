"""The regression gate's verdicts (benchmarks/continuous.py): BASE and HEAD each timed by several
runs of the tracked speedups, interleaved (BASE, HEAD, BASE, HEAD, ...), and HEAD's speedups
judged against BASE's with the run as the unit of replication (bench.statistics' rule).

One run's interval cannot know how far apart runs fall right now: beside two busy processes, six
runs of identical code measured one speedup from 882x to 2,070x. So each run counts once: a
point's change is HEAD's mean log speedup over its runs minus BASE's, its standard error from the
spread of the runs themselves (the two commits' variances pooled), Student's t with runs - 2
degrees of freedom. A regression when the one-sided p is below
FAMILY_ALPHA / the points judged (Bonferroni: identical code fails the gate at most FAMILY_ALPHA
of the time however many points) and the speedup fell by more than FACTOR; "no change" when the
difference's interval at that level lies within 1/RESOLUTION to RESOLUTION; otherwise inconclusive,
as when a run did not time the point. A busy machine spreads the runs, so it widens the interval
into "inconclusive" instead of raising an alarm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from harness.report.regressions import Judged, Side, decide, unmeasured

FAMILY_ALPHA = 0.05


def logs(sides: Sequence[Side]) -> np.ndarray:
    return np.log(np.array([s.speedup for s in sides], dtype=float))  # measured sides: no None


def measured(sides: Sequence[Side]) -> bool:
    return len(sides) >= 2 and all(s.speedup is not None and s.speedup > 0 for s in sides)


def _shown(sides: Sequence[Side], commit: str) -> Side:
    """The runs' geometric mean speedup, as one side to show."""
    return Side(commit=commit, speedup=float(np.exp(logs(sides).mean())) if measured(sides) else None)


def difference(before: Sequence[Side], after: Sequence[Side]) -> tuple[float, float, int]:
    """After's mean log speedup minus before's, its standard error over the runs (the two sides'
    variances pooled) and its degrees of freedom."""
    a, b = logs(before), logs(after)
    df = len(a) + len(b) - 2
    pooled = (((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum()) / df
    return float(b.mean() - a.mean()), math.sqrt(pooled * (1 / len(a) + 1 / len(b))), df


def judge_runs(machine: str, runs: Mapping[str, tuple[Sequence[Side], Sequence[Side]]], base: str,
               head: str) -> list[Judged]:
    """Every point: HEAD's runs against BASE's (`runs[point]` = (BASE's runs, HEAD's runs))."""
    judgeable = [p for p, (before, after) in runs.items() if measured(before) and measured(after)]
    alpha = FAMILY_ALPHA / max(len(judgeable), 1)
    judged = []
    for point, (before, after) in sorted(runs.items()):
        shown = Judged(machine=machine, point=point, verdict="inconclusive", why="", before=_shown(before, base),
                       after=_shown(after, head), runs=[list(before), list(after)])
        if point not in judgeable:
            named = [(f"{c[:8]} run {i + 1}", s) for c, sides in ((base, before), (head, after))
                     for i, s in enumerate(sides)]
            fewest, runs_of = min(((base, before), (head, after)), key=lambda pair: len(pair[1]))
            few = f"{fewest[:8]} " + ("has no run of it" if not runs_of else "ran it once: no spread to judge by")
            why = next((f"{name} did not time it (skipped on a busy machine, or failed)" for name, s in named
                        if s.speedup is None), unmeasured(named) or few)
            judged.append(shown.model_copy(update={"why": why}))
            continue
        diff, error, df = difference(before, after)
        judged.append(decide(shown, diff, error, df=df, alpha=alpha, one_sided=True))
    return judged
