"""The verdict first, as hyperfine prints it: one line per analysis with its interval, and a line
when the plan's choice lost to a strategy the measurements put ahead of it."""

from __future__ import annotations

from collections.abc import Container

from harness.base.units import format_interval, format_speedup
from harness.record.run_record import AnalysisRecord, StrategyTiming


def _interval(t: StrategyTiming) -> str:
    return format_interval(*t.speedup_ci) if t.speedup_ci else "no interval"


def verdict(a: AnalysisRecord) -> str | None:
    """"spectrum: factored is 1,130x (1,050-1,210) faster than numpy; 3 of 4 speedups resolved";
    the chosen strategy's speedup where it was timed, else the fastest one's."""
    baseline = next((t for t in a.timings if t.role == "baseline"), None)
    others = [t for t in a.timings if t is not baseline and t.speedup is not None]
    if baseline is None or not others:
        return None
    head = next((t for t in others if a.computed(t)), max(others, key=lambda t: t.speedup or 0.0))
    assert head.speedup is not None
    faster = head.speedup >= 1
    ratio = head.speedup if faster else 1 / head.speedup
    ends = head.speedup_ci if faster or head.speedup_ci is None else (1 / head.speedup_ci[1], 1 / head.speedup_ci[0])
    interval = format_interval(*ends) if ends else "no interval"
    resolved = sum(not t.unresolved for t in others)
    way = "faster" if faster else "slower"
    unresolved = "" if not head.unresolved else " (unresolved)"
    return (f"{a.name}: {head.label} is {format_speedup(ratio)} ({interval}) {way} than {baseline.label}"
            f"{unresolved}; {resolved} of {len(others)} speedups resolved")


def choice_check(a: AnalysisRecord, approximate: Container[str]) -> str | None:
    """A line when an exact strategy measured faster than the one the plan chose, beyond both
    intervals (the chosen one's upper end below the other's lower end); None when it held."""
    chosen = next((t for t in a.timings if a.computed(t)), None)
    if chosen is None or chosen.speedup is None:
        return None
    chosen_high = 1.0 if chosen.role == "baseline" else (chosen.speedup_ci[1] if chosen.speedup_ci else None)
    failed = {v.strategy for v in a.verification if not v.passed}
    for t in a.timings:  # a compiled point never runs the analysis, nor one that missed the tolerance
        if t is chosen or t.strategy in approximate or t.compiled or t.label in failed:
            continue
        low = 1.0 if t.role == "baseline" else (t.speedup_ci[0] if t.speedup_ci else None)
        if chosen_high is not None and low is not None and chosen_high < low:
            ratio = (t.speedup or 1.0) / chosen.speedup
            return (f"{a.name}: the plan chose {chosen.label}, but {t.label} measured {format_speedup(ratio)} "
                    f"faster than it (speedups {_interval(chosen)} against "
                    f"{'1x, the baseline' if t.role == 'baseline' else _interval(t)}); the next plan learns "
                    "from these rounds")
    return None


def environment_findings(a: AnalysisRecord) -> list[str]:
    """A line per point timed in an environment of its own whose speedup differs from its twin's
    in the user's environment beyond both intervals: a setting the user may want, said as a
    finding, never applied behind their back."""
    twins = {(t.strategy, t.precision, t.compiled): t for t in a.timings if not t.env}
    lines = []
    for t in a.timings:
        twin = twins.get((t.strategy, t.precision, t.compiled))
        if not t.env or twin is None or t.speedup is None or twin.speedup is None:
            continue
        mine = t.speedup_ci or (t.speedup, t.speedup)
        theirs = (1.0, 1.0) if twin.role == "baseline" else (twin.speedup_ci or (twin.speedup, twin.speedup))
        if not (mine[0] > theirs[1] or mine[1] < theirs[0]):
            continue
        ratio = t.speedup / twin.speedup
        setting = " ".join(f"{k}={v}" for k, v in sorted(t.env.items()))
        way = f"{format_speedup(ratio)} faster" if ratio >= 1 else f"{format_speedup(1 / ratio)} slower"
        advice = "set it in the environment of your own runs" if ratio >= 1 else "leave it unset"
        lines.append(f"{a.name}: {setting} makes {twin.label} {way} on this machine (speedups "
                     f"{format_interval(*mine)} against {format_interval(*theirs)}); {advice}")
    return lines


def conclude(a: AnalysisRecord, approximate: Container[str]) -> None:
    """The analysis' verdict, its choice check and its environment findings, on its record."""
    a.verdict, a.choice_check, a.findings = verdict(a), choice_check(a, approximate), environment_findings(a)
