"""Intervals for timings with two levels of replication: the worker process, and the run.

Where the variation lives: numpy's SVD of one 3072x768 delta, timed in six fresh processes, had
medians of 278-441 ms, while the calls inside each process agreed within +-5%; the same matrix
copied into new buffers in one process took 282-454 ms. A process's memory layout, its address
randomisation and what its allocator did are drawn once per process, so calls, blocks and rounds
inside one process are one sample of them: never independent replicates. A run therefore times
each point in several worker processes (its slots), and the unit of replication is the process.

The model, on log seconds (timings are positive and their noise multiplicative), for a speedup's
paired log ratios: process j of run i has the mean m_ij = mu + r_i + p_ij, with a run effect r_i
(sd sigma_r: what the machine did that minute) and a process effect p_ij (sd s_p). A run's
estimate is the mean over its P_i processes. From R runs and J processes in all:

- s_p^2: the spread of the process means around their run's mean, pooled over runs (J - R
  degrees of freedom), never below MIN_SPREAD;
- sigma_r^2: one run cannot see it, and six first runs of the main job shifted together by up to
  1.4x, all three processes of a run alike, so the machine's between-run spread (`run_sd`) is
  assumed for one run; from two runs on, what they show, max(0, var(run means) - s_p^2
  mean(1 / P_i)) on R - 1 degrees of freedom, is pooled with it as a prior worth PRIOR_DOF runs,
  at every run count (_pooled): the runs' own spread dominates as they grow;
- the centre: the mean of the run means (each run counts once);
- a 95% prediction interval for the NEXT run's estimate, the mean over its P processes (P: the
  most a run here had): +- t(df) sqrt(sigma_r^2 (1 + 1/R) + s_p^2 (1/P + mean(1/P_i) / R)), which
  is s_p^2 (1/P + 1/J) when every run had P; df by Welch-Satterthwaite over the two components
  (J - R when sigma_r^2 is 0, towards PRIOR_DOF + R - 1 as the run effect dominates).

An interval for the mean alone (without the 1/P term) narrows without bound as processes are
added, and undercovers the next run (in the field check the pooled interval after run k covered
run k+1's own figure in 74% of cases). `floor` is what would be left with infinitely many more
processes and runs, t(df) sqrt(sigma_r^2 + s_p^2 / P): the machine's own spread, which more
measurement cannot narrow (bench.series.settlement).

Runs of one process each (records from before processes were sampled) fall back to the run as the
unit: from two runs, t(df) s sqrt(1 + 1/R) over the run means, s^2 and df their spread pooled with
`spread` as above; one run of one process gets
+- z sqrt(spread^2 + max(spread^2, s^2/n)), `spread` the between-run log sd the machine has shown
(DEFAULT_SPREAD until it has), so two lucky rounds never read +-1%.

Comparing two sets of runs (run_difference) asks whether their means differ: each side's mean with
its own uncertainty (over runs; for one run its processes' spread plus the machine's between-run
spread), Welch-Satterthwaite between them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from harness.base.units import significant

LEVEL = 0.95
# The between-run log sd of a speedup assumed until a machine has shown its own (three runs of an
# item): six first runs of the main job, each timing every point in three processes (idle, load
# 1.7-2.1), put the spectrum's speedups at 1,620x-2,320x, a log sd of 0.16 between runs that no
# run's own processes could see (top-3's: 0.07); one or two runs' intervals are then +-42% or more.
DEFAULT_SPREAD = 0.15
MIN_RUNS_SEEN = 3  # runs from which the spread they show is read as the machine's (run_spread)
PRIOR_DOF = MIN_RUNS_SEEN - 1  # the assumed spread counts as this many runs' degrees of freedom (_pooled)
MIN_SPREAD = 0.02  # never assumed smaller, however alike the runs or processes a machine kept
DRIFT_P = 0.01  # a trend across rounds at this significance...
DRIFT_SPAN = 0.25  # ...that moves the fitted time by this share from first round to last
Runs = Sequence[Sequence[Sequence[float]]]  # runs -> their processes -> the log values of its rounds


class Interval(BaseModel):
    """A ratio's point estimate (the geometric mean of the paired ratios) and its interval."""

    estimate: float
    low: float
    high: float
    n: int  # rounds (paired replicates) behind it
    runs: int = 1  # the runs they came from
    processes: int = 1  # the worker processes they came from: the replicates within runs
    floor: float = math.inf  # the relative half-width left with infinitely many more processes and runs
    run_share: float = 1.0  # of the variance left then, the share between runs (1: processes not told apart)

    @property
    def half_width(self) -> float:
        """The larger relative distance from the estimate to an end of the interval."""
        return max(self.high / self.estimate - 1.0, 1.0 - self.low / self.estimate)

    def resolved(self, precision: float) -> bool:
        return math.isfinite(self.half_width) and self.half_width <= precision


def quartiles(samples: Sequence[float]) -> tuple[float, float, float]:
    """The 25th, 50th and 75th percentiles of `samples` (numpy's linear interpolation): one
    definition, so that a measurement, its noise check, the record and the exports read alike."""
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    return float(q1), float(median), float(q3)


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


def process_means(runs: Runs) -> list[list[float]]:
    """Each run's process means (runs and processes without a value left out)."""
    out = [[float(np.mean(p)) for p in run if len(p)] for run in runs]
    return [m for m in out if m]


def _between(means: list[list[float]]) -> tuple[float, float]:
    """s_p^2, the spread of process means around their run's mean pooled over runs (floored at
    MIN_SPREAD^2), and its degrees of freedom J - R (0: no run had two processes)."""
    dof = sum(len(m) - 1 for m in means)
    if not dof:
        return math.nan, 0.0
    squares = sum(float(((np.asarray(m) - np.mean(m)) ** 2).sum()) for m in means)
    return max(squares / dof, MIN_SPREAD**2), float(dof)


def _pooled(seen: float, dof: float, prior: float) -> tuple[float, float]:
    """The variance runs show (`seen`, on `dof` degrees of freedom) pooled with the spread assumed
    before them (`prior`, none when 0) as a scaled-inverse-chi-square prior worth PRIOR_DOF runs,
    and the degrees of freedom of the pool. Two runs that disagreed took Student's t on one (12.7):
    a speedup of 1.67-11.62 from one run became 0.0000053-13,360,295 with a second (walk-through
    3) where the assumed spread had said x2. The prior keeps its weight at every run count: dropped
    from the third run on, the t on two degrees of freedom (4.30) made runs of 16.3x, 10.8x and 5.6x
    read 0.672-147 where two of them had read 3.66-48.1 (walk-through 6): more runs, a wider interval."""
    if prior <= 0:
        return seen, dof
    return (PRIOR_DOF * prior**2 + dof * seen) / (PRIOR_DOF + dof), PRIOR_DOF + dof


def _interval(mean: float, half: float, floor_log: float, n: int, runs: int, processes: int,
              run_share: float = 1.0) -> Interval:
    return Interval(estimate=float(np.exp(mean)), low=float(np.exp(mean - half)), high=float(np.exp(mean + half)),
                    n=n, runs=runs, processes=processes, floor=float(np.expm1(floor_log)), run_share=run_share)


def interval(runs: Runs, spread: float = DEFAULT_SPREAD, level: float = LEVEL, run_sd: float = 0.0) -> Interval:
    """exp of the prediction interval of the next run's estimate (the mean over its processes) of
    a log value, processes and runs the two levels (module docstring); `spread` is the between-run
    log sd this machine has shown, applied when there is one process only; `run_sd` the run effect
    assumed: known for one run, the prior _pooled with what two or more show."""
    means = process_means(runs)
    n = sum(len(p) for run in runs for p in run)
    if not means:
        return Interval(estimate=math.nan, low=0.0, high=math.inf, n=0, runs=0, processes=0)
    sp2, dof = _between(means)
    if not dof:  # one process a run: the run is the unit
        return _per_run([[v for p in run for v in p] for run in runs if any(len(p) for p in run)], spread, level)
    r, j, p = len(means), sum(len(m) for m in means), max(len(m) for m in means)
    run_means = [float(np.mean(m)) for m in means]
    c = float(np.mean([1 / len(m) for m in means]))
    seen = max(0.0, float(np.var(run_means, ddof=1)) - sp2 * c) if r >= 2 else 0.0
    known = r == 1  # no spread of its own: the assumed one is all there is
    sr2, run_dof = (run_sd**2, 0.0) if known else _pooled(seen, r - 1.0, run_sd)
    a, b = sr2 * (1 + 1 / r), sp2 * (1 / p + c / r)
    df = (a + b) ** 2 / ((a**2 / run_dof if a and not known else 0.0) + b**2 / dof)
    q = quantile(df, level)
    # run_share: of the run effect these runs showed, not of one assumed (series.settlement)
    return _interval(float(np.mean(run_means)), q * math.sqrt(a + b), q * math.sqrt(sr2 + sp2 / p), n, r, j,
                     seen / (seen + sp2 / p))


def _per_run(runs: Sequence[Sequence[float]], spread: float, level: float) -> Interval:
    """Runs of one process each: the run is the unit (module docstring)."""
    n = sum(len(r) for r in runs)
    if len(runs) >= 2:
        means = [float(np.mean(r)) for r in runs]
        s2, dof = _pooled(float(np.var(means, ddof=1)), len(runs) - 1.0, spread)
        s, q = math.sqrt(s2), quantile(dof, level)
        return _interval(float(np.mean(means)), q * s * math.sqrt(1 + 1 / len(runs)), q * s, n, len(runs), len(runs))
    x = np.asarray(runs[0], dtype=float)
    within = float(x.var(ddof=1)) / len(x) if len(x) >= 2 else 0.0
    half = _t_half(spread**2 + max(spread**2, within), math.inf if within <= spread**2 else len(x) - 1.0, level)
    return _interval(float(x.mean()), half, quantile(math.inf, level) * spread, n, 1, 1)


def run_interval(runs: Sequence[Sequence[float]], spread: float = DEFAULT_SPREAD, level: float = LEVEL) -> Interval:
    """`interval` of runs of one process each (each element one run's log values)."""
    return interval([[r] for r in runs], spread, level)


def log_mean(runs: Runs) -> float:
    """A side's mean log value: over its runs, each its processes' mean (nan with no value): what
    run_difference compares, so exp of B's over exp of A's is its estimate."""
    means = process_means(runs)
    return float(np.mean([np.mean(m) for m in means])) if means else math.nan


def _side(runs: Runs, spread: float) -> tuple[float, float, float]:
    """The mean of a side's log values over its runs, the variance of that mean and its degrees
    of freedom (inf: known); the variance is inf when it cannot be told."""
    means = process_means(runs)
    if not means:
        return math.nan, math.inf, 1.0
    if len(means) >= 2:  # the runs' spread pooled with the machine's, as a speedup's is (_pooled): alone,
        # two runs took t on one degree of freedom and a side of 6 rounds read `x200,866 either way` (walk 11)
        run_means = [float(np.mean(m)) for m in means]
        seen, dof = _pooled(float(np.var(run_means, ddof=1)), len(means) - 1.0, spread)
        return log_mean(runs), seen / len(means), dof
    sp2, dof = _between(means)
    if dof:  # one run of several processes: theirs and the machine's between-run spread
        within = sp2 / len(means[0])
    else:  # one process: its rounds' noise, at least as much as another run's
        x = np.asarray([v for run in runs for p in run for v in p], dtype=float)
        if len(x) < 2:
            return log_mean(runs), 2 * spread**2, math.inf
        within, dof = float(x.var(ddof=1)) / len(x), len(x) - 1.0
    var = within + spread**2
    df = var**2 / (within**2 / dof) if within > 0 else math.inf
    return log_mean(runs), var, df


def run_difference(a: Runs, b: Runs, spread: float = DEFAULT_SPREAD,
                   level: float = LEVEL) -> tuple[Interval, float | None]:
    """B over A from two sets of runs of log values (independent: no run on both sides; runs ->
    processes -> values): whether their means differ, each side's mean with its own uncertainty
    (over runs; for one run its processes' spread, or its rounds', and the machine's between-run
    spread), Welch-Satterthwaite between them. Returns the interval and the two-sided p value of
    "no change" (None when a side has no round)."""
    ma, va, da = _side(a, spread)
    mb, vb, db = _side(b, spread)
    if math.isnan(ma) or math.isnan(mb):
        return Interval(estimate=math.nan, low=0.0, high=math.inf, n=0, runs=0), None
    runs = min(len(process_means(a)), len(process_means(b)))
    n = min(sum(len(p) for r in a for p in r), sum(len(p) for r in b for p in r))
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


def run_spread(runs: Runs) -> float | None:
    """The between-run log sd that runs of an item showed: the sd of their estimates (each the
    mean over its processes), from MIN_RUNS_SEEN runs on (two give one degree of freedom); None before."""
    means = [float(np.mean(m)) for m in process_means(runs)]
    return float(np.std(means, ddof=1)) if len(means) >= MIN_RUNS_SEEN else None


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
    factor = math.exp(abs(slope) * (len(x) - 1))  # last over first, or first over last
    if trend_p(x) < DRIFT_P and factor - 1 > DRIFT_SPAN:
        # what the times did, said plainly (walk 15: "12 rounds grew 2.1x faster" left it open); 8.2x, not 717%
        share = factor - 1 if slope > 0 else 1 - 1 / factor
        size = f"{significant(factor, 2)}x" if factor > 2 else f"{100 * share:.0f}%"
        return f"drifting: round times {'rose' if slope > 0 else 'fell'} {size} from first to last of {len(x)} rounds"
    return None
