"""How cost grows with the size of the work: pure functions over (size, seconds) points.

- `power_law`: t = c n^k by weighted least squares in log-log space, each point weighted by the
  inverse variance of its log time (from its interval's half-width), with a 95% interval that holds
  the NEXT run's exponent, as a speedup's holds the next run's estimate (bench.statistics): the
  residuals' scale on n - 2 degrees of freedom counted for this run and the next (sigma^2 (1 + 1)),
  never narrower than the points' own intervals make it (each already one for the next run: the
  variance 1 / sum w dx^2). A confidence interval for the exponent alone read 1.33 to 2.21, then
  1.22 to 1.98 for one sweep run twice, and the second left out the cost model's 2.10 (walk 17).
- `class_fits`: Google Benchmark's `Complexity(benchmark::oAuto)`: for each class f in
  1, log n, n, n log n, n^2, n^3 the least-squares coefficient of t = c f(n) and the RMS of its
  residuals, best first (benchmark's complexity.cc); `classes_within` those a power law's interval holds;
  `rms_intervals` each class's RMS with an interval from the points' own intervals, redrawn.
- `crossover`: where two fitted power laws meet, with an interval from the fits' parameters drawn
  from their normal approximation (independent fits: each curve's own points).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.bench.statistics import LEVEL, quantile

DRAWS = 4000  # draws behind a crossover's and an RMS's interval: their ends move < 1% between seeds


class PowerLaw(BaseModel):
    """log t = intercept + exponent (log n - centre): the intercept at the points' weighted mean
    log size, where it is uncorrelated with the exponent."""

    model_config = ConfigDict(ser_json_inf_nan="constants")  # an unbounded interval reads back as one

    exponent: float
    low: float  # the interval of the next run's exponent (-inf, inf with two points: no degree of freedom left)
    high: float
    intercept: float
    centre: float
    intercept_var: float
    exponent_var: float  # this fit's own (its crossings are drawn from it)
    points: int

    @property
    def coefficient(self) -> float:
        """c of t = c n^k."""
        return math.exp(self.intercept - self.exponent * self.centre)

    def at(self, n: float) -> float:
        """The fitted seconds at size n."""
        return math.exp(self.intercept + self.exponent * (math.log(n) - self.centre))

    def covers(self, exponent: float) -> bool:
        return self.low <= exponent <= self.high


def log_variance(estimate: float, low: float, high: float, level: float = LEVEL) -> float:
    """The variance of log t that an interval [low, high] around `estimate` states: its wider
    side in log space over the normal quantile, squared. inf for an interval without ends."""
    if not (0 < low <= estimate <= high) or not math.isfinite(high):
        return math.inf
    half = max(math.log(high / estimate), math.log(estimate / low))
    return (half / quantile(math.inf, level)) ** 2


def fit_weights(x: np.ndarray, variances: Sequence[float] | None) -> np.ndarray:
    """Each point's weight in a log-log fit at log sizes `x`: 1 / its variance; all alike where
    fewer than two distinct sizes have a known one."""
    return _weights(x, variances)[0]


def _weights(x: np.ndarray, variances: Sequence[float] | None) -> tuple[np.ndarray, bool]:
    """fit_weights, and whether they are the points' own (1 / variance), not all alike."""
    var = np.full(len(x), 1.0) if variances is None else np.asarray(variances, float)
    w = np.where(np.isfinite(var) & (var > 0), 1.0 / np.where(var > 0, var, 1.0), 0.0)
    if np.count_nonzero(w) < 2 or len(set(x[w > 0].tolist())) < 2:
        return np.ones(len(x)), False
    return w, variances is not None


def power_law(sizes: Sequence[float], seconds: Sequence[float], variances: Sequence[float] | None = None,
              level: float = LEVEL) -> PowerLaw:
    """The weighted log-log fit of t = c n^k over at least two points of distinct sizes; a point
    of infinite (unknown) variance weighs nothing unless every point's is unknown or zero, when all
    weigh alike."""
    x, y = np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float))
    if len(x) < 2 or len(set(x.tolist())) < 2:
        raise ValueError(f"a power law needs two distinct sizes or more; got {list(sizes)}")
    w, stated = _weights(x, variances)
    centre = float(np.sum(w * x) / np.sum(w))
    dx = x - centre
    sxx = float(np.sum(w * dx**2))
    intercept = float(np.sum(w * y) / np.sum(w))
    exponent = float(np.sum(w * dx * (y - intercept)) / sxx)
    dof = int(np.count_nonzero(w)) - 2
    if dof < 1:
        return PowerLaw(exponent=exponent, low=-math.inf, high=math.inf, intercept=intercept, centre=centre,
                        intercept_var=math.inf, exponent_var=math.inf, points=len(x))
    residual = y - intercept - exponent * dx
    scale = float(np.sum(w * residual**2)) / dof
    # the next run's exponent: this run's error and the next's (the residuals' scale twice, on their
    # degrees of freedom), or the points' own intervals for the next run where they say more (normal)
    own = stated and 1.0 > 2 * scale
    half = quantile(math.inf if own else dof, level) * math.sqrt((1.0 if own else 2 * scale) / sxx)
    return PowerLaw(exponent=exponent, low=exponent - half, high=exponent + half, intercept=intercept,
                    centre=centre, intercept_var=scale / float(np.sum(w)), exponent_var=scale / sxx, points=len(x))


COMPLEXITY_CLASSES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "1": lambda n: np.ones_like(n),
    "log n": np.log2,
    "n": lambda n: n,
    "n log n": lambda n: n * np.log2(n),
    "n^2": lambda n: n**2,
    "n^3": lambda n: n**3,
}


class ClassFit(BaseModel):
    """One complexity class fitted as the power law is: t = coefficient f(n); the weighted RMS of
    its log residuals (about a relative error: 0.04 is 4%); and the class's own exponent over the
    sizes, by the same fit of f(n) (n log n over 16..256 grows as n^1.2)."""

    name: str
    coefficient: float
    rms: float
    exponent: float


def _rms(y: np.ndarray, log_g: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The weighted RMS of log times `y` (one row per draw) about c f(n), c fitted to each row."""
    residual = y - log_g
    log_c = residual @ w / np.sum(w)
    return np.sqrt(((residual - log_c[..., None]) ** 2) @ w / np.sum(w))


def class_fits(sizes: Sequence[float], seconds: Sequence[float],
               variances: Sequence[float] | None = None) -> list[ClassFit]:
    """Every class positive at every size (log n is 0 at n = 1: no log to fit), best first."""
    n, x, y = np.asarray(sizes, float), np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float))
    w = fit_weights(x, variances)
    fits = []
    for name, f in COMPLEXITY_CLASSES.items():
        g = f(n)
        if np.any(g <= 0):
            continue
        log_c = float(np.sum(w * (y - np.log(g))) / np.sum(w))
        fits.append(ClassFit(name=name, coefficient=math.exp(log_c), rms=float(_rms(y, np.log(g), w)),
                             exponent=power_law(sizes, g.tolist(), variances).exponent))
    return sorted(fits, key=lambda fit: fit.rms)


def rms_intervals(sizes: Sequence[float], seconds: Sequence[float], variances: Sequence[float] | None,
                  fits: Sequence[ClassFit], level: float = LEVEL, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Each class's RMS with an interval: every point's log time redrawn from its own interval (its
    variance), the class refitted to each draw. A draw's noise adds to the RMS it measures, so the draws'
    squares are moved to centre on the RMS found (their spread kept), and the interval holds that RMS.
    Points of unknown variance are not redrawn: where none has one, the interval is the RMS alone. (A hard
    25% cut on the RMS alone read `no class fits` at 25.3%, then `class constant` at 23.1%, for one sweep
    run twice: walk 16.)"""
    n, x, y = np.asarray(sizes, float), np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float))
    w = fit_weights(x, variances)
    var = np.full(len(x), 0.0) if variances is None else np.asarray(variances, float)
    sd = np.sqrt(np.where(np.isfinite(var) & (var > 0), var, 0.0))
    drawn = y + np.random.default_rng(seed).normal(0.0, 1.0, (DRAWS, len(x))) * sd
    tail = (1 - level) / 2
    found = {}
    for fit in fits:
        squares = _rms(drawn, np.log(COMPLEXITY_CLASSES[fit.name](n)), w) ** 2
        moved = np.sqrt(np.clip(squares - squares.mean() + fit.rms**2, 0.0, None))
        low, high = np.quantile(moved, [tail, 1 - tail])
        found[fit.name] = (min(float(low), fit.rms), max(float(high), fit.rms))
    return found


def classes_within(sizes: Sequence[float], seconds: Sequence[float], variances: Sequence[float] | None,
                   power: PowerLaw) -> list[ClassFit]:
    """The classes whose exponent `power`'s interval covers, best (lowest RMS) first: the data tell
    apart only classes on either side of its interval, not those within it by their RMS (two within
    it swapped places between two runs at RMS 36%: walk 13)."""
    return [fit for fit in class_fits(sizes, seconds, variances) if power.covers(fit.exponent)]


class Crossover(BaseModel):
    """The size where curve `a` and curve `b` cost the same, and its interval (0 or inf at an end
    the fits cannot bound: their exponents' difference is not resolved). `a_faster_above`: beyond
    it, `a` is the cheaper one."""

    model_config = ConfigDict(ser_json_inf_nan="constants")

    size: float
    low: float
    high: float
    a_faster_above: bool


def crossover(a: PowerLaw, b: PowerLaw, level: float = LEVEL, seed: int = 0) -> Crossover | None:
    """Where a.at(n) == b.at(n); None for parallel fits (equal exponents never meet)."""
    slope = a.exponent - b.exponent
    if slope == 0:
        return None
    offset = (b.intercept - b.exponent * b.centre) - (a.intercept - a.exponent * a.centre)
    size = math.exp(offset / slope)
    if not all(math.isfinite(v) for v in (a.intercept_var, a.exponent_var, b.intercept_var, b.exponent_var)):
        return Crossover(size=size, low=0.0, high=math.inf, a_faster_above=slope < 0)
    rng = np.random.default_rng(seed)

    def draws(fit: PowerLaw) -> tuple[np.ndarray, np.ndarray]:
        k = rng.normal(fit.exponent, math.sqrt(fit.exponent_var), DRAWS)
        c = rng.normal(fit.intercept, math.sqrt(fit.intercept_var), DRAWS)
        return k, c - k * fit.centre

    (ka, ca), (kb, cb) = draws(a), draws(b)
    dk = ka - kb
    # a draw whose exponents differ the other way never meets on this side: it counts as meeting
    # beyond every finite size, on the side its near-parallel neighbours run off to
    beyond = math.copysign(math.inf, offset / slope)
    x = np.where(np.sign(dk) == np.sign(slope), (cb - ca) / np.where(dk == 0, 1.0, dk), beyond)
    tail = (1 - level) / 2
    low, high = np.quantile(x, [tail, 1 - tail], method="inverted_cdf")
    return Crossover(size=size, low=float(np.exp(low)), high=float(np.exp(high)), a_faster_above=slope < 0)
