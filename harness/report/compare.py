"""Comparing runs of one spec: per analysis, point and shape group, B's time per matrix over A's
with an interval at the test's own level (99% for p < 0.01: the interval excludes 1 exactly when
the test calls the change significant), and whether they differ. A point is the whole of what was timed (the
strategy, its precision, compiled or not, its environment: plan.model.Point): keyed by the
strategy alone, A's plain numpy was compared with B's numpy in an environment of its own, and
`gram_eigh@float32` with `gram_eigh@float64`. What does not pair is listed (report.pairing).

The replication unit is the run, not the call or the round (bench.statistics): consecutive calls
of one process are correlated, and treating ~200 of them as independent called identical code
"changed" at p = 1e-55; rounds of one run share its state, and treating them as independent called
two runs of identical code different more often than the 1% asked. Each side's rounds are grouped
by the run that timed them: its mean log seconds over runs, or for one run its rounds' mean widened
by the between-run spread the machine showed for that item (recorded with the timing, else
bench.statistics.DEFAULT_SPREAD), Welch-Satterthwaite between the sides. Rounds both runs hold
count only for the run that timed them, whichever is A (for neither where both pooled them from an earlier
run): a run is never tested against itself, one that pooled the other's and timed its own is tested on its
own, and the same groups are judged in either order (a newer A made B's own rounds "pooled from A").
A change is reported when p < ALPHA and the ratio is beyond FACTOR (asv's rule, `asv compare
--factor`); otherwise the difference is "not significant", which is not "the same".

As a CI gate (`harness compare --fail-on-regression`) the same rule decides, with two exemptions a
gate must not trip on: measurements flagged unstable, reported instead, and groups with too few
rounds. A gate that judged no group, or was handed an incomplete run, is inconclusive: it says
so and exits 4, never a silent pass.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel

from harness.base.units import format_ratio, p_clause, plural
from harness.bench.measure import Measurement
from harness.bench.noise import cause_rank
from harness.bench.series import by_run, run_of
from harness.bench.statistics import DEFAULT_SPREAD, log_mean, run_difference
from harness.record.run_record import GroupTiming, RecordError, RunRecord
from harness.report.labels import group_rounds_text, rounds_text
from harness.report.rerun import compare_step, rerun_step
from harness.report.pairing import Pair, pairs, point_name, untimed
from harness.report.spec_difference import spec_difference

ALPHA = 0.01  # two-sided
FACTOR = 1.1  # asv's default: smaller changes are not reported even when significant
MIN_ROUNDS = 2  # a side, after the rounds both runs share are left out
# An interval wider than this, end to end (10x either way), says nothing: 2 scattered rounds a side
# leave Welch's t a degree of freedom or two, whose 99% quantile (10-64) printed "1.3 (0.000779-2,160)"
# and stretched the chart's axis over 8 decades. Such a group has too few rounds, as one of 1 round.
MAX_SPAN = 100.0
WIDEST = 1000  # a too wide interval's factor above this is said "over x1,000"
EXAMPLES = 2  # groups a line names of a cause's: all up to this many, else this many beside their count

Change = Literal["slower", "faster", "not significant", "too few rounds"]


class RunSummary(BaseModel):
    """What identifies a run in a comparison: where it ran, what, when."""
    folder: str
    machine: str
    harness_version: str
    started: str
    command: str
    spec_path: str = ""  # the spec the run read: a next step names it where the command does not
    threads: int = 0  # threads per timing (the plan's: the cores other processes left free); 0 unknown


class GroupComparison(BaseModel):
    """One shape group of one point, B against A, per matrix."""

    analysis: str
    strategy: str
    variant: str = ""  # the point's label beside its analysis' others ("@float32"): as the run's tables show it
    group: str
    time_a_s: float  # per matrix: the record's median over all its rounds, pooled ones too, the figure its
    time_b_s: float  # run table shows for the row (a geometric mean of B's own rounds read 381 ms beside its 246 ms)
    n_a: int  # rounds of A in the test: those of runs B timed are left out
    n_b: int  # rounds of B in the test: those of runs A timed are left out
    runs_a: int = 1  # the runs those rounds came from: the test's replicates
    runs_b: int = 1
    shared: int = 0  # rounds of runs both records hold, tested only on the side of the run that timed them:
    shared_a: int = 0  # A timed them (B pooled them): A's side only
    shared_b: int = 0  # B timed them (A pooled them): B's side only; the rest both pooled from earlier runs: neither
    # the group's rounds as each run's own table writes them (labels.rounds_text): `3`, `3+6` (its own 3, 6
    # pooled), `0+3` (all pooled), `3+6 r` (resumed); compare printed `3, 6 (+3 pooled)` beside B's table's `3+6 resumed`
    rounds_a: str = ""
    rounds_b: str = ""
    ratio: float  # B over A per matrix: each side's geometric mean over its own rounds (unpaired): above 1 is slower
    ratio_ci: tuple[float, float] | None  # its interval at Comparison.level (Welch's t on log seconds): as p decides
    p_value: float | None  # None when either side has too few rounds
    change: Change
    wide: str = ""  # "too few rounds" with rounds enough: "too wide (x120 either way)"
    unstable: list[str]  # "A: reason", "B: reason": why either measurement is unreliable
    gated: bool  # the gate may fail on this row: both sides stable, enough samples for the test
    regression: bool = False  # a gate was set and this row fails it

    @property
    def label(self) -> str:
        return point_name(self.analysis, self.strategy + self.variant, self.group)

    def describe(self) -> str:
        """`analysis strategy on group: B/A 1.42 (1.30-1.55), p=0.003`."""
        p = "" if self.p_value is None else f", {p_clause(self.p_value)}"
        return f"{self.label}: B/A {self.ratio_text}{p}"

    @property
    def times_apart(self) -> bool:
        """Whether the shown times' ratio disagrees with B/A: outside its interval, or without one
        over FACTOR from it. The times are each record's median over all its rounds, pooled ones
        too; B/A takes each run's own rounds alone, so a pooled or skewed side can set them apart. Never
        on a too-wide row: its interval, over MAX_SPAN wide, is no figure to hold them against (walk
        16 met `0.906 ≠ … too wide (x10 either way)` beside `2.46 … too wide (x624 either way)`)."""
        shown = self.time_b_s / self.time_a_s
        if self.wide:
            return False
        if self.ratio_ci is not None:
            return not self.ratio_ci[0] <= shown <= self.ratio_ci[1]
        return not 1 / FACTOR <= shown / self.ratio <= FACTOR

    @property
    def change_text(self) -> str:
        """The change column's words: why a row was not judged, where its rounds were enough."""
        return self.wide or self.change

    @property
    def ratio_text(self) -> str:
        """`1.30 (0.810-2.16)`: B/A and its interval, 3 significant figures each, as every view prints them."""
        ci = f" ({format_ratio(self.ratio_ci[0])}-{format_ratio(self.ratio_ci[1])})" if self.ratio_ci else ""
        return format_ratio(self.ratio) + ci


class Comparison(BaseModel):
    experiment: str
    spec_hash: str
    a: RunSummary
    b: RunSummary
    alpha: float
    factor: float
    rows: list[GroupComparison]
    unmatched: list[str]  # "spectrum torch: timed in A only (B: why)", "spectrum torch (bfloat16): only in B" (pairing)
    gate: float | None = None  # --fail-on-regression's ratio (then equal to factor); None: no gate
    regressions: list[str] = []  # GroupComparison.describe() of every row that fails the gate
    passed: bool = True  # no regression (always true without a gate)
    incomplete: list[str] = []  # "A" and/or "B": the runs whose record is marked incomplete
    untimed: list[str] = []  # "geometry dual_gram": planned for timing, timed in neither run (no row, no pair)
    # "svd_topk torch on 48x32r4 (B's table: 1+1)": a row whose rounds its run's table writes otherwise (a
    # strategy's fewest over its shape groups), so the row's `2+1` is not read as a contradiction
    table_rounds: list[str] = []

    @property
    def threads_differ(self) -> str | None:
        """Why the runs' times are not one configuration's: each plan times on the cores other processes
        leave free (1 at load 4.5, 2 quiet: top3's speedups moved 3-5x); None when alike or unknown."""
        ta, tb = self.a.threads, self.b.threads
        if not ta or not tb or ta == tb:
            return None
        return (f"A timed with {plural(ta, 'thread')} per timing, B with {tb}: each plan took the cores other "
                "processes left free, so B / A measures the thread count as much as the code; compare runs "
                "planned on a machine alike busy")

    @property
    def level(self) -> str:
        """The intervals' level, the test's own (1 - alpha): `99%`, the one every label reads."""
        return f"{100 * (1 - self.alpha):g}%"

    @property
    def n_gated(self) -> int:
        return sum(r.gated for r in self.rows)

    @property
    def inconclusive(self) -> list[str]:
        """Why a gate could not judge: no group it may fail on, or a run that did not finish."""
        if self.gate is None:
            return []
        why = [f"{side} did not finish (its record is marked incomplete)" for side in self.incomplete]
        if self.threads_differ:  # no group gated, for this reason alone
            why.append(f"A and B timed with {self.a.threads} and {self.b.threads} threads per timing (below)")
        elif not self.n_gated:
            # each group counted once, under its first cause (walk 15: `16 unstable, 6 …` of 16), a too wide
            # interval apart from too few rounds as its row says it (walk 17: `7 with too few rounds` held one)
            few, wide = (len(rows) for rows in self.too_few_by_cause)
            shaky = sum(bool(r.unstable) and r.change != "too few rounds" for r in self.rows)
            # a run that pooled every round of the other's as the summary says it (walk 22: `with too few rounds`)
            causes = [(few + wide, f"not judged: {self.pooled_alone}")] if self.pooled_alone else [
                (few, "with too few rounds"), (wide, "too wide")]
            counts = [f"{n} {what}" for n, what in (*causes, (shaky, "others unstable" if few or wide else "unstable")) if n]
            why.append(f"none of {len(self.rows)} groups could be gated ({('; ' if self.pooled_alone else ', ').join(counts) or 'none compared'})")
        return why

    @property
    def unstable(self) -> list[str]:
        """`label (B/A 1.42, slower): B: reason; A: reason` per row measured unreliably."""
        return [f"{r.label} (B/A {format_ratio(r.ratio)}, {r.change}): {'; '.join(r.unstable)}"
                for r in self.rows if r.unstable]

    @property
    def too_few(self) -> list[GroupComparison]:
        """Rows the test cannot judge, whatever their rounds say."""
        return [r for r in self.rows if r.change == "too few rounds"]

    @property
    def too_few_by_cause(self) -> tuple[list[GroupComparison], list[GroupComparison]]:
        """too_few's rows of fewer than MIN_ROUNDS rounds a side, then those of rounds enough whose
        interval is too wide: how the gate's line and the not-judged line count them alike."""
        return [r for r in self.too_few if not r.wide], [r for r in self.too_few if r.wide]

    @property
    def pooled_alone(self) -> str:
        """`B timed none of them itself, ...` where every row not judged is of a run that pooled all its rounds of
        the other (A may be the newer), the summary's and the not-judged line's reason alike; "" otherwise."""
        for side, other in (("B", "A"), ("A", "B")):
            if self.too_few and all(getattr(r, f"shared_{other.lower()}") and not getattr(r, f"n_{side.lower()}")
                                    for r in self.too_few):
                return f"{side} timed none of them itself, every round it holds was pooled from {other}"
        return ""

    @property
    def not_judged(self) -> str | None:
        """Why groups were not judged and what to do next, in one line; None when every group was."""
        few = self.too_few
        if not few:
            return None
        head = f"{'not gated' if self.gate else 'not judged'}: {len(few)} of {len(self.rows)} groups"
        if self.pooled_alone:
            side = self.pooled_alone[0]
            mine, theirs = (self.a, self.b) if side == "A" else (self.b, self.a)
            return (f"{head}: {self.pooled_alone}; time {side} anew: {rerun_step(mine, other=theirs)}, then "
                    f"{compare_step(self.a, self.b, (), side)}")
        fewer, wide = ([r.label for r in rows] for rows in self.too_few_by_cause)  # wide: an interval over MAX_SPAN
        causes = [(labels, why) for labels, why in ((fewer, f"fewer than {MIN_ROUNDS} rounds on a side (a round times "
                                                              "each strategy once)"),
                                                     (wide, f"rounds so few and scattered that the interval spans over "
                                                            f"{MAX_SPAN:g}x")) if labels]
        # one cause: of them all; both: each its groups, counted and named alike (walk 15 read "..., or ...")
        said = (f" have {causes[0][1]}, too few for a test" if len(causes) == 1 else ", none testable: " + "; ".join(
            f"{groups_named(labels)} {'has' if len(labels) == 1 else 'have'} {why}" for labels, why in causes))
        more = ("--budget", "30s")  # each into a new folder, then their compare: the runs compared stay as they are
        return (f"{head}{said}; for a verdict give each run more time: {rerun_step(self.a, *more, other=self.b)} "
                f"and {rerun_step(self.b, *more, other=self.a)}, then {compare_step(self.a, self.b, more)}")


def groups_named(labels: list[str]) -> str:
    """`4 groups (e.g. svd numpy on 48x32r4, svd torch on 32x48r4)`, `1 group (svd torch on 32x48r4)`: how
    a compare line says the groups a cause applies to, counted and named alike whatever their number (walk
    15: one run's cause named its 3 groups, the other's counted its 4)."""
    shown = ", ".join(labels[:EXAMPLES])
    return f"{plural(len(labels), 'group')} ({'e.g. ' if len(labels) > EXAMPLES else ''}{shown})"


class CompareOutput(BaseModel):
    """What `harness compare --json` prints: every comparison and the gate's overall verdict."""

    gate: float | None
    passed: bool  # false on a regression and when the gate could not judge (--allow-inconclusive: exit 0, still false)
    verdict: Literal["passed", "regression", "inconclusive"] | None = None  # the gate's; null without one
    inconclusive: list[str] = []  # why the gate could not judge (each "B: why" per comparison)
    n_gated: int = 0
    comparisons: list[Comparison]


def summarise(record: RunRecord, folder: str) -> RunSummary:
    return RunSummary(folder=folder, machine=record.machine.describe(), harness_version=record.harness_version,
                      started=record.started, command=record.command, spec_path=record.spec_path,
                      threads=record.bench.threads if record.bench is not None else 0)


def _rounds(g: GroupTiming) -> dict[str, float]:
    """Round id -> seconds per matrix; a record before schema 4 has calls, not rounds: none."""
    return {r: s / g.sampled for r, s in zip(g.rounds, g.measurement.samples_s)}


def _logs(seconds: dict[str, float]) -> dict[str, float]:
    return {r: math.log(s) for r, s in seconds.items()}


def compare_rounds(
    a: dict[str, float], b: dict[str, float], alpha: float = ALPHA, factor: float = FACTOR,
    spread: float = DEFAULT_SPREAD,
) -> tuple[float, tuple[float, float] | None, float | None, Change]:
    """B over A from seconds by round id, its interval and the p value with the run as the unit
    (bench.statistics.run_difference), and the verdict. The interval is at level 1 - alpha, the
    test's own: it excludes 1 exactly when p < alpha (a 95% interval beside p < 0.01 showed
    "0.583 (0.394-0.861), not significant"); one wider than MAX_SPAN is none."""
    if not a or not b:
        return math.nan, None, None, "too few rounds"
    interval, p = run_difference(by_run(_logs(a)), by_run(_logs(b)), spread, level=1 - alpha)
    if len(a) < MIN_ROUNDS or len(b) < MIN_ROUNDS or p is None or interval.high > MAX_SPAN * interval.low:
        return interval.estimate, None, None, "too few rounds"
    if p >= alpha or 1 / factor < interval.estimate < factor:
        change: Change = "not significant"
    else:
        change = "slower" if interval.estimate > 1 else "faster"
    return interval.estimate, (interval.low, interval.high), p, change


def too_wide(a: dict[str, float], b: dict[str, float], alpha: float, spread: float) -> str:
    """`too wide (x120 either way)` where compare_rounds found rounds enough on each side
    but an interval over MAX_SPAN wide (3 rounds a side read `too few rounds`); "" otherwise."""
    if len(a) < MIN_ROUNDS or len(b) < MIN_ROUNDS:
        return ""
    interval, _p = run_difference(by_run(_logs(a)), by_run(_logs(b)), spread, level=1 - alpha)
    if not interval.high > MAX_SPAN * interval.low:
        return ""
    factor = math.sqrt(interval.high / interval.low)  # capped: a 31-digit factor squeezed the table (walk 11)
    return f"too wide ({f'x{factor:,.0f}' if factor < WIDEST else f'over x{WIDEST:,}'} either way)"


def _reasons(side: str, m: Measurement) -> list[str]:
    """`A: reason` for each reason of an unstable measurement, in noise's CAUSE_ORDER (the order compare says them)."""
    return [f"{side}: {r}" for r in sorted(m.reasons, key=cause_rank) or ["flagged unstable"]] if m.unstable else []


def _timed_by(ga: GroupTiming, gb: GroupTiming) -> dict[str, str]:
    """Each run both groups hold rounds of -> the side that timed them (its rounds after its `pooled` ones):
    "A", "B", or "" where both pooled them; A where both say they timed it (a run compared with itself)."""
    own = {side: {run_of(r) for r in g.rounds[g.pooled:]} for side, g in (("A", ga), ("B", gb))}
    both = {run_of(r) for r in ga.rounds} & {run_of(r) for r in gb.rounds}
    return {run: "A" if run in own["A"] else "B" if run in own["B"] else "" for run in both}


def _group(pair: Pair, alpha: float, factor: float, gate: bool) -> GroupComparison:
    """One shape group of one point, B against A; rounds of a run both hold count for the side that timed them."""
    analysis, ta, tb, ga, gb = pair
    ra, rb = _rounds(ga), _rounds(gb)
    timer = _timed_by(ga, gb)
    a = {r: s for r, s in ra.items() if timer.get(run_of(r), "A") == "A"}
    b = {r: s for r, s in rb.items() if timer.get(run_of(r), "B") == "B"}
    shared = [r for r in ra.keys() | rb.keys() if run_of(r) in timer]
    spread = max((x for x in (ga.spread, gb.spread) if x is not None), default=DEFAULT_SPREAD)
    ratio, ci, p, change = compare_rounds(a, b, alpha, factor, spread)
    if math.isnan(ratio):  # a side's rounds all the other's (untested), or a record before rounds
        ratio = (math.exp(log_mean(by_run(_logs(rb))) - log_mean(by_run(_logs(ra)))) if ra and rb
                 else gb.seconds_per_matrix / ga.seconds_per_matrix)
    unstable = _reasons("A", ga.measurement) + _reasons("B", gb.measurement)
    gated = not unstable and change != "too few rounds"
    return GroupComparison(
        analysis=analysis, strategy=ta.strategy, variant=ta.variant, group=ga.group,
        time_a_s=ga.seconds_per_matrix, time_b_s=gb.seconds_per_matrix, n_a=len(a), n_b=len(b), runs_a=len(by_run(a)),
        runs_b=len(by_run(b)), shared=len(shared), shared_a=sum(timer[run_of(r)] == "A" for r in shared),
        shared_b=sum(timer[run_of(r)] == "B" for r in shared), rounds_a=group_rounds_text(ga, ta.resumed),
        rounds_b=group_rounds_text(gb, tb.resumed), ratio=ratio, ratio_ci=ci, p_value=p, change=change,
        wide=too_wide(a, b, alpha, spread) if change == "too few rounds" else "",
        unstable=unstable, gated=gated, regression=gate and gated and change == "slower",
    )


def compare_records(
    a: RunRecord, b: RunRecord, folders: tuple[str, str], alpha: float = ALPHA, factor: float = FACTOR,
    gate: bool = False,
) -> Comparison:
    """B against A; with `gate`, every stable row slower beyond `factor` with p < alpha is a
    regression and the comparison fails. Raises RecordError when the runs are of different specs."""
    if a.spec_hash != b.spec_hash:
        raise RecordError(f"{folders[1]}: {spec_difference(a, b, folders)}; compare only runs of the same spec")
    found, unmatched = pairs(a, b)
    summaries = summarise(a, folders[0]), summarise(b, folders[1])
    alike = not (summaries[0].threads and summaries[1].threads) or summaries[0].threads == summaries[1].threads
    rows = [_group(pair, alpha, factor, gate and alike) for pair in found]  # other threads: nothing to gate
    regressions = [r.describe() for r in rows if r.regression]
    incomplete = [side for side, record in (("A", a), ("B", b)) if not record.complete]
    return Comparison(
        experiment=a.experiment, spec_hash=a.spec_hash, a=summaries[0], b=summaries[1], alpha=alpha, factor=factor,
        rows=rows, unmatched=unmatched,
        gate=factor if gate else None, regressions=regressions, passed=not regressions, incomplete=incomplete,
        untimed=untimed(a, b), table_rounds=_table_rounds(found, rows),
    )


def _table_rounds(found: list[Pair], rows: list[GroupComparison]) -> list[str]:
    """`svd_topk torch on 48x32r4 (A's table: 1, B's: 1+1)` per row whose run's table writes its
    rounds otherwise, the row named once (walk 13 read it twice, once per run): a table gives a
    strategy's fewest over its shape groups, a row one group's."""
    said = []
    for r, (_, ta, tb, _, _) in zip(rows, found):
        apart = [(side, table) for side, t, text in (("A", ta, r.rounds_a), ("B", tb, r.rounds_b))
                 if (table := rounds_text(t)) != text]
        if apart:
            tables = ", ".join(f"{side}'s{' table' * (k == 0)}: {table}" for k, (side, table) in enumerate(apart))
            said.append(f"{r.label} ({tables})")
    return said
