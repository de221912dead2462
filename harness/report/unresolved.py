"""Why a run's speedups are unresolved, and whether another run as is would help, speedup by
speedup: a re-run adds a run, which narrows an interval on a steady machine; an interval this run's
rounds widened, or one that runs narrow too slowly, says the machine's load dominates instead."""

from __future__ import annotations

import math
from typing import Literal

from harness.base.units import format_share, plural
from harness.record.run_record import RunRecord, StrategyTiming
from harness.record.verdict import readable_interval
from harness.report.labels import UNRESOLVED_MARK

STALLED_RUNS = 3  # runs pooled from which a speedup's interval shows how fast runs narrow it
STALLED_MORE = 10  # more runs than this to reach the target: re-running as is does not help
WIDENED_BY = 1.1  # an interval's log width over its earlier runs' alone beyond which this run widened it
WIDENED = f"widened over {WIDENED_BY - 1:.0%} with this run's rounds"  # the bound said (walk 20: one 7% wider was told to re-run as is)

# What another run as is does for an unresolved speedup, by its own interval: settle it within
# STALLED_MORE runs, add a run before its rate can be told, or nothing (widened, or too slow).
Outlook = Literal["settles", "early", "widened", "slow"]
HELPS: tuple[Outlook, ...] = ("settles", "early")
STEADY = "on a steady machine intervals narrow with runs, not with one run's rounds"
QUIETER = ("re-run on a quieter machine (`harness system` names what is busy) or with more time for rounds "
           "(--budget 30s) rather than as is")


def more_runs(t: StrategyTiming, target: float) -> float | None:
    """The runs beyond those pooled that a speedup's interval would need to narrow to `target`,
    at the rate runs narrow it (its half-width ~ 1/sqrt(runs)); None under STALLED_RUNS runs or
    without an interval (no rate to go by)."""
    if t.runs < STALLED_RUNS or t.speedup is None or t.speedup_ci is None:
        return None
    low, high = t.speedup_ci
    half = max(high / t.speedup - 1.0, 1.0 - low / t.speedup)
    return t.runs * (half / target) ** 2 - t.runs


def widened(t: StrategyTiming) -> bool:
    """This run's rounds widened the interval earlier runs' gave alone, its ends WIDENED_BY further
    apart (as a log ratio): runs under different loads disagree, and more of them need not narrow
    it (more_runs assumes they do). A hair wider is a run's noise, not a disagreement: 1.16-2.79
    becoming 1.15-2.87 told a second run of the main job to stop re-running as is."""
    if t.earlier_ci is None or t.speedup_ci is None:
        return False
    return math.log(t.speedup_ci[1] / t.speedup_ci[0]) > WIDENED_BY * math.log(t.earlier_ci[1] / t.earlier_ci[0])


def outlook(t: StrategyTiming, target: float | None) -> Outlook:
    """One speedup's own outlook, from its own interval alone, so that what the line says of it
    follows its rate and not how many others stalled (walk 12: one run said of them all "rather
    than as is", the next, one run more pooled, "a re-run adds a run": all or nothing)."""
    if widened(t):
        return "widened"
    more = None if target is None else more_runs(t, target)
    return "early" if more is None else "slow" if more > STALLED_MORE else "settles"


def runs_to_settle(t: StrategyTiming, target: float) -> int:
    """The whole runs a speedup that settles needs: at least one (a re-run is one)."""
    return max(1, math.ceil(more_runs(t, target) or 0.0))


def widening(t: StrategyTiming) -> str:
    """`0.77-48.69 before this run, 0.46-185 with it`; ends too far apart to read as the tables say
    them (`1.67-11.62 before this run, too wide with it`, not `0.0000053-13,360,295`). No `;`: it
    sits in a parenthesis of the line (walk 23: names, advice and intervals nested in one)."""
    assert t.earlier_ci is not None and t.speedup_ci is not None  # widened
    return f"{readable_interval(t.earlier_ci)} before this run, {readable_interval(t.speedup_ci)} with it"


WHY_VERBOSE, WHY_BELOW = "--verbose says why each", "why each, below"  # the terminal's pointer; a report's, which lists them


def unresolved_line(record: RunRecord, unresolved: list[tuple[str, StrategyTiming]], pointer: str = WHY_VERBOSE) -> str:
    """What to do about unresolved speedups, one sentence per outlook with its count: those a re-run
    helps first (it settles them in ~N runs, or adds a run before their rate can be told), then
    those it does not (widened with this run's rounds, or narrowing too slowly after STALLED_RUNS
    runs), for which the quieter machine is advised; so no speedup is told both "re-run as is" and
    "not as is", and a speedup's advice changes only when its own interval does (issue 48: "a
    re-run adds a run" after five runs of ±120%; walk 12: the advice flipped between two runs). It ends
    with `pointer` to why each is unresolved: a report cannot take --verbose (walk 14), and lists them.
    Short sentences, names after a colon, figures in one parenthesis at most: walk 23 could not parse
    names, advice and before/after intervals nested in one parenthesis."""
    b = record.bench
    precision = b.precision if b is not None else None
    target = f"±{format_share(precision)}" if precision is not None else "the target asked for"
    head = (f"{plural(len(unresolved), 'speedup')} unresolved ({UNRESOLVED_MARK}): "
            f"{'its interval is' if len(unresolved) == 1 else 'their intervals are'} wider than {target}")
    by: dict[Outlook, list[tuple[str, StrategyTiming]]] = {"settles": [], "early": [], "widened": [], "slow": []}
    for name, t in unresolved:
        by[outlook(t, precision)].append((name, t))
    kinds = [kind for kind, of in by.items() if of]
    who = {kind: _who(len(by[kind]), len(unresolved), kind == kinds[0], kind == kinds[-1]) for kind in kinds}
    named = {kind: _names(by[kind]) * (len(by[kind]) < len(unresolved)) for kind in kinds}  # a part names its own
    sentences = [head] + [_helps_sentence(kind, who[kind], by[kind], named[kind], precision) for kind in kinds if kind in HELPS]
    not_helps = ([_widened_sentence(by["widened"], who["widened"])] if by["widened"] else []) + (
        [_stalled_sentence(by["slow"], who["slow"], named["slow"], precision)] if by["slow"] and precision is not None else [])
    if not_helps:
        those = ("" if len(sentences) == 1 else "for that one, " if len(by["widened"]) + len(by["slow"]) == 1
                 else "for those, ")
        sentences += [*not_helps, f"so the machine's load dominates: {those}{QUIETER}"]
    return " ".join(f"{s[:1].upper()}{s[1:]}." for s in [*sentences, pointer])


def quieter_advised(record: RunRecord) -> bool:
    """Whether unresolved_line advises the quieter machine (QUIETER) for some speedup: the unstable
    measurements' advice under it then points back to it, not say it again (walk 15: the HTML's
    headline said it twice, one line apart)."""
    precision = record.bench.precision if record.bench is not None else None
    return any(t.unresolved and outlook(t, precision) in ("widened", "slow") for a in record.analyses for t in a.timings)


def outlook_note(t: StrategyTiming, target: float | None) -> str:
    """What another run as is does for one speedup, said after why it is unresolved (--verbose),
    in the words of the line that counts them."""
    kind = outlook(t, target)
    if kind == "widened":
        return f"; {WIDENED}, {widening(t)}: runs under different loads disagree"
    if kind == "early" or target is None:
        return ""
    if kind == "slow":
        return f"; it narrows too slowly with runs to help (it would need ~{more_runs(t, target) or 0.0:,.0f} more runs)"
    n = runs_to_settle(t, target)
    return f"; re-running as is should settle it (~{plural(n, 'more run')})"


def _who(k: int, of: int, first: bool, last: bool) -> str:
    """How a clause names its `k` of `of` speedups: `it`, `all 3` when they are every one, `the
    other 2` when an earlier clause named the rest, else `2 of them`."""
    if k == of:
        return "it" if k == 1 else "both" if k == 2 else f"all {k}"
    if last and not first:
        return "the other one" if k == 1 else f"the other {k}"
    return f"{k} of them"


def _names(of: list[tuple[str, StrategyTiming]]) -> str:
    """`top3 factored, spectrum torch`: the speedups a clause counts, as the tables name their rows."""
    return ", ".join(f"{name} {t.label}" for name, t in of)


def _helps_sentence(kind: Outlook, who: str, of: list[tuple[str, StrategyTiming]], named: str,
                    target: float | None) -> str:
    """`re-running as is should settle 1 of them (~4 more runs): top3 factored`, or `a re-run adds a
    run to the other 2: top3 torch, spectrum torch; on a steady machine ...`: one counting some of
    them names them, as the widened one does (walk 18: `adds a run to 1 of them`, unnamed); with
    every one early, it counts none."""
    if kind == "early" or target is None:
        return f"a re-run adds a run{f' to {who}: {named}' if named else ''}; {STEADY}"
    runs = sorted(runs_to_settle(t, target) for _name, t in of)
    span = f"{runs[0]}" if runs[0] == runs[-1] else f"{runs[0]}-{runs[-1]}"
    return f"re-running as is should settle {who} (~{span} more run{'' if span == '1' else 's'}){f': {named}' if named else ''}"


def _widened_sentence(wider: list[tuple[str, StrategyTiming]], who: str) -> str:
    """`2 of them widened over 10% with this run's rounds: top3 torch_lowrank (0.21-1.59 before this
    run, 0.17-1.48 with it), top3 torch`: every one named, the first with its intervals."""
    name, t = wider[0]
    return f"{who} {WIDENED}: {', '.join([f'{name} {t.label} ({widening(t)})', *([_names(wider[1:])] if wider[1:] else [])])}"


def _stalled_sentence(slow: list[tuple[str, StrategyTiming]], who: str, named: str, target: float) -> str:
    """`the other 5 narrow too slowly with runs to help after 3 or more runs pooled (the nearest
    would need ~64 more runs): top3 torch, ...`: the unresolved speedups runs would not settle soon."""
    one = len(slow) == 1
    nearest = min(more_runs(t, target) or 0.0 for _name, t in slow)
    runs = min(t.runs for _name, t in slow)
    return (f"{'they' if who.startswith('all ') else who} {'narrows' if one else 'narrow'} too slowly with runs to "
            f"help after {runs} or more runs pooled ({'it' if one else 'the nearest'} would need ~{nearest:,.0f} more runs)"
            + (f": {named}" if named else ""))
