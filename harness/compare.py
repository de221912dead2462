"""Comparing runs of one spec: per analysis, strategy and shape group, the ratio of medians and
whether the raw samples differ significantly (two-sided Mann-Whitney U, as asv compare does).

A ratio alone reads noise as a regression; a change is reported only when the test rejects and
the ratio is beyond FACTOR, which is asv's rule (`asv compare --factor`, `_stats.is_different`).
"""

from __future__ import annotations

from math import comb
from typing import Literal

import numpy as np
from pydantic import BaseModel
from scipy.stats import mannwhitneyu

from harness.results import RecordError, RunRecord, StrategyTiming

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
    analysis: str
    strategy: str
    group: str
    median_a_s: float
    median_b_s: float
    n_a: int
    n_b: int
    ratio: float  # B's median / A's median: above 1 is slower
    p_value: float | None  # None when the samples are too few for the test to ever reject
    change: Change


class Comparison(BaseModel):
    experiment: str
    spec_hash: str
    a: RunSummary
    b: RunSummary
    alpha: float
    factor: float
    rows: list[GroupComparison]
    unmatched: list[str]  # "analysis/strategy: only in A" and the like


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


def compare_samples(
    a: list[float], b: list[float], alpha: float = ALPHA, factor: float = FACTOR
) -> tuple[float | None, Change]:
    """The p value of a two-sided Mann-Whitney U test and the verdict under alpha and factor."""
    ratio = float(np.median(b) / np.median(a))
    if min_p_value(len(a), len(b)) >= alpha:
        return None, "too few samples"
    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    if p >= alpha or 1 / factor < ratio < factor:
        return p, "same"
    return p, "slower" if ratio > 1 else "faster"


def _groups(
    analysis: str, ta: StrategyTiming, tb: StrategyTiming, alpha: float, factor: float
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
        rows.append(
            GroupComparison(
                analysis=analysis, strategy=ta.strategy, group=ga.group, median_a_s=ma,
                median_b_s=mb, n_a=len(a), n_b=len(b), ratio=mb / ma, p_value=p, change=change,
            )
        )
    return rows


def compare_records(
    a: RunRecord, b: RunRecord, folders: tuple[str, str], alpha: float = ALPHA, factor: float = FACTOR
) -> Comparison:
    """B against A. Raises RecordError when the runs are of different specs."""
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
                rows.extend(_groups(an.name, ta, tb, alpha, factor))
        unmatched.extend(f"{an.name}/{s}: only in B" for s in timings_b)
    names_a = {an.name for an in a.analyses}
    unmatched.extend(f"{name}: only in B" for name in analyses_b if name not in names_a)
    return Comparison(
        experiment=a.experiment, spec_hash=a.spec_hash, a=summarise(a, folders[0]),
        b=summarise(b, folders[1]), alpha=alpha, factor=factor, rows=rows, unmatched=unmatched,
    )
