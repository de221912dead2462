"""Comparing runs of one spec: per analysis, strategy and shape group, the ratio of medians and
whether the raw samples differ significantly (two-sided Mann-Whitney U, as asv compare does).

A ratio alone reads noise as a regression; a change is reported only when the test rejects and
the ratio is beyond FACTOR, which is asv's rule (`asv compare --factor`, `_stats.is_different`).

As a CI gate (`harness compare --fail-on-regression`) the same rule decides, with two exemptions a
gate must not trip on: measurements flagged unstable (the machine was busy, the samples disagree),
which are reported instead, and groups with too few samples for the test ever to reject, which are
counted so that a gate that cannot fire says so.
"""

from __future__ import annotations

from math import comb
from typing import Literal

import numpy as np
from pydantic import BaseModel

from harness.bench.measure import Measurement
from harness.record.run_record import RecordError, RunRecord, StrategyTiming

ALPHA = 0.01  # two-sided; 5 samples against 5 can already reach p = 0.008
FACTOR = 1.1  # asv's default: smaller changes are not reported even when significant

Change = Literal["slower", "faster", "same", "too few samples"]


class RunSummary(BaseModel):
    """What identifies a run in a comparison: where it ran, what, when."""

    folder: str
    machine: str
    harness_version: str
    started: str
    command: str


class GroupComparison(BaseModel):
    """One shape group of one strategy, B against A, per matrix."""

    analysis: str
    strategy: str
    group: str
    median_a_s: float
    median_b_s: float
    n_a: int
    n_b: int
    ratio: float  # B's median / A's median: above 1 is slower
    # the samples' spread as a ratio: q1(B)/q3(A) .. q3(B)/q1(A), both interquartile ranges combined
    ratio_low: float
    ratio_high: float
    p_value: float | None  # None when the samples are too few for the test to ever reject
    change: Change
    unstable: list[str]  # "A: reason", "B: reason": why either measurement is unreliable
    gated: bool  # the gate may fail on this row: both sides stable, enough samples for the test
    regression: bool = False  # a gate was set and this row fails it

    @property
    def label(self) -> str:
        return f"{self.analysis}/{self.strategy} on {self.group}"

    def describe(self) -> str:
        """`analysis/strategy on group: B/A 1.42x, p=0.003`."""
        p = "" if self.p_value is None else f", p={self.p_value:.2g}"
        return f"{self.label}: B/A {self.ratio:.3g}x{p}"


class Comparison(BaseModel):
    experiment: str
    spec_hash: str
    a: RunSummary
    b: RunSummary
    alpha: float
    factor: float
    rows: list[GroupComparison]
    unmatched: list[str]  # "analysis/strategy: only in A" and the like
    gate: float | None = None  # --fail-on-regression's ratio (then equal to factor); None: no gate
    regressions: list[str] = []  # GroupComparison.describe() of every row that fails the gate
    passed: bool = True  # no regression (always true without a gate)

    @property
    def unstable(self) -> list[str]:
        """`label (B/A 1.42x, slower): B: reason; A: reason` per row measured unreliably."""
        return [f"{r.label} (B/A {r.ratio:.3g}x, {r.change}): {'; '.join(r.unstable)}"
                for r in self.rows if r.unstable]

    @property
    def too_few(self) -> list[GroupComparison]:
        """Rows the test cannot judge at alpha, whatever their samples say."""
        return [r for r in self.rows if r.change == "too few samples"]


class CompareOutput(BaseModel):
    """What `harness compare --json` prints: every comparison and the gate's overall verdict."""

    gate: float | None
    passed: bool
    comparisons: list[Comparison]


def summarise(record: RunRecord, folder: str) -> RunSummary:
    return RunSummary(
        folder=folder,
        machine=record.machine.describe(),
        harness_version=record.harness_version,
        started=record.started,
        command=record.command,
    )


def min_p_value(n_a: int, n_b: int) -> float:
    """The smallest two-sided p the exact test can give for these sample sizes."""
    return 2 / comb(n_a + n_b, min(n_a, n_b))


def min_samples(alpha: float = ALPHA) -> int:
    """The fewest samples a side with which the test can reject at alpha (5 at 0.01)."""
    n = 1
    while min_p_value(n, n) >= alpha:
        n += 1
    return n


def compare_samples(
    a: list[float], b: list[float], alpha: float = ALPHA, factor: float = FACTOR
) -> tuple[float | None, Change]:
    """The p value of a two-sided Mann-Whitney U test and the verdict under alpha and factor."""
    ratio = float(np.median(b) / np.median(a))
    if min_p_value(len(a), len(b)) >= alpha:
        return None, "too few samples"
    from scipy.stats import mannwhitneyu  # scipy.stats takes a while to import: only when comparing

    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    if p >= alpha or 1 / factor < ratio < factor:
        return p, "same"
    return p, "slower" if ratio > 1 else "faster"


def _reasons(side: str, m: Measurement) -> list[str]:
    if not m.unstable:
        return []
    return [f"{side}: {r}" for r in m.reasons] or [f"{side}: flagged unstable"]


def _groups(
    analysis: str, ta: StrategyTiming, tb: StrategyTiming, alpha: float, factor: float, gate: bool
) -> list[GroupComparison]:
    by_label = {g.group: g for g in tb.groups}
    rows = []
    for ga in ta.groups:
        gb = by_label.get(ga.group)
        if gb is None:
            continue
        # compare per matrix: the two runs may have sampled different numbers of matrices
        a = [s / ga.sampled for s in ga.measurement.samples_s]
        b = [s / gb.sampled for s in gb.measurement.samples_s]
        p, change = compare_samples(a, b, alpha, factor)
        ma, mb = ga.measurement.median_s / ga.sampled, gb.measurement.median_s / gb.sampled
        (q1a, q3a), (q1b, q3b) = np.percentile(a, [25, 75]), np.percentile(b, [25, 75])
        unstable = _reasons("A", ga.measurement) + _reasons("B", gb.measurement)
        gated = not unstable and change != "too few samples"
        rows.append(
            GroupComparison(
                analysis=analysis, strategy=ta.strategy, group=ga.group, median_a_s=ma,
                median_b_s=mb, n_a=len(a), n_b=len(b), ratio=mb / ma, ratio_low=float(q1b / q3a),
                ratio_high=float(q3b / q1a), p_value=p, change=change, unstable=unstable, gated=gated,
                regression=gate and gated and change == "slower",
            )
        )
    return rows


def compare_records(
    a: RunRecord, b: RunRecord, folders: tuple[str, str], alpha: float = ALPHA, factor: float = FACTOR,
    gate: bool = False,
) -> Comparison:
    """B against A; with `gate`, every stable row slower beyond `factor` with p < alpha is a
    regression and the comparison fails. Raises RecordError when the runs are of different specs."""
    if a.spec_hash != b.spec_hash:
        raise RecordError(
            f"{folders[1]}: spec hash {b.spec_hash[:12]} differs from {folders[0]}'s "
            f"{a.spec_hash[:12]}; compare only runs of the same spec"
        )
    rows: list[GroupComparison] = []
    unmatched: list[str] = []
    analyses_b = {an.name: an for an in b.analyses}
    for an in a.analyses:
        other = analyses_b.get(an.name)
        if other is None:
            unmatched.append(f"{an.name}: only in A")
            continue
        timings_b = {t.strategy: t for t in other.timings}
        for ta in an.timings:
            tb = timings_b.pop(ta.strategy, None)
            if tb is None:
                unmatched.append(f"{an.name}/{ta.strategy}: only in A")
            else:
                rows.extend(_groups(an.name, ta, tb, alpha, factor, gate))
        unmatched.extend(f"{an.name}/{s}: only in B" for s in timings_b)
    names_a = {an.name for an in a.analyses}
    unmatched.extend(f"{name}: only in B" for name in analyses_b if name not in names_a)
    regressions = [r.describe() for r in rows if r.regression]
    return Comparison(
        experiment=a.experiment, spec_hash=a.spec_hash, a=summarise(a, folders[0]),
        b=summarise(b, folders[1]), alpha=alpha, factor=factor, rows=rows, unmatched=unmatched,
        gate=factor if gate else None, regressions=regressions, passed=not regressions,
    )
