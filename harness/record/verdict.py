"""The verdict first, as hyperfine prints it: one line per analysis with its interval, and a line
when a strategy the measurements put ahead of the one that ran was not chosen. The words follow
the interval: a speedup whose 95% interval holds 1 is "not significant" (pyperf's words), never
"faster" or "slower"."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Literal

from harness.base.units import either_way, format_interval, format_speedup
from harness.record.run_record import UNTIMED, AnalysisRecord, StrategyTiming

Significance = Literal["baseline", "faster", "slower", "not significant", "no interval"]


def significance(t: StrategyTiming) -> Significance:
    """What a timing's speedup says about it against the baseline: faster or slower only when
    its 95% interval lies wholly on that side of 1; "no interval" from a single round (or none)."""
    if t.role == "baseline":
        return "baseline"
    if t.speedup is None or t.speedup_ci is None:
        return "no interval"
    low, high = t.speedup_ci
    return "faster" if low > 1 else "slower" if high < 1 else "not significant"


UNREADABLE_SPAN = 1e3  # an interval whose ends are this far apart gives no figure for its far end
# such an interval around 1: short, so that it does not widen a table's speedup column and push a
# column out (issue 48: `24.22x (interval too wide to say) ?` dropped dtype); the tables' footnote says it
TOO_WIDE = "too wide"


def unreadable(low: float, high: float) -> bool:
    """An interval whose ends are over UNREADABLE_SPAN apart: its far end is no figure."""
    return low > 0 and high / low > UNREADABLE_SPAN


def readable_interval(ci: tuple[float, float] | None) -> str:
    """`1,050-1,210`, `no interval`; ends over UNREADABLE_SPAN apart give what they still say: `≥13.8`
    wholly above 1, `≤0.500` wholly below, TOO_WIDE around 1 ("1.17x (4.5e-05-30,147)"
    read as numbers; it is none). The one rule of every table, export and verdict line."""
    if ci is None:
        return "no interval"
    low, high = ci
    if unreadable(low, high):
        return f"≥{format_speedup(low)[:-1]}" if low > 1 else f"≤{format_speedup(high)[:-1]}" if high < 1 else TOO_WIDE
    return format_interval(low, high)


def with_interval(speedup: float | None, ci: tuple[float, float] | None) -> str:
    """`1,130x (1,050-1,210)`: a speedup and its 95% interval as every page and the verdict lines
    write them (the run report's tables, the history's), `(no interval)` without one; ends too far
    apart give what they still say: `1,453x (≥13.8)`, `0.0200x (≤0.500)`, `1.17x (too wide)`
    (readable_interval; labels.too_wide_footnote says what that means)."""
    return f"{format_speedup(speedup)} ({readable_interval(ci)})"


def _compared(head: StrategyTiming, baseline: StrategyTiming) -> str:
    """`factored is 1,130x (1,050-1,210) faster than numpy`, or `torch is 1.34x (1.10-1.63)
    slower than numpy`, or `torch is not significantly faster or slower than numpy: 0.75x (0.48-1.18)`.
    Unresolved, the words say what is known: the direction when the interval lies on one side of 1
    (`factored is at least 565x faster than numpy (1,490x, 565-3,932: x2.6 either way)`), else that there
    is no interval; never "faster ... (unresolved)". Why an interval is wide is --verbose's."""
    assert head.speedup is not None
    said = significance(head)
    if said == "not significant":
        return f"{head.label} is not significantly faster or slower than {baseline.label}: {_unsure(head, baseline)}"
    faster = head.speedup >= 1
    way = "faster" if faster else "slower"
    ratio = format_speedup(head.speedup if faster else 1 / head.speedup)
    ci = head.speedup_ci
    if ci is None:
        why = f" ({head.unresolved_reason})" if head.unresolved_reason else " (no interval)"
        return f"{head.label} measured {ratio} {way} than {baseline.label}{why}"
    low, high = ci if faster else (1 / ci[1], 1 / ci[0])
    if not head.unresolved:
        return f"{head.label} is {ratio} ({format_interval(low, high)}) {way} than {baseline.label}"
    # the interval's width, not its whole story: the verdict is one line a reader takes in at once;
    # why it is wide (rounds, processes, runs, the machine's spread) is --verbose's line for it. It is
    # symmetric in log space (711-3,862 around 1,657): a factor either way, never "±134%" below zero
    factor = max(ci[1] / head.speedup, head.speedup / ci[0])
    left = "; what is left is this machine's own spread" if head.settled else ""
    if ci[1] / ci[0] > UNREADABLE_SPAN:  # the table's `1,453x (≥13.8) ?`, in words: its far end is no figure
        return (f"{head.label} is at least {format_speedup(low)} {way} than {baseline.label} "
                f"({ratio}; the interval is too wide to say more{left})")
    return (f"{head.label} is at least {format_speedup(low)} {way} than {baseline.label} "
            f"({ratio}, {format_interval(low, high)}: {either_way(factor)}{left})")


def medians_ratio(t: StrategyTiming, baseline: StrategyTiming) -> float | None:
    """The baseline's per-matrix median over `t`'s: the speedup the table's per-matrix column reads."""
    return baseline.seconds_per_matrix / t.seconds_per_matrix if t.seconds_per_matrix > 0 else None


def medians_against(t: StrategyTiming, baseline: StrategyTiming) -> float | None:
    """The per-matrix medians' speedup where it points the other way from `t`'s paired one, whose
    interval holds 1 (walk 14: `0.670x (too wide)` beside numpy 257 µs, torch 201 µs read as torch
    slower): the verdict and the tables' cell then give both figures, named."""
    ratio = medians_ratio(t, baseline)
    if t.speedup is None or ratio is None or significance(t) != "not significant":
        return None
    if format_speedup(1.0) in (format_speedup(ratio), format_speedup(t.speedup)):  # at 1 as printed: no way to
        return None  # be the other way from (walk 23: `1.00x` beside "the other way" 0.964x)
    return ratio if (ratio - 1) * (t.speedup - 1) < 0 else None  # not the same way


def _unsure(head: StrategyTiming, baseline: StrategyTiming) -> str:
    """A speedup whose interval holds 1: `0.75x (0.48-1.18)`; where the per-matrix medians point the
    other way, both figures, named (medians_against), and a too-wide interval in words."""
    assert head.speedup is not None
    ratio = medians_against(head, baseline)
    if ratio is None:
        return with_interval(head.speedup, head.speedup_ci)
    interval = readable_interval(head.speedup_ci)
    return (f"{format_speedup(head.speedup)} paired ({'interval too wide to tell' if interval == TOO_WIDE else interval}), "
            f"{format_speedup(ratio)} by the per-matrix medians")


@dataclass(frozen=True)
class Headline:
    """What an analysis' verdict says: its head's speedup over the baseline, and how many of the
    compared speedups resolved (`untimed` of them the limit came before)."""

    head: StrategyTiming
    baseline: StrategyTiming
    resolved: int
    compared: int
    untimed: int


def headline(a: AnalysisRecord) -> Headline | None:
    """The chosen strategy's speedup where it was timed, else the fastest one's."""
    baseline = next((t for t in a.timings if t.role == "baseline"), None)
    others = [t for t in a.timings if t is not baseline and t.speedup is not None]
    if baseline is None or not others:
        return None
    head = next((t for t in others if a.computed(t)), max(others, key=lambda t: t.speedup or 0.0))
    untimed = sum(s.reason == UNTIMED for s in a.skipped)  # compared too: the limit came before their rounds
    return Headline(head, baseline, sum(not t.unresolved for t in others), len(others) + untimed, untimed)


def verdict(a: AnalysisRecord) -> str | None:
    """"spectrum: factored is 1,130x (1,050-1,210) faster than numpy; 3 of 4 speedups resolved",
    "...; 0 of 3 speedups resolved (2 of them not timed)": the limit came before those."""
    h = headline(a)
    if h is None:
        return None
    return (f"{a.name}: {_compared(h.head, h.baseline)}; {h.resolved} of {h.compared} speedups resolved"
            + (f" ({h.untimed} of them not timed)" if h.untimed else ""))


def named_in_spec(a: AnalysisRecord) -> bool:
    """The analysis ran the strategy its spec named, not one `auto` chose (the plan's reason says)."""
    return a.reason.startswith("named in the spec")


def overtaken(a: AnalysisRecord, approximate: Container[str]) -> tuple[StrategyTiming, StrategyTiming] | None:
    """(the one that ran, an exact strategy measured faster than it beyond both intervals: the
    one that ran has its upper end below the other's lower end); None when the choice held."""
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
            return chosen, t
    return None


def choice_check(a: AnalysisRecord, approximate: Container[str]) -> str | None:
    """A line when an exact strategy measured faster than the one that ran (overtaken); None when
    it held. A strategy the spec named is the user's choice, not the plan's, and the line says so."""
    if (found := overtaken(a, approximate)) is None:
        return None
    chosen, t = found
    assert chosen.speedup is not None  # overtaken compares only a chosen one with a speedup
    if chosen.role == "baseline":  # its speedup over the one that ran is its own, with its interval
        by = f"{with_interval(t.speedup, t.speedup_ci)} faster than it"
    elif t.role == "baseline" and chosen.speedup_ci is not None:  # the chosen one's, turned round
        low, high = chosen.speedup_ci
        by = f"{format_speedup(1 / chosen.speedup)} ({format_interval(1 / high, 1 / low)}) faster than it"
    else:
        by = (f"faster than it ({with_interval(t.speedup, t.speedup_ci)} against "
              f"{with_interval(chosen.speedup, chosen.speedup_ci)} over the baseline)")
    if named_in_spec(a):
        return (f"{a.name}: the spec names {chosen.label}, but {t.label} measured {by}; "
                f"name {t.label} (or auto) to run it")
    return f"{a.name}: the plan chose {chosen.label}, but {t.label} measured {by}; the next plan learns from these rounds"


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
