"""A point's rounds as the record keeps them: per group a GroupTiming (its rounds summarised, each
round's id and whether the machine was busy), per point a StrategyTiming scaled to the workload,
with its precision, compilation and environment; the timings' speedups over their baseline; and a
point's rounds as the wisdom learns them (an Observation)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.bench.conditions import Conditions
from harness.bench.measure import summarised
from harness.bench.series import Line, Round, by_run, run_of, speedup
from harness.bench.statistics import run_spread
from harness.base.units import now
from harness.machine.wisdom import Observation
from harness.plan.model import Step, Timed
from harness.record.run_record import GroupTiming, StrategyTiming
from harness.run.items import Timeline, busy_of
from harness.run.subjects import Subject


def group_timing(s: Subject, line: Timeline, conditions: Conditions | None, stored: Sequence[Round]) -> GroupTiming:
    """A subject's rounds, earlier runs' first; the conditions are this run's, when it timed any,
    and the earlier runs' rounds bring the reasons they were busy; the between-run spread of its
    seconds, as the machine's `stored` rounds of its item show it; when each round was timed."""
    rounds = line.rounds
    measurement = summarised([r.seconds for r in rounds], s.allocation.warmup, conditions if line.new else None,
                             line.threads, [r.busy for r in line.pooled],  # the worker's pools, not this process's
                             per=s.allocation.matrices)  # a bimodal reason's clusters per matrix, as the table's times
    return GroupTiming(group=s.group, sampled=s.allocation.matrices, total=s.total, measurement=measurement,
                       flops=s.flops, bytes=s.bytes, rounds=[r.round for r in rounds], pooled=len(line.pooled),
                       busy=[r.round for r in rounds if r.busy], calls=line.calls, timed=[r.when or "" for r in rounds],
                       spread=run_spread(by_run({r.round: math.log(r.seconds) for r in stored})))


def strategy_timing(timed: Timed, groups: Sequence[GroupTiming], notes: dict[str, Any], dtype: str,
                    lines: Sequence[Timeline]) -> StrategyTiming:
    """Per-matrix medians scaled to every matrix of the workload; the point's precision,
    compilation (what compiling cost and produced, from its worker) and environment; whether
    every round of it is reused from earlier runs (`lines`: its groups' rounds), and from when."""
    scale = [g.total / g.sampled for g in groups]
    cached = not any(line.new for line in lines)
    when = [r.when for line in lines for r in line.rounds if r.when] if cached else []
    return StrategyTiming(
        strategy=timed.strategy, role=timed.role, device=timed.device, groups=list(groups),
        estimate_total_s=sum(g.measurement.median_s * s for g, s in zip(groups, scale)),
        iqr_total_s=sum(g.measurement.iqr_s * s for g, s in zip(groups, scale)),
        extrapolated=any(g.sampled < g.total for g in groups),
        precision=timed.precision or dtype, compiled=timed.compiled, variant=timed.variant, env=dict(timed.env),
        compile_s=notes.get("compile_s"), compile_note=notes.get("compile_note"), cached=cached, cut=timed.cut,
        reused_from=max(when, default=None),
    )


def pair_speedups(timings: Sequence[StrategyTiming], line: dict[str, Line], baseline: str | None,
                  spreads: dict[str, float | None], subjects: dict[str, list[Subject]],
                  lines: dict[int, Timeline], target: float) -> Counter[str]:
    """Each timing's speedup over the baseline, with the rounds and runs behind it, and the
    interval its earlier runs' rounds gave alone (whether this run's narrowed it or widened it);
    how many came out resolved and unresolved."""
    counts: Counter[str] = Counter()
    for t in timings:
        pooled = {r.round for s in subjects[t.label] for r in lines[id(s)].pooled}
        busy = busy_of(subjects[t.label], lines)
        own = line[t.label]
        if t.label == baseline or baseline is None or baseline not in line:
            t.speedup = 1.0 if t.label == baseline else None
            t.rounds, t.rounds_pooled = len(own), sum(r in pooled for r in own)
            t.runs = len({run_of(r) for r in own})
            continue
        found = speedup(line[baseline], own, spread=spreads.get(t.label), pooled=pooled, busy=busy)
        t.store(found, target, baseline)
        mine = {r.round for s in subjects[t.label] + subjects[baseline] for r in lines[id(s)].new}
        before = speedup(*({r: x for r, x in side.items() if r not in mine} for side in (line[baseline], own)),
                         spread=spreads.get(t.label), pooled=pooled, busy=busy)
        t.earlier_ci = (before.low, before.high) if before is not None and math.isfinite(before.high) else None
        counts["unresolved" if t.unresolved else "resolved"] += 1
    return counts


def observation(step: Step, s: Subject, kept: Sequence[Round], calls: int, threads: int, source: str,
                busy: float | None = None) -> Observation:
    """This run's rounds of a subject as one observation for the planner's wisdom: its quiet
    ones, or (`busy`: the share of the CPUs other processes took) all of a busy run's; `threads`:
    the timings', `source`: who measured (the experiment, or "calibrate")."""
    return Observation(
        strategy=s.timed.strategy, op=step.op, k=step.k, shape=s.item.shape,
        rank=s.item.rank if s.costs_by_rank else None,  # a rank-blind strategy: one figure per shape
        dtype=str(s.item.dtype), device=s.timed.device, threads=threads, width=s.item.width,
        seconds=float(np.median([r.seconds for r in kept])) / s.allocation.matrices, flops=s.flops,
        samples=calls, when=now(), source=source, precision=s.arithmetic, compiled=s.timed.compiled,
        busy=busy)
