"""Which timed points of two runs pair for a comparison, what only one run has, and the one name
every compare line gives a point: `geometry dual_gram`, as the run tables write it (its label, the
strategy with its variant where its analysis has several), never `geometry/dual_gram@float32`
(walk 12: a third form beside the table's). Where two points a name cannot tell apart are both
listed, each says its precision, compilation and environment in words: `spectrum torch (bfloat16)`."""

from __future__ import annotations

from harness.plan.model import Point
from harness.record.run_record import GroupTiming, RunRecord, StrategyTiming

Pair = tuple[str, StrategyTiming, StrategyTiming, GroupTiming, GroupTiming]  # (analysis, A's and B's timing, their groups)


def point_name(analysis: str, label: str, group: str = "") -> str:
    """`spectrum torch`, `spectrum torch@bfloat16 on 3072x768r16`: a point, or its shape group, by
    its run table's label; the compare table's rows, its notes and its "not compared" lines alike."""
    return f"{analysis} {label}" + (f" on {group}" if group else "")


def _point(t: StrategyTiming, dtype: str) -> Point:
    """Its point; the plan's dtype stands for the precision of a record before precisions."""
    return t.point._replace(precision=t.precision or dtype)


def _words(point: Point) -> str:
    """`float32`, `float32, compiled, OPENBLAS_THREAD_TIMEOUT=18`: what a point is, beyond its strategy."""
    return ", ".join([point.precision, *(["compiled"] if point.compiled else []), *(f"{k}={v}" for k, v in point.env)])


def pairs(a: RunRecord, b: RunRecord) -> tuple[list[Pair], list[str]]:
    """(analysis, A's timing, B's timing, A's group, B's group) for every analysis, point and shape group
    both runs timed, and what only one did, by name: never a point paired with another precision,
    compilation or environment of its strategy."""
    names = {"A": [an.name for an in a.analyses], "B": [an.name for an in b.analyses]}
    unmatched = [f"{n}: only in {side}" for side, other in (("A", "B"), ("B", "A"))
                 for n in names[side] if n not in names[other]]
    points = {side: {(an.name, _point(t, r.plan.dtype)): t for an in r.analyses for t in an.timings}
              for side, r in (("A", a), ("B", b))}
    alike: dict[tuple[str, str], set[Point]] = {}  # the points each name stands for, over both runs
    for (analysis, point), t in [*points["A"].items(), *points["B"].items()]:
        alike.setdefault((analysis, t.label), set()).add(point)
    picks = {side: {an.name: an.strategy for an in r.analyses} for side, r in (("A", a), ("B", b))}
    skipped = {side: {(an.name, s.strategy): s.reason for an in r.analyses for s in an.skipped}
               for side, r in (("A", a), ("B", b))}
    found: list[Pair] = []
    for side, other in (("A", "B"), ("B", "A")):
        for (analysis, point), t in points[side].items():
            if analysis not in names[other]:
                continue  # said once, for the analysis
            name = point_name(analysis, t.label) + (f" ({_words(point)})" if len(alike[analysis, t.label]) > 1 else "")
            theirs = points[other].get((analysis, point))
            if theirs is None:  # a pick that changed between the runs says so: each plan timed its own
                mine, its = picks[side][analysis], picks[other][analysis]
                why = f" (the pick of {side}'s plan; {other}'s picked {its})" if t.strategy == mine != its else ""
                untimed = skipped[other].get((analysis, t.label), skipped[other].get((analysis, t.strategy)))
                # the other run has it, untimed (or not run, and why)
                unmatched.append(f"{name}: timed in {side} only ({other}: {untimed})" if untimed is not None
                                 else f"{name}: only in {side}{why}")
                continue
            groups = {g.group: g for g in theirs.groups}
            unmatched += [f"{name} on {g.group}: only in {side}" for g in t.groups if g.group not in groups]
            if side == "A":
                found += [(analysis, t, theirs, g, groups[g.group]) for g in t.groups if g.group in groups]
    return found, unmatched


def untimed(a: RunRecord, b: RunRecord) -> list[str]:
    """`geometry dual_gram`: what both runs skipped and neither timed, which has no row and no
    "only in" line, so it would leave the comparison without a word."""
    timed = {(an.name, name) for r in (a, b) for an in r.analyses for t in an.timings for name in (t.label, t.strategy)}
    in_b = {(an.name, s.strategy) for an in b.analyses for s in an.skipped} - timed
    return [point_name(an.name, s.strategy) for an in a.analyses for s in an.skipped if (an.name, s.strategy) in in_b]
