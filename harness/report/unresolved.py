"""Why a run's speedups are unresolved, and whether another run as is would help: a re-run adds a
run, which narrows an interval on a steady machine; an interval this run's rounds widened, or one
that runs narrow too slowly, says the machine's load dominates instead."""

from __future__ import annotations

from harness.base.units import format_share, plural
from harness.record.run_record import RunRecord, StrategyTiming
from harness.record.verdict import readable_interval
from harness.report.labels import UNRESOLVED_MARK

STALLED_RUNS = 3  # runs pooled from which a speedup's interval shows how fast runs narrow it
STALLED_MORE = 10  # more runs than this to reach the target: re-running as is does not help


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
    """This run's rounds widened the interval earlier runs' gave alone (its ends further apart):
    runs under different loads disagree, and more of them need not narrow it (more_runs assumes
    they do)."""
    if t.earlier_ci is None or t.speedup_ci is None:
        return False
    return t.speedup_ci[1] / t.speedup_ci[0] > t.earlier_ci[1] / t.earlier_ci[0]


def widening(t: StrategyTiming) -> str:
    """`0.77-48.69 before this run; with it, 0.46-185`; ends too far apart to read as the tables say
    them (`1.67-11.62 before this run; with it, too wide`, not `0.0000053-13,360,295`)."""
    assert t.earlier_ci is not None and t.speedup_ci is not None  # widened
    return f"{readable_interval(t.earlier_ci)} before this run; with it, {readable_interval(t.speedup_ci)}"


def unresolved_line(record: RunRecord, unresolved: list[tuple[str, StrategyTiming]]) -> str:
    """What to do about unresolved speedups: a re-run adds a run, which narrows an interval on a
    steady machine; but where every one widened with this run's rounds, or pools STALLED_RUNS runs
    or more and would need over STALLED_MORE more, the machine's load dominates and another run as
    is does not help (issue 48: "a re-run adds a run" after five runs of ±120%, and after
    2.87-19.99 became 0.77-48.69 and then 0.46-185). Each cause is a clause of its own, so the
    line reads whether widened ones, stalled ones or both are said (walk-through 7)."""
    b = record.bench
    target = f"±{format_share(b.precision)}" if b is not None else "the target asked for"
    head = (f"{plural(len(unresolved), 'speedup')} unresolved ({UNRESOLVED_MARK}): "
            f"{'its interval is' if len(unresolved) == 1 else 'their intervals are'} wider than {target}")
    wider = [(name, t) for name, t in unresolved if widened(t)]
    stalled = [t for _name, t in unresolved if not widened(t)]
    more = [m for t in stalled if b is not None and (m := more_runs(t, b.precision)) is not None and m > STALLED_MORE]
    said = _widened_clause(wider, len(unresolved)) if wider else ""
    if len(wider) + len(more) == len(unresolved):
        slow = _stalled_clause(len(stalled), len(unresolved), min(t.runs for t in stalled), min(more)) if more else ""
        return (f"{head}; {', and '.join(c for c in (said, slow) if c)}, so the machine's load dominates: re-run on a "
                "quieter machine (`harness system` names what is busy) or with more time for rounds (--budget 30s) "
                "rather than as is; --verbose says why each")
    return (f"{head}; a re-run adds a run (on a steady machine intervals narrow with runs, not with one run's rounds)"
            + (f"; here {said}" if said else "") + ", --verbose says why each")  # no "))" after said's own (walk-through 8)


def _widened_clause(wider: list[tuple[str, StrategyTiming]], of: int) -> str:
    """`2 of them widened with this run's rounds (top3 torch_lowrank: 0.21-1.59 before this run;
    with it, 0.17-1.48; and top3 torch)`: the first one's intervals, every one named."""
    k = len(wider)
    who = "it" if of == 1 else "both" if k == of == 2 else f"all {k}" if k == of else f"{k} of them"
    others = f"; and {', '.join(f'{n} {t.label}' for n, t in wider[1:])}" if k > 1 else ""
    name, t = wider[0]
    return f"{who} widened with this run's rounds ({name} {t.label}: {widening(t)}{others})"


def _stalled_clause(k: int, of: int, runs: int, nearest: float) -> str:
    """`the other 5 narrow too slowly with runs to help after 3 or more runs pooled (the nearest
    would need ~64 more)`: the `k` of `of` unresolved speedups that runs would not settle soon."""
    who = "it" if of == 1 else "they" if k == of else "the other one" if k == 1 else f"the other {k}"
    one = k == 1
    return (f"{who} {'narrows' if one else 'narrow'} too slowly with runs to help after {runs} or more runs pooled "
            f"({'it' if one else 'the nearest'} would need ~{nearest:,.0f} more)")
