"""Intervals for timings whose unit of replication is the run, not the call or the round.

Consecutive calls in one process are correlated (caches, frequency, what else runs), so the
spread of ~200 calls says little about how a second run would come out. A round times the
baseline and every strategy of one analysis back to back (the order alternates from round to
round), so drift and load hit both sides of a ratio alike: the paired log ratios of a round are
its replicate within the run. But rounds of one run share that run's state (its processes, what
the machine did that minute): within a run they spread by 0.004-0.06 (log sd), between runs the
same speedups spread by 0.05-0.25. So the unit of replication across runs is the run:

A speedup's interval says what a run of this code on this machine gets: a 95% prediction interval
for the next run's speedup, built on run-level means (each run counts once), rather than a
random-effects fit (with 2-10 runs the between-run variance cannot be estimated apart from the
within-run one; the DerSimonian-Laird estimate is often 0 and undercovers):

- rounds from two runs or more: the mean of the runs' mean log ratios, +- t(runs - 1) s
  sqrt(1 + 1/runs), s their sd: exact for normal run effects whatever the rounds per run. An
  interval for the mean alone (t s / sqrt(runs)) narrows without bound as runs are added, and in
  the field check the pooled interval after run k covered run k+1's own figure in 74% of cases.
- rounds from one run: +- z sqrt(spread^2 + max(spread^2, s^2/n)), `spread` the between-run log sd
  this machine has shown for the item (the sd of its stored runs' means, from three runs on;
  DEFAULT_SPREAD until then): this run's own deviation and the next one's. Two lucky rounds never
  read +-1%; one round still gets an honest, wide interval.

Comparing two sets of runs (run_difference) asks whether their means differ: each side's mean
with its own uncertainty (over runs, or for one run s^2/n + spread^2), Welch-Satterthwaite.

Timings are positive and their noise multiplicative, so everything is on log seconds and comes
back as [low, high] around the geometric mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

LEVEL = 0.95
# The between-run log sd of a speedup assumed until a machine has shown its own (three runs of an
# item): the main job's spread by 0.02-0.13 between runs; one run's interval is then +-32% or more.
DEFAULT_SPREAD = 0.10
MIN_SPREAD = 0.02  # never assumed smaller, however alike the runs a machine kept
DRIFT_P = 0.01  # a trend across rounds at this significance...
DRIFT_SPAN = 0.25  # ...that moves the fitted time by this share from first round to last


class Interval(BaseModel):
    """A ratio's point estimate (the geometric mean of the paired ratios) and its interval."""

    estimate: float
    low: float
    high: float
    n: int  # rounds (paired replicates) behind it
    runs: int = 1  # the runs they came from: the replicates of a pooled interval

    @property
    def half_width(self) -> float:
        """The larger relative distance from the estimate to an end of the interval."""
        return max(self.high / self.estimate - 1.0, 1.0 - self.low / self.estimate)

    def resolved(self, precision: float) -> bool:
        return math.isfinite(self.half_width) and self.half_width <= precision


def quantile(df: float, level: float = LEVEL) -> float:
    """The two-sided `level` quantile of Student's t, the normal's for infinite df (scipy.special:
    scipy.stats takes a second to import)."""
    from scipy.special import ndtri, stdtrit

    return float(stdtrit(df, 0.5 + level / 2) if math.isfinite(df) else ndtri(0.5 + level / 2))


def lower_tail(statistic: float, df: float) -> float:
    """P(T <= statistic) for Student's t with df degrees of freedom, the normal for infinite df."""
    from scipy.special import ndtr, stdtr

    return float(stdtr(df, statistic) if math.isfinite(df) else ndtr(statistic))


def _t_half(var: float, df: float, level: float) -> float:
    """The half-width of a t interval (a normal one for infinite df) of variance `var`."""
    if not math.isfinite(var):
        return math.inf
    return quantile(df, level) * math.sqrt(var)


def _side(runs: Sequence[Sequence[float]], spread: float) -> tuple[float, float, float]:
    """The mean of a side's log values over its runs, the variance of that mean and its degrees
    of freedom (inf: known); the variance is inf when it cannot be told."""
    means = [float(np.mean(r)) for r in runs if len(r)]
    if not means:
        return math.nan, math.inf, 1.0
    if len(means) >= 2:
        return float(np.mean(means)), float(np.var(means, ddof=1)) / len(means), len(means) - 1.0
    x = np.asarray(next(r for r in runs if len(r)), dtype=float)
    if len(x) < 2:  # one round: its own noise counted as much as another run's
        return float(x[0]), 2 * spread**2, math.inf
    within = float(x.var(ddof=1)) / len(x)
    var = within + spread**2
    df = var**2 / (within**2 / (len(x) - 1)) if within > 0 else math.inf
    return float(x.mean()), var, df


def run_interval(runs: Sequence[Sequence[float]], spread: float = DEFAULT_SPREAD, level: float = LEVEL) -> Interval:
    """exp of the prediction interval of the next run's mean log value, the run as the unit: each
    element of `runs` is one run's log values (its rounds' paired log ratios); `spread` is the
    between-run log sd this machine has shown, applied when there is one run only."""
    runs = [r for r in runs if len(r)]
    if not runs:
        return Interval(estimate=math.nan, low=0.0, high=math.inf, n=0, runs=0)
    n = sum(len(r) for r in runs)
    if len(runs) >= 2:
        means = [float(np.mean(r)) for r in runs]
        mean = float(np.mean(means))
        half = _t_half(float(np.var(means, ddof=1)) * (1 + 1 / len(runs)), len(runs) - 1.0, level)
    else:
        x = np.asarray(runs[0], dtype=float)
        mean = float(x.mean())
        within = float(x.var(ddof=1)) / len(x) if len(x) >= 2 else 0.0
        half = _t_half(spread**2 + max(spread**2, within), math.inf if within <= spread**2 else len(x) - 1.0, level)
    return Interval(estimate=float(np.exp(mean)), low=float(np.exp(mean - half)), high=float(np.exp(mean + half)),
                    n=n, runs=len(runs))


def run_difference(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], spread: float = DEFAULT_SPREAD,
                   level: float = LEVEL) -> tuple[Interval, float | None]:
    """B over A from two sets of runs of log values (independent: no run on both sides): whether
    their means differ, each side's mean with its own uncertainty (over runs; for one run its
    rounds' and the machine's spread), Welch-Satterthwaite between them. Returns the interval and
    the two-sided p value of "no change" (None when a side has no round)."""
    ma, va, da = _side(a, spread)
    mb, vb, db = _side(b, spread)
    if math.isnan(ma) or math.isnan(mb):
        return Interval(estimate=math.nan, low=0.0, high=math.inf, n=0, runs=0), None
    runs = min(sum(1 for r in a if len(r)), sum(1 for r in b if len(r)))
    n = min(sum(len(r) for r in a), sum(len(r) for r in b))
    diff, var = mb - ma, va + vb
    if var == 0.0:
        return Interval(estimate=math.exp(diff), low=math.exp(diff), high=math.exp(diff), n=n, runs=runs), (
            1.0 if diff == 0.0 else 0.0)
    terms = [v**2 / d for v, d in ((va, da), (vb, db)) if math.isfinite(d) and v > 0]
    df = var**2 / sum(terms) if terms else math.inf
    half = _t_half(var, df, level)
    p = 2 * lower_tail(-abs(diff) / math.sqrt(var), df)
    return Interval(estimate=math.exp(diff), low=math.exp(diff - half), high=math.exp(diff + half), n=n,
                    runs=runs), p


def run_spread(runs: Sequence[Sequence[float]]) -> float | None:
    """The between-run log sd that runs of an item showed: the sd of their means, from three runs
    on (two give one degree of freedom); None before."""
    means = [float(np.mean(r)) for r in runs if len(r)]
    return float(np.std(means, ddof=1)) if len(means) >= 3 else None


def trend_p(values: Sequence[float] | np.ndarray) -> float:
    """Two-sided p of Kendall's tau between order and value (normal approximation, no ties)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    signs = np.sign(x[None, :] - x[:, None])[np.triu_indices(n, 1)]
    z = signs.sum() / math.sqrt(n * (n - 1) * (2 * n + 5) / 18)
    return math.erfc(abs(z) / math.sqrt(2))


def drift_reason(values: Sequence[float]) -> str | None:
    """Why rounds in time order are not replicates of one another: a steady trend (the machine
    warming, throttling or getting busier). Kendall's tau over six rounds or more."""
    x = np.asarray(values, dtype=float)
    if len(x) < 6 or np.any(x <= 0):
        return None
    slope = np.polyfit(np.arange(len(x)), np.log(x), 1)[0]
    span = math.exp(abs(slope) * (len(x) - 1)) - 1
    if trend_p(x) < DRIFT_P and span > DRIFT_SPAN:
        way = "slower" if slope > 0 else "faster"
        return f"drifting: {len(x)} rounds grew {100 * span:.0f}% {way} from first to last"
    return None
