"""Is a measurement trustworthy? Its dispersion and its conditions, judged as pyperf does: a
measurement gets `unstable` with every reason that applies, in words a user can act on."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

import numpy as np

from harness.bench.conditions import Conditions
from harness.bench.statistics import drift_reason, quartiles
from harness.base.units import format_seconds

MAX_IQR = 0.25  # IQR / median above this: the samples disagree
MAX_SPREAD_FEW = 1.5  # max / min of 2 samples
BIMODAL_GAP = 1.3  # consecutive sorted samples this far apart split two modes
MAX_OTHERS_CPU = 0.25  # share of the machine's CPU time other processes may take
MAX_STEAL = 0.05
LOAD_PER_CORE = 1.5  # the load average counts this process too
FEW = "2 samples differ by "  # no `its`: a summary says it after other causes, where `its` had no antecedent (walk 14)
BIMODAL = "bimodal: "  # a reason's start: its figures are one row's (per matrix), which a summary names


def dispersion_reasons(samples: list[float], per: int = 1) -> list[str]:
    """Why the samples disagree; a bimodal set's two clusters per matrix, `per` the matrices a sample
    (a call) times: the unit of the table's times, where a call's `69 µs` stood beside a row's 59 µs."""
    s = np.sort(np.asarray(samples, dtype=float))
    if len(s) < 2 or s[0] <= 0:
        return []
    if len(s) == 2:
        ratio = s[1] / s[0]
        return [f"{FEW}{ratio:.1f}x"] if ratio > MAX_SPREAD_FEW else []
    reasons = []
    q1, median, q3 = quartiles(samples)
    if (q3 - q1) / median > MAX_IQR:
        reasons.append(f"IQR {100 * (q3 - q1) / median:.0f}% of median")
    if len(s) >= 6:
        gaps = s[1:] / s[:-1]
        cut = int(np.argmax(gaps)) + 1
        if gaps[cut - 1] > BIMODAL_GAP and min(cut, len(s) - cut) >= 2:
            low, high = np.median(s[:cut]) / per, np.median(s[cut:]) / per
            reasons.append(f"{BIMODAL}{cut} samples near {format_seconds(low)}, "
                           f"{len(s) - cut} near {format_seconds(high)}")
    return reasons


def condition_reasons(c: Conditions) -> list[str]:
    reasons = []
    if c.others_cpu is not None and c.others_cpu > MAX_OTHERS_CPU:
        reasons.append(f"other processes took {100 * c.others_cpu:.0f}% of the {c.cores} CPUs")
    if c.steal is not None and c.steal > MAX_STEAL:
        reasons.append(f"CPU steal {100 * c.steal:.0f}% (the hypervisor ran other guests)")
    loads = [x for x in (c.load_before, c.load_after) if x is not None]
    if loads and max(loads) > LOAD_PER_CORE * c.cores:
        reasons.append(f"load {max(loads):.1f} on {c.cores} cores")
    return reasons


EARLIER = "earlier runs' rounds: "  # a reason that pooled rounds brought, not this run's conditions


def judge(samples: list[float], conditions: Conditions | None, earlier: Iterable[Sequence[str]] = (),
          per: int = 1) -> list[str]:
    """Why the measurement is unreliable (samples in time order: calls, or rounds); empty when
    it is not. `earlier`: the busy reasons of the rounds earlier runs timed, so that a time keeps
    its mark when a later run reuses its rounds (a reused `263.8 ms !` lost it, issue 48); `per`:
    the matrices a sample times (dispersion_reasons)."""
    drift = drift_reason(samples)
    return (dispersion_reasons(samples, per) + ([drift] if drift else []) + (condition_reasons(conditions) if conditions else [])
            + [EARLIER + reason_range(same) for same in grouped_by((r for busy in earlier for r in busy), cause_key).values()])


def own_reasons(reasons: Sequence[str]) -> list[str]:
    """The reasons a measurement's own rounds and this run's conditions gave (not `earlier`'s)."""
    return [r for r in reasons if not r.startswith(EARLIER)]


T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

NUMBER = r"\d+(?:\.\d+)?"  # a figure in a reason
FIGURE = f"({NUMBER})(?:-({NUMBER}))?"  # ...or a range of them already ("load 4.8-5.2": earlier runs'), one figure


# Causes by kind, in the order every summary says them: the machine's first (what to quiet before a
# re-run), then the measurement's own, as judge gives them; sorted by count, the order flipped
# between runs of one machine (walk 15), and compare said A's IQR before B's load
CAUSE_ORDER = ("other processes took ", "CPU steal ", "load ", "IQR ", "bimodal", "drifting", FEW)  # a reason or a summary's cause


def cause_rank(reason: str) -> int:
    """A reason's place in CAUSE_ORDER, whether earlier runs' rounds gave it or not; one of no kind there last."""
    reason = reason.removeprefix(EARLIER)
    return next((i for i, start in enumerate(CAUSE_ORDER) if reason.startswith(start)), len(CAUSE_ORDER))


def reasons_text(reasons: Sequence[str]) -> str:
    """One measurement's reasons, those earlier runs' pooled rounds gave after their prefix said
    once (--verbose said `earlier runs' rounds:` before each of them; timings.csv's
    `unstable_reasons` too: walk 22), each part in CAUSE_ORDER."""
    reasons = sorted(reasons, key=cause_rank)
    earlier = [r.removeprefix(EARLIER) for r in reasons if r.startswith(EARLIER)]
    return "; ".join([*(r for r in reasons if not r.startswith(EARLIER)), *([EARLIER + ", ".join(earlier)] if earlier else [])])


def cause_key(reason: str) -> str:
    """A reason with its numbers blanked: `load # on # cores`, the cause it shares with others."""
    return re.sub(FIGURE, "#", reason)


def grouped_by(items: Iterable[T], cause: Callable[[T], K]) -> dict[K, list[T]]:
    """Items by their `cause`, in first-seen order: reasons by cause_key (or a summary's coarser kind),
    or what a comparison flagged by its reason's cause, its run, the set of groups a cause flags."""
    by_cause: dict[K, list[T]] = {}
    for item in items:
        by_cause.setdefault(cause(item), []).append(item)
    return by_cause


def worst_reason(reasons: list[str]) -> str:
    """The reason of a cause with the largest first number: the one to quote for all of them."""
    def first_number(reason: str) -> float:
        found = re.search(NUMBER, reason)
        return float(found.group()) if found else 0.0

    return max(reasons, key=first_number)


def group_reasons(reasons: Iterable[str]) -> list[tuple[int, str]]:
    """(how many, the worst instance) per cause, in CAUSE_ORDER: 17 measurements under a busy
    machine are one line, `17 x load 3.2 on 2 cores`, not 17 lines that push the table off the
    screen. Causes are reasons alike but for their numbers."""
    return sorted(((len(same), worst_reason(same)) for same in grouped_by(reasons, cause_key).values()),
                  key=lambda x: cause_rank(x[1]))


def reason_range(reasons: list[str]) -> str:
    """Reasons of one cause (cause_key) as one, each figure the range it spans over them: `load
    7.6-8.1 on 2 cores`, where the worst alone claimed 8.1 for all; a figure that is a range
    already spans its ends (`4.8-5.2` and `4.9-5.7` are `4.8-5.7`, not `4.8-5.2-4.9-5.7`)."""
    figures = zip(*([(m.group(1), m.group(2) or m.group(1)) for m in re.finditer(FIGURE, r)] for r in reasons))
    spans = iter([(min((low for low, _ in f), key=float), max((high for _, high in f), key=float)) for f in figures])

    def span(_: re.Match[str]) -> str:
        low, high = next(spans)
        return low if float(low) == float(high) else f"{low}-{high}"

    return re.sub(FIGURE, span, reasons[0])
