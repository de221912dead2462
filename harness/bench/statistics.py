"""Intervals for timings whose unit of replication is the round, not the call.

Consecutive calls in one process are correlated (caches, frequency, what else runs), so the
spread of ~200 calls says little about how a second run would come out. A round times the
baseline and every strategy of one analysis back to back (the order alternates from round to
round), so drift and load hit both sides of a ratio alike: the paired log ratios of the rounds
are the replicates, and runs pooled together add rounds (pyperf spawns worker processes and asv
repeats rounds for the same reason).

The speedup's interval is Student's t on the mean paired log ratio: timings are positive and
their noise is multiplicative, so log ratios are close to normal and the interval comes back as
[low, high] around the geometric mean of the ratios. It is exact for log-normal noise, which the
coverage test checks on seeded trials; with two rounds it is honest and wide (t = 12.7). Fieller's
interval for a ratio of means would need the two sides' covariance in each round, which the
paired logs carry implicitly; a bootstrap undercovers at the 3-8 rounds a budget affords.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

LEVEL = 0.95
DRIFT_P = 0.01  # a trend across rounds at this significance...
DRIFT_SPAN = 0.25  # ...that moves the fitted time by this share from first round to last


class Interval(BaseModel):
    """A ratio's point estimate (the geometric mean of the paired ratios) and its interval."""

    estimate: float
    low: float
    high: float
    n: int  # rounds (paired replicates) behind it

    @property
    def half_width(self) -> float:
        """The larger relative distance from the estimate to an end of the interval."""
        return max(self.high / self.estimate - 1.0, 1.0 - self.low / self.estimate)

    def resolved(self, precision: float) -> bool:
        return math.isfinite(self.half_width) and self.half_width <= precision


def _t(df: float, level: float = LEVEL) -> float:
    """Student's t quantile (scipy.special: scipy.stats takes a second to import)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + level / 2))


def _t_p(statistic: float, df: float) -> float:
    """The two-sided p value of a t statistic."""
    from scipy.special import stdtr

    return float(2 * stdtr(df, -abs(statistic)))


def log_interval(logs: Sequence[float], level: float = LEVEL) -> Interval:
    """exp of a t interval on the mean of `logs`; infinite ends with fewer than two."""
    x = np.asarray(logs, dtype=float)
    centre = float(np.exp(x.mean())) if len(x) else math.nan
    if len(x) < 2:
        return Interval(estimate=centre, low=0.0, high=math.inf, n=len(x))
    half = _t(len(x) - 1, level) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return Interval(estimate=centre, low=float(np.exp(x.mean() - half)), high=float(np.exp(x.mean() + half)),
                    n=len(x))


def rounds_to_resolve(interval: Interval, precision: float, most: int) -> int | None:
    """The fewest rounds at which an interval of the same spread would be within `precision`
    (t(n-1) s / sqrt(n) <= log(1 + precision), s the log ratios' standard deviation read back
    from the interval); None without a spread to read (fewer than two rounds) or beyond `most`."""
    n = interval.n
    if n < 2 or not math.isfinite(interval.high) or interval.high <= 0:
        return None
    sd = math.log(interval.high / interval.estimate) * math.sqrt(n) / _t(n - 1)
    goal = math.log1p(precision)
    for rounds in range(n, most + 1):
        if _t(rounds - 1) * sd / math.sqrt(rounds) <= goal:
            return rounds
    return None


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float], level: float = LEVEL) -> Interval:
    """numerator_i / denominator_i over rounds i (e.g. baseline seconds over a strategy's)."""
    if len(numerator) != len(denominator):
        raise ValueError(f"{len(numerator)} numerators against {len(denominator)} denominators")
    return log_interval(np.log(np.asarray(numerator, float)) - np.log(np.asarray(denominator, float)), level)


def welch_ratio(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> tuple[Interval, float | None]:
    """B over A from two independent sets of rounds: Welch's t on the logs. Returns the interval
    and the two-sided p value of "no change" (None with fewer than two rounds a side)."""
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    centre = float(np.exp(lb.mean() - la.mean()))
    if len(la) < 2 or len(lb) < 2:
        return Interval(estimate=centre, low=0.0, high=math.inf, n=min(len(la), len(lb))), None
    va, vb = la.var(ddof=1) / len(la), lb.var(ddof=1) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0.0:
        p = 1.0 if centre == 1.0 else 0.0
        return Interval(estimate=centre, low=centre, high=centre, n=min(len(la), len(lb))), p
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
    diff = float(lb.mean() - la.mean())
    half = _t(df, level) * se
    p = _t_p(diff / se, df)
    return Interval(estimate=centre, low=math.exp(diff - half), high=math.exp(diff + half),
                    n=min(len(la), len(lb))), p


def trend_p(values: Sequence[float]) -> float:
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
