"""The plan as a terminal shows it (`harness plan`, and the floor line a run prints): one row per
analysis, then a line each for why its strategy, what is timed and where each estimate comes from."""

from __future__ import annotations

from harness.base.units import format_bytes, format_seconds, format_share, plural
from harness.bench.budget import MIN_ROUNDS, OVERRUN
from harness.machine.wisdom import BUSY, BUSY_USE, MEASURED, MODELLED
from harness.plan.calibration import scaled_note
from harness.plan.model import Candidate, Plan, Timed
from harness.report.fitting import Fitted, rule_table, value
from harness.record.run_record import UNTIMED, RunRecord
from harness.report.labels import device_text, shown, total_text


ESTIMATE = "est."  # its header on one line at 100 columns (walk 12: "est. (whole" / "analysis)")
WHOLE = f"{ESTIMATE}: of the whole analysis"  # the table's estimate, as the reason's is: the full analysis
TIMED = "est. of each one's rounds on the timed sample"
BUSY_MARK = "*"  # an estimate measured while busy, its caveat said once per plan
MISSED = 3.0  # a modelled estimate this many times off the run's measurement, either way, is said to be


def executor_label(plan: Plan) -> str:
    """Where full analyses run, as the plan and the record say it."""
    if plan.executor == "local":
        return f"executor local (in this process; {plan.workers} workers for fan-out strategies)"
    if plan.cluster is not None:  # the workers the work was sized for, not this machine's cores
        return f"executor dask: {plan.cluster.describe()}"
    where = f" at {plan.dask_address}" if plan.dask_address else (" (LocalCluster)" if plan.executor == "dask" else "")
    return f"executor {plan.executor}{where}, {plan.workers} workers x {plan.threads_per_worker} threads"


def _timed_label(t: Timed) -> str:
    """`numpy (baseline) ~390 ms` (the rounds the budget affords it are the JSON plan's `cut`)."""
    return f"{shown(t.label)} ({t.role})" + (f" ~{format_seconds(t.estimate_s)}" if t.allocations else "")


def threads_text(n: int, why: str) -> str:
    """`2 threads per timing (the machine's 2 cores)`."""
    return f"{n} thread{'' if n == 1 else 's'} per timing" + (f" ({shown(why)})" if why else "")  # "[benchmark]" is markup


def floor_note(plan: Plan, asked: bool) -> str | None:
    """The line a run prints when the budget the user asked for (`asked`: in the spec or with
    --budget) is less than the floor; the default budget quietly grows to the floor (issue 48: the
    shipped main job opened with a warning about its own default)."""
    b = plan.bench
    if not asked or b is None or b.floor_s <= b.budget_s:
        return None
    return (f"the budget of {format_seconds(b.budget_s)} is less than the least that times every strategy "
            f"({plural(MIN_ROUNDS, 'round')} each, ~{format_seconds(b.floor_s)}): this run takes that "
            "(less where earlier runs' rounds are pooled)")


def bench_plan_line(plan: Plan) -> str:
    """The benchmark's plan and the whole run's estimate on this machine as loaded, its parts as
    loaded too (Plan.estimate_s: the run's first `ETA ~` is it less the torch import), the idle
    machine's figure beside it."""
    b = plan.bench
    if b is None:
        return ""
    return (f"Benchmark: budget {format_seconds(b.budget_s)}, floor {format_seconds(b.floor_s)}"
            f"{' (one round of every strategy: more than the budget, so the run takes it)' if b.floor_s > b.budget_s else ''}, to a target of "
            f"±{format_share(b.target)}, est. {format_seconds(b.estimate_s)} "
            f"(float64 references {format_seconds(b.references_s)}), {threads_text(b.threads, b.threads_reason)}; "
            f"whole run est. {format_seconds(plan.estimate_s)}"
            + (" (of which " + ", ".join(f"{k} {format_seconds(plan.busy_s(v))}" for k, v in plan.overheads.items()) + ")"
               if plan.overheads else "")
            + (f"; {format_seconds(plan.idle_s)} on an idle machine" if plan.slowdown > 1 else ""))


def plan_table(plan: Plan) -> Fitted:
    """One row per analysis: what runs it, where, in what batches, how long (the why and what is
    timed are plan_lines', a line each: sentences in cells made a 100-column plan ~75 lines). Each
    group's batch where the width holds them, else a summary (`1064 per batch, 2 groups`)."""
    table = rule_table()
    for column in ("analysis", "op", "strategy", "device", ESTIMATE, "batch"):
        table.add_column(column)
    summaries = []
    for step in plan.steps:
        ahead = " (next chunk read ahead)" if step.reads_ahead else ""
        batch = ", ".join(f"{g}:{b}" for g, b in step.batch_sizes.items()) or "-"
        table.add_row(shown(step.analysis), value(shown(step.problem)),
                      value(shown(step.strategy)), value(device_text(step.device)),
                      value(format_seconds(step.estimate_s)), value(shown(batch) + ahead))
        summaries.append(value(shown(_batch_summary(step.batch_sizes) or batch) + ahead))
    return Fitted(table, ("batch",), footnotes=((ESTIMATE, WHOLE),), short={"batch": tuple(summaries)})


def _batch_summary(sizes: dict[str, int]) -> str:
    """`1064 per batch, 2 groups` (the groups are the plan's title's), or "" for one group or none."""
    if len(sizes) < 2:
        return ""
    return f"{_span([str(n) for n in sorted(sizes.values())], '-')} per batch, {plural(len(sizes), 'group')}"


def plan_title(plan: Plan) -> str:
    groups = ", ".join(f"{g.label} x{g.count}" for g in plan.groups)
    return (f"Plan: {plan.n_matrices} matrices ({groups}), {plan.dtype}, memory budget "
            f"{format_bytes(plan.memory_budget)}, {executor_label(plan)}")


def plan_lines(plan: Plan) -> list[str]:
    """Below the plan's table, per analysis: why its strategy, what the benchmark phase times, and
    where each estimate comes from; then the busy measurements' caveat, once, and the benchmark
    line. Each figure says what it is of: the whole analysis (the table, the reason) or the rounds
    of the timed sample (`timed:`), which a reader took for the same quantity."""
    lines = []
    for step in plan.steps:
        lines.append(f"{step.analysis}: {step.reason}")
        lines.append(f"  timed ({TIMED}): {', '.join(_timed_label(t) for t in step.timed)}"
                     + "".join(f"; skipped {c.label}: {c.reason}" for c in step.skipped))
        bases = grouped([(c.label, _basis(c)) for c in step.candidates if c.available])
        lines += [f"  {'estimates: ' if i == 0 else ' ' * len('estimates: ')}{', '.join(names)}: {basis}"
                  for i, (basis, names) in enumerate(bases)]
    available = [c for s in plan.steps for c in s.candidates if c.available]
    if (note := scaled_note(c.scale for c in available)) is not None:
        lines.append(note)
    busy = [c.busy for c in available if c.busy is not None]
    if busy:
        taken = f": other processes took up to {format_share(max(busy))} of the CPUs then" if max(busy) > 0 else ""
        lines.append(f"{BUSY_MARK} {BUSY}{taken}; {BUSY_USE}")
    return [shown(line) for line in lines] + [shown(bench_plan_line(plan))]


def _basis(c: Candidate) -> str:
    """`measured while busy* on 2 groups (2026-11-28, 15-18 samples)`: a strategy's estimates by
    where they come from, its groups counted, not each named with its own figures (top3's line of
    four groups filled five lines at 100 columns, each strategy named after them); a busy
    measurement marked, its caveat said once below the analyses."""
    by: dict[str, list[str]] = {}
    for group, text in c.basis.items():
        source = (BUSY + BUSY_MARK if text.startswith(BUSY) else MEASURED) if group in c.measured else text
        by.setdefault(source, []).append(group)
    parts = []
    for source, groups in by.items():
        count = plural(len(groups), "group") if len(groups) > 1 or len(by) > 1 else ""
        if groups[0] not in c.measured:  # modelled: its reason says the rest
            parts.append(source + (f" ({count})" if count else ""))
            continue
        dates = _span(sorted(c.measured[g][0] for g in groups), " to ")
        samples = _span([str(n) for n in sorted(c.measured[g][1] for g in groups)], "-")  # by number: 8-10
        noun = "sample" if samples == "1" else "samples"  # walk 24: `1 samples`
        parts.append(f"{source}{' on ' + count if count else ''} ({dates}, {samples} {noun})")
    return "; ".join(parts)


def _span(ordered: list[str], sep: str) -> str:
    """`15-18` from the least and the most, or the one value where they agree."""
    return ordered[0] if ordered[0] == ordered[-1] else f"{ordered[0]}{sep}{ordered[-1]}"


def grouped(pairs: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(reason, [what]) in first-seen order: one line per reason, whatever has it named once."""
    by: dict[str, list[str]] = {}
    for what, reason in pairs:
        by.setdefault(reason, []).append(what)
    return list(by.items())


def missed_note(record: RunRecord) -> str | None:
    """One sentence under a run's plan when a modelled estimate missed this run's measurement by
    more than MISSED times either way: the largest miss, and how many more. A walk-through read
    `est. 1 µs` beside a measured ~409 µs with nothing said."""
    misses, timings = [], {a.name: {t.label: t for t in a.timings} for a in record.analyses}
    for step in record.plan.steps:
        measured = timings.get(step.analysis, {})
        for c in step.candidates:
            t = measured.get(c.label)
            if t is None or not c.estimate_s or not any(b.startswith(MODELLED) for b in c.basis.values()):
                continue
            ratio = t.estimate_total_s / c.estimate_s
            if max(ratio, 1 / ratio) > MISSED:
                misses.append((max(ratio, 1 / ratio), f"{step.analysis} {c.label}: est. {format_seconds(c.estimate_s)}, "
                                                      f"measured {total_text(t.estimate_total_s, t.extrapolated)}"))
    if not misses:
        return None
    misses.sort(reverse=True)
    more = f", and {len(misses) - 1} more" if len(misses) > 1 else ""
    return (f"Modelled estimates missed this run's measurements by more than {MISSED:g}x ({misses[0][1]}{more}): "
            "the cost models count flops and bytes, not per-call overhead or other processes' load. "
            "Unless HARNESS_WISDOM=off, this run's verified measurements go to the machine's wisdom, which the "
            "next plan uses.")


FLOOR = "the least that gives every speedup its first interval on a quiet machine"  # a busy one may leave some untimed (walk 15)


def planned_text(record: RunRecord) -> str:
    """The budget, the plan's estimate and the floor, each said for what it is (walk 14: `planned
    2.21 s` beside `a 4.00 s budget (floor 2.21 s)` read as a plan that ignored its budget): a plan
    of whole rounds is its floor when the budget leaves too little for one more round each."""
    b, plan = record.bench, record.plan.bench
    assert b is not None
    budget, floor = format_seconds(b.budget_s), format_seconds(b.floor_s)
    if plan is None:  # an older record: no estimate to say
        return f"for a {budget} budget (floor {floor}, {FLOOR})"
    planned = format_seconds(plan.estimate_s - b.kept_s)
    if planned != floor:
        return f"for a {budget} budget, planned {planned}{_kept(record)} (floor {floor}, {FLOOR})"
    why = "is over the budget" if b.floor_s >= b.budget_s else "as the rest of the budget held no whole round more"
    return f"for a {budget} budget, planned {planned}{_kept(record)} (the floor, {FLOOR}, {why})"


def _kept(record: RunRecord) -> str:
    """A resumed run's plan counts only what it times: the words say whose rounds the rest are
    (walk 15: `planned 20.9 s` counted an analysis the stopped run had timed)."""
    names = [a.name for a in record.analyses if a.timings and all(t.resumed for t in a.timings)]
    if record.bench is None or not record.bench.kept_s or not names:
        return ""
    return f", without {' or '.join(shown(n) for n in names)}, which the stopped run timed"


def overrun_text(record: RunRecord) -> str:
    """`; the rounds ran slower than the plan expected (2.5x its 2.21 s) on this busy machine, and 1
    got no round, so no interval (geometry dual_gram)`, where they did and where the limit cut a point
    before its first round: the sentence beside FLOOR's promise says what the run did not keep (walk 15)."""
    b, plan = record.bench, record.plan.bench
    assert b is not None
    planned = plan.estimate_s - b.kept_s if plan is not None else b.limit_s
    rounds = b.spent_s - b.one_off_s
    cut = [f"{shown(a.name)} {shown(s.strategy)}" for a in record.analyses for s in a.skipped if s.reason == UNTIMED]
    busy = " on this busy machine" if b.busy_rounds else ""
    said = ([f"the rounds ran slower than the plan expected ({rounds / planned:.1f}x its {format_seconds(planned)}){busy}"]
            if planned > 0 and rounds > planned * (1 + OVERRUN) else [])
    if cut:
        said.append(f"{len(cut)} got no round, so no interval ({', '.join(cut)})" + ("" if said else f", out of time{busy}"))
    return "; " + ", and ".join(said) if said else ""
