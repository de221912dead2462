"""Unreliable measurements as every page says them: one count (a measurement with two reasons is
one), each cause once with its figures' range, how many it flags and whose rounds gave it, in one
phrase with one parenthetical at most (walk 12 read `CPU steal 6% (the hypervisor ran other
guests) (4 measurements) (earlier runs' pooled rounds)`). The terminal says them as a sentence,
the HTML report and the md export as a list (unstable_causes), a sweep and a row's own field too."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.base.units import plural
from harness.bench.noise import BIMODAL, EARLIER, grouped_by, cause_key, cause_rank, reason_range  # noise's notion of one cause
from harness.record.run_record import RunRecord


@dataclass(frozen=True)
class Unstable:
    """One measurement (a strategy on a shape group) flagged unreliable, and why."""

    analysis: str
    strategy: str
    group: str
    reasons: tuple[str, ...]
    pooled: bool  # every round came from earlier runs


def unstable_measurements(record: RunRecord) -> list[Unstable]:
    """Every measurement flagged unstable: the one count the terminal, the report and the
    exports give (a measurement with two reasons is one measurement)."""
    return [Unstable(a.name, t.label, g.group, tuple(g.measurement.reasons) or ("flagged unstable",), t.cached)
            for a in record.analyses for t in a.timings for g in t.groups if g.measurement.unstable]


def measurement_count(record: RunRecord) -> int:
    return sum(len(t.groups) for a in record.analyses for t in a.timings)


POOLED_SOURCE, BOTH_SOURCES = "earlier runs' pooled rounds", "this run's and earlier runs' pooled rounds"
# a reason of one row's own figures (per matrix, or per round) -> its kind as a summary says it,
# naming rows and no figures: a bimodal row's "375 µs a call" matched no per-matrix time in the
# table, and two shape groups' modes merged into ranges (`3-13 near 203-262 ms`) no mode had
ROW_KINDS = {BIMODAL: "bimodal calls (two clusters of times)", "drifting: ": "drifting rounds (a trend from first to last)"}
NOTE = re.compile(r"(.*?) \(([^()]*)\)")  # `CPU steal 6% (the hypervisor ran other guests)`: what, then its note


@dataclass(frozen=True)
class Cause:
    """One cause over the measurements it flags: what it was (its figures' range, or a row kind),
    its note (what that means), a row kind's rows, and whose rounds gave it ("": this run's)."""

    n: int
    what: str
    note: str
    rows: str
    source: str

    def said(self, counted: bool) -> str:
        """`CPU steal 6% in 4 measurements (the hypervisor ran other guests)`, the count where
        `counted`; a row kind's rows in place of its count: `bimodal calls (two clusters of times) in
        spectrum numpy, spectrum torch` (`…: spectrum factored, its 2 samples differ…` read as
        spectrum factored's samples: walk 13)."""
        note = f" ({self.note})" if self.note else ""
        if self.rows:
            return f"{self.what}{note} in {self.rows}"
        return self.what + (f" in {plural(self.n, 'measurement')}" if counted else "") + note


@dataclass(frozen=True)
class Why:
    """Why measurements were unstable: whose rounds gave every cause, said once in the lead ("":
    they differ, and each cause says its own, or all were this run's), and (measurements, cause)
    per cause, in noise's CAUSE_ORDER."""

    source: str
    causes: tuple[tuple[int, str], ...]

    def lead(self, head: str) -> str:
        """`18 of 18 measurements … unstable (!), from this run's and earlier runs' pooled rounds`."""
        return ", ".join(filter(None, (head, self.source and f"from {self.source}")))

    @property
    def text(self) -> str:
        """The causes as a sentence says them: `; ` apart, so that a row kind's names never run into the next cause."""
        return "; ".join(cause for _n, cause in self.causes)

    def said(self, head: str = "") -> str:
        """`head, from X: cause; cause`, or without a head (a row's own field) `from X: cause; cause`."""
        lead = self.lead(head)
        return f"{lead}: {self.text}" if lead else self.text


def _kind(reason: str) -> str:
    """A summary reason's cause: its row kind, or its reason with the figures blanked."""
    return next((kind for kind in ROW_KINDS.values() if reason.startswith(kind + ": ")), None) or cause_key(reason)


def _cause_of(n: int, kind: str, same: list[str], source: str) -> Cause:
    """Reasons of one kind as one cause: a row kind's rows, each once, else each figure's range."""
    rows = ", ".join(dict.fromkeys(r.removeprefix(kind + ": ") for r in same)) if kind in ROW_KINDS.values() else ""
    text = kind if rows else reason_range(same)
    what, note = found.groups() if (found := NOTE.fullmatch(text)) else (text, "")
    return Cause(n, what, note, rows, source)


def _causes(reasons: Iterable[Sequence[str]]) -> list[Cause]:
    """Each cause of measurements (each its reasons), in noise's CAUSE_ORDER; a measurement counts
    once under each cause, whether this run's conditions or earlier runs' pooled rounds gave it:
    `load 5.2-5.7 on 2 cores`, where each was a cause of its own and "earlier runs' rounds:" was
    said five times in one line. A row's own kind (summary_reasons) names its rows."""
    reasons = [tuple(each) for each in reasons]
    mine = [[r.removeprefix(EARLIER) for r in each] for each in reasons]
    counts = Counter(cause for each in mine for cause in {_kind(r) for r in each})
    pooled = {_kind(r.removeprefix(EARLIER)) for each in reasons for r in each if r.startswith(EARLIER)}
    own = {_kind(r) for each in reasons for r in each if not r.startswith(EARLIER)}
    by = grouped_by((r for each in mine for r in each), _kind)
    causes = [_cause_of(counts[kind], kind, same, POOLED_SOURCE if kind not in own else BOTH_SOURCES if kind in pooled else "")
              for kind, same in by.items()]
    return sorted(causes, key=lambda c: cause_rank(c.what))


def _why(causes: list[Cause], total: int) -> Why:
    """Causes with whose rounds gave them said once, in the lead: this run's and earlier runs' where
    any cause's were (a cause of this run's rounds alone sits under it), earlier runs' where every
    cause's were; a cause says its own only where it differs (walk 13: every md bullet repeated
    it). A cause that not all `total` measurements have says how many it flags (0: none counted)."""
    sources = {c.source for c in causes}
    lead = BOTH_SOURCES if BOTH_SOURCES in sources else POOLED_SOURCE if sources == {POOLED_SOURCE} else ""
    return Why(lead, tuple((c.n, c.said(c.n < total) + (f", from {c.source}" if c.source not in ("", lead) else ""))
                           for c in causes))


def unstable_causes(unstable: Sequence[Unstable]) -> Why:
    """The causes as the HTML report and the md export list them under their line: uncounted (each
    item leads with its count)."""
    return _why(_causes(summary_reasons(u) for u in unstable), 0)


def unstable_why(reasons: Iterable[Sequence[str]], counted: bool = True) -> Why:
    """Why measurements were unstable, as a run's and a sweep's warning say it: each cause with the
    range of its figures, counted where not every measurement has it (`in 2 measurements`; not
    `counted`: a row's own field, where a count counted nothing a reader sees), `; ` apart, whose
    rounds once in the lead: `…, from this run's and earlier runs' pooled rounds: other processes
    took 68-70% of the 2 CPUs; load 5.2-5.7 on 2 cores`, and on a cause only where it differs
    (`CPU steal 6% in 4 measurements (the hypervisor ran other guests), from earlier runs' pooled rounds`)."""
    reasons = [tuple(each) for each in reasons]
    return _why(_causes(reasons), len(reasons) if counted else 0)


def summary_reasons(u: Unstable) -> tuple[str, ...]:
    """Its reasons as a summary under a table of per-matrix times says them: a reason of the row's
    own figures by its kind and the row (`bimodal calls (two clusters of times): svdvals gram_eigh`);
    --verbose says each measurement's figures."""
    return tuple(next((f"{kind}: {u.analysis} {u.strategy}" for start, kind in ROW_KINDS.items() if r.startswith(start)), r)
                 for r in u.reasons)
