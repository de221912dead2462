"""A sweep for people: its exponents and crossovers in a sentence each (the terminal leads with
them), and its points and fits as points.csv, fits.csv and sweep.md beside sweep.json."""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path
from collections.abc import Callable
from typing import IO, Any

from harness.base.atomic import write_atomic
from harness.base.units import format_seconds, format_speedup, plural
from harness.machine.wisdom import MODELLED
from harness.plan.sweep import SweepPoint
from harness.record.exports import csv_text
from harness.record.sweep_classes import NONE, class_rms, class_rms_interval, class_text, class_verdict, named_classes
from harness.record.sweep_fits import (fit_sweep, Tie, Told, Unborne, exponent_text, growth, named_misses, planner_lines,
                                       planner_picks, told_apart)
from harness.record.verdict import TOO_WIDE, UNREADABLE_SPAN, readable_interval, unreadable
from harness.record.sweep_record import (FAR, PointRecord, PointTiming, ScalingFit, SweepCrossover, SweepRecord, axis_name,
                                         load_sweep)
from harness.report.labels import UNSTABLE_MARK
from harness.report.unstable import Unstable, summary_reasons, unstable_why

POINT_COLUMNS = ("point", "folder", "analysis", "strategy", "seconds", "low", "high", "planned_s", "model_s", "basis", "measured",
                 "passed", "chosen")
FIT_COLUMNS = ("analysis", "strategy", "axis", "fixed", "points", "exponent", "low", "high", "class_verdict", "complexity",
               "rms", "rms_low", "rms_high", "model_exponent", "finding")


def _writes(data: bytes) -> Callable[[IO[bytes]], object]:
    return lambda fh: fh.write(data)


def fit_sentence(fit: ScalingFit) -> str:
    """`spectrum, factored: cost grows as rank^1.90 (1.70 to 2.10), its cost model says 2.00; class rank^2 (RMS 4%)`;
    a finding in its place where the interval leaves out the model's exponent (`..., outside its interval: the
    cost model says 0.00; ...`): once (a `finding:` line and then this one said the same numbers: walk 13)."""
    if fit.finding:
        return f"{fit.finding}; {class_text(fit)}"
    model = f", its cost model says {exponent_text(fit.model.exponent)}" if fit.model is not None else ""
    return f"{growth(fit)}{model}; {class_text(fit)}"


def _meeting(c: SweepCrossover) -> str:
    """`rank 190 (150-240)`: the crossing and its interval; one reaching past the largest value the axis can
    take said so, in one form wherever its point lies (`rank 384 (271 to past 512, the largest rank of a
    512x512 delta: they may not meet within it)`, `rank ~767 (358 to past 512, ...)`: walk 16 read `meet at
    rank 384 (271-512, clipped ...)` and `would meet at rank ~767 ...` for one sweep run twice); a crossing
    past it with all its interval `rank ~694 (560-1,200)`."""
    x, axis = c.crossing, axis_name(c.axis)
    beyond = c.limit is not None and x.size > c.limit.size
    size = f"~{_size(x.size)}" if beyond else _size(x.size)
    low = "0" if x.low == 0 else _size(x.low)
    if c.reaches_past and c.limit is not None:
        return (f"{axis} {size} ({low} to past {c.limit.size:g}, {c.limit.said(c.axis)}: "
                "they may not meet within it)")
    high = "beyond" if math.isinf(x.high) else _size(x.high)
    return f"{axis} {size} ({low}-{high})"


def _size(x: float) -> str:
    """`384`, `4,365`, `0.5`: a size on the axis, never `4.36e+03`."""
    return f"{x:,.0f}" if x >= 1000 else f"{x:.3g}"


def basis_text(u: Unborne) -> str:
    """`data.rank=256: factored 4.15x (0.333-51.8) over numpy in paired rounds, too wide to tell`: what a
    point's order stood on, its paired rounds where one is the baseline (a points table whose intervals
    stood apart read as contradicting the clause, its basis shown nowhere: walk 16), else their own intervals."""
    said = "the other way" if u.reverse else "too wide to tell"
    base, other = (u.a, u.b) if u.a.baseline else (u.b, u.a)
    if base.baseline and other.paired is not None:
        interval = readable_interval(other.paired)
        if interval == TOO_WIDE:  # walk 24: `17.6x (0.0243-12,737)`, its ends no figures, read as a finding
            speedup = f" {format_speedup(other.speedup)}" if other.speedup is not None else ""
            return (f"{u.label}: {other.strategy}{speedup} over {base.strategy} in paired rounds, "
                    f"its interval {TOO_WIDE} to read, an unusable measurement")
        ratio = (f"{format_speedup(other.speedup)} ({interval})" if other.speedup is not None else f"{interval}x")
        return (f"{u.label}: {other.strategy} {ratio} over {base.strategy} "
                f"in paired rounds, {said}")
    own = " and ".join(f"{t.strategy} {format_seconds(t.seconds)} ({seconds_interval(t.low, t.high)})" for t in (u.a, u.b))
    return f"{u.label}: {own}, {'measured ' + said if u.reverse else 'their intervals overlap'}"


def told_text(told: Told | None) -> str:
    """`the points' own measurements show it at 4 of 5, not at data.rank=256: factored 4.15x (0.333-51.8) over
    numpy in paired rounds, too wide to tell` where some of a crossover's points do not tell its two strategies
    apart as its fits do (`, the reverse at 1` where they order them the other way), each named with its basis
    (basis_text; walk 15: `4 of 5` named none); "" where all do."""
    if told is None or told.shown == told.points:
        return ""
    reverse = f", the reverse at {told.reverse}" if told.reverse else ""
    return (f"the points' own measurements show it at {told.shown} of {told.points}{reverse}, not at "
            + "; ".join(basis_text(u) for u in told.others))


def unlocated_why(record: SweepRecord, c: SweepCrossover) -> str:
    """Why a crossover's fits do not tell where they meet (SweepCrossover.located): `torch has 2 points`, a
    crossing past FAR, or its interval holding all the swept range."""
    fits = {f.strategy: f.power for f in record.fits if (f.analysis, f.axis, f.fixed) == (c.analysis, c.axis, c.fixed)}
    two = [s for s in (c.b, c.a) if s in fits and not math.isfinite(fits[s].high - fits[s].low)]
    if two:
        return f"{' and '.join(two)} {'has' if len(two) == 1 else 'have'} {fits[two[0]].points} points"
    if c.distance > FAR and c.swept is not None:
        side = "above" if c.crossing.size > c.swept[1] else "below"
        return f"they would cross more than {FAR:g}x {side} the swept range, where no point was measured"
    return f"the interval of their crossing holds all the swept {axis_name(c.axis)} and more"


def crossover_sentence(c: SweepCrossover, told: Told | None = None, why: str = "") -> str:
    """`spectrum: factored overtakes numpy above rank 190 (150-240)` inside the swept range; outside it, one
    form however far (a crossing near the end was said in one run and not the next: walk 12), its distance
    from the range's nearer end said: `spectrum: by their fitted costs, factored is cheaper than numpy over
    the swept rank 16-256; their fits meet at rank 384 (271 to past 512, the largest rank of a 512x512 delta:
    they may not meet within it), 1.5x above the swept range (largest 256)` (_meeting); all its interval past the
    largest rank, that once: `their fits would meet at rank ~694 (560-1,200), 2.7x above the swept range
    (largest 256) and past the largest rank of a 512x512 delta (512): within it they may never meet`. Where `told` (told_apart) has points that do not bear the fits out, a clause says at how
    many do (told_text)."""
    axis, where = axis_name(c.axis), "".join(f" at {k}={json.dumps(v)}" for k, v in c.fixed.items())
    untold = f"do not tell where they meet{': ' + why if why else ''}"
    if not c.located and c.inside and c.swept is not None:
        return f"{c.analysis}: the fits of {c.a} and {c.b} cross within the swept {axis} {c.swept[0]:g}-{c.swept[1]:g}{where} but {untold}"
    past = f"past {c.limit.said(c.axis)} ({c.limit.size:g}): within it they may never meet" if c.past and c.limit else ""
    shown = told_text(told)
    if c.inside or c.swept is None:  # a sweep before its range was kept: only crossings within 2x of it were
        beyond = "" if c.inside else ", beyond the swept range"
        return (f"{c.analysis}: {c.a} overtakes {c.b} above {_meeting(c)}{where}{beyond}" + (f", {past}" if past else "")
                + (f"; {shown}" if shown else ""))
    low, high = c.swept
    above = c.crossing.size > high
    cheaper, dearer = (c.b, c.a) if above else (c.a, c.b)  # a is the cheaper above the crossing
    factor = f"{c.distance:.1f}x" if c.distance < 10 else f"{c.distance:,.0f}x"
    side = f"above the swept range (largest {high:g})" if above else f"below the swept range (smallest {low:g})"
    head = (f"{c.analysis}: by their fitted costs, {cheaper} is cheaper than {dearer} over the swept {axis} "
            f"{low:g}-{high:g}{where}{f' ({shown})' if shown else ''}; ")
    if not c.located:
        return f"{head}the fits {untold}"
    return (f"{head}their fits {'would meet' if past else 'meet'} at {_meeting(c)}, {factor} {side}"
            + (f" and {past}" if past else ""))


def sweep_lines(record: SweepRecord) -> list[str]:
    """What the terminal leads with: findings first (each fit once), then every other exponent, the
    crossovers and planner lines."""
    lines = [stopped_line(record)] if stopped(record) else []
    lines += [f"finding: {fit_sentence(fit)}" for fit in record.fits if fit.finding]
    lines += [fit_sentence(fit) for fit in record.fits if not fit.finding]
    lines += [crossover_sentence(c, told_apart(record, c), unlocated_why(record, c)) for c in record.crossovers] or (
        ["no two strategies' fits meet"] if record.fits else [])
    lines += planner_lines(record)  # from the points: one wording, a record written before it too
    lines += unusable_lines(record)
    failed = [p.folder for p in record.points if not p.passed]
    if failed:
        lines.append(f"verification failed at {len(failed)} points: {', '.join(failed)}")
    return lines + unstable_lines(record)


def read_sweep(folder: Path) -> SweepRecord:
    """The sweep in `folder` as its views show it: a stopped one fitted over the points it holds (its record
    is written before the fits, which come at the end)."""
    record = load_sweep(folder)
    return fit_sweep(record) if stopped(record) else record


def planned_points(record: SweepRecord) -> int:
    """The points the sweep was to run: every combination of its axes' values."""
    return math.prod(len(values) for values in record.axes.values())


def stopped(record: SweepRecord) -> bool:
    """The sweep was stopped before its last point (its record marked incomplete, points missing)."""
    return not record.complete and len(record.points) < planned_points(record)


def points_text(record: SweepRecord) -> str:
    """`5 points, each a run of its own`; a stopped sweep's `1 point of 5 (stopped), ...`."""
    done = plural(len(record.points), "point")
    return f"{done}{f' of {planned_points(record)} (stopped)' if stopped(record) else ''}, each a run of its own"


def stopped_line(record: SweepRecord) -> str:
    """A stopped sweep's lead: how many of its points it holds, and what its fits stand on (walk 22: one point
    read `1 points, each a run of its own` and `no two strategies' fits meet`, where there was no fit at all)."""
    head = f"the sweep was stopped after {len(record.points)} of {plural(planned_points(record), 'point')}"
    if len(record.points) < 2:
        return f"{head}: a fit needs two points or more, so there is none"
    return f"{head}: the fits below are over those {len(record.points)} alone"


def sweep_unstable(record: SweepRecord) -> list[Unstable]:
    """Every point's unstable measurements as a run's, each row with its point (`spectrum numpy at
    data.rank=64`): a row kind names them as a run's warning does, where two points' bimodal modes
    merged into `9-10 samples near 111-229 µs, 2-3 near 197-371 µs` (walk 13). A sweep before rows
    were kept names the point alone."""
    found = []
    for p in record.points:
        label = SweepPoint(values=p.values).label
        rows = p.unstable_rows or [("a measurement", "")] * len(p.unstable)
        found += [Unstable(analysis, f"{strategy} at {label}".lstrip(), "", tuple(reasons), False)
                  for (analysis, strategy), reasons in zip(rows, p.unstable)]
    return found


def unstable_lines(record: SweepRecord) -> list[str]:
    """The run's warning over the whole sweep: how many of its measurements were unstable, at how
    many points, and why (as a run says it: unstable.summary_reasons); the fits and picks above stand on them."""
    unstable = sweep_unstable(record)
    if not unstable:
        return []
    total = sum(p.measurements for p in record.points)
    points = sum(bool(p.unstable) for p in record.points)
    head = (f"{len(unstable)} of {plural(total, 'measurement')} (a strategy on one shape group) unstable "
            f"({UNSTABLE_MARK}) at {points} of {plural(len(record.points), 'point')}")
    return [f"{unstable_why(summary_reasons(u) for u in unstable).said(head)}; read the exponents and picks with "
            "care, or re-run on a quiet machine (`harness system` names what is busy)"]


def unusable(t: PointTiming) -> bool:
    """A point's measurement whose interval is too wide to read, its own or its paired one over the baseline
    (readable_interval's rule): its figure is no finding, and the fits and picks above lean on it."""
    return seconds_interval(t.low, t.high) == TOO_WIDE or (t.paired is not None and readable_interval(t.paired) == TOO_WIDE)


def point_command(record: SweepRecord, point: PointRecord) -> str:
    """The command that runs `point` alone, as the sweep ran it, into a fresh folder: the sweep's own command
    with the point's values and `sweep={}` set (a swept key set alone is refused: plan.sweep._swept_overrides)."""
    return shlex.join([*shlex.split(record.command), *(f"--set={s}" for s in SweepPoint(values=point.values).overrides())])


def unusable_lines(record: SweepRecord) -> list[str]:
    """A line for each point with an unusable measurement (walk 24: rank 64's `17.6x (0.0243-12,737)` and
    `6 µs-245 ms` were passed on as figures), naming them and the command that re-runs that point alone."""
    lines = []
    for p in record.points:
        bad = [f"{t.analysis} {t.strategy}" for t in p.timings if unusable(t)]
        if bad:
            whose = "its measurement is" if len(bad) == 1 else "their measurements are"
            lines.append(f"at {SweepPoint(values=p.values).label}, {' and '.join(bad)}: {whose} unusable, the 95% interval "
                         f"{TOO_WIDE} to read (ends over {UNREADABLE_SPAN:,.0f}x apart); re-run that point alone, into a "
                         f"fresh folder: `{point_command(record, p)}`")
    return lines


def point_rows(record: SweepRecord) -> list[dict[str, Any]]:
    rows = []
    for p in record.points:
        label = SweepPoint(values=p.values).label
        for t in p.timings:
            rows.append({"point": label, "folder": p.folder, "analysis": t.analysis, "strategy": t.strategy, "seconds": t.seconds,
                         "low": t.low, "high": t.high, "planned_s": t.planned_s, "model_s": t.model_s, "basis": t.basis, "passed": t.passed,
                         "chosen": p.chosen.get(t.analysis) == t.strategy, "measured": t.measured})
    return rows


SHOWN_POINT_COLUMNS = ("point", "folder", "analysis", "strategy", "per matrix", "95% interval", "plan's estimate",
                       "verified")
def model_note(rows: list[dict[str, str]]) -> str:
    """The Points table's footnote: whose intervals it shows (walk 16: rank 256's stood apart beside a clause
    saying the measurements did not tell the two apart, by their paired rounds), the paired figure on the row that
    rests on it (tie_text, basis_text: walk 23 had to reconcile two tables); its example of a scaled estimate taken from the table's own
    cells (a fixed `modelled x4.7` sat under a table of x3.2 and x3.8), or none where none is scaled."""
    scaled = next((m for r in rows for m in re.findall(rf"{MODELLED} x([^ )]+)", r["plan's estimate"])), None)
    example = f" (e.g. {MODELLED} x{scaled}: by {scaled}, from the plan's measurements of others)" if scaled else ""
    return ("95% interval: each strategy's own, of the next run's seconds per matrix; the picks table and the "
            "crossover sentences tell two apart by their paired rounds' ratio instead, given beside each; plan's "
            "estimate: per matrix, the figure the plan compared the strategies by: the cost model's scaled "
            f"to this machine{example}, or this machine's wisdom's measurement (measured: as that point's plan found "
            "it, the earlier points' runs in it); the cost model's exponent is fitted over its unscaled figures "
            "(points.csv: model_s)")


def basis_mark(basis: str) -> str:
    """`modelled x4.7`, `measured`: where a plan's estimate came from, each group's basis (joined by
    "/") in a word or two, without its date, samples or why."""
    marks = {part.split(":", 1)[0].strip() if part.startswith(MODELLED) else "measured" for part in basis.split("/")}
    return " / ".join(sorted(marks))


def shown_points(record: SweepRecord) -> list[dict[str, str]]:
    """The Points table's cells, as sweep.md and the page both show them: the plan's pick marked,
    the plan's estimate marked with its basis, whether the answer verified."""
    return [dict(zip(SHOWN_POINT_COLUMNS, (
        r["point"], r["folder"], r["analysis"], r["strategy"] + (" (picked)" if r["chosen"] else ""),
        format_seconds(r["seconds"]), seconds_interval(r["low"], r["high"]),
        "-" if r["planned_s"] is None else f"{format_seconds(r['planned_s'])} ({basis_mark(r['basis'])})",
        "yes" if r["passed"] else "FAILED"))) for r in point_rows(record)]


PICK_COLUMNS = ("point", "analysis", "planner's pick", "fastest measured", "agrees")


def pick_rows(record: SweepRecord) -> list[dict[str, str]]:
    """At each point, for each analysis: the plan's pick, the fastest measured, and whether they
    agree (the pick's estimate the fastest); a miss the planner line names only marked (`not told apart`,
    `no`), the others with their factor (`no: 3.9x slower`)."""
    rows = []
    picks = planner_picks(record)
    named = [id(pick) for pick in named_misses(picks)]
    for pick in picks:
        mark = "not told apart" if pick.overlap else "no"
        agrees = (("yes" if not pick.ties else f"yes, not told apart from {', '.join(map(tie_text, pick.ties))}") if pick.agrees
                  else mark if id(pick) in named else f"{mark}: {pick.factor} slower")
        rows.append(dict(zip(PICK_COLUMNS, (SweepPoint(values=pick.values).label, pick.analysis, pick.chosen,
                                            pick.fastest, agrees))))
    return rows


def tie_text(tie: Tie) -> str:
    """`numpy (2.75x, 0.969-7.83 paired)`: a strategy the point does not tell from its fastest, with the figure
    that says so, on the row (walk 23: `yes, not told apart from numpy` beside Points intervals 35.0 ms-80.3 ms and
    13.2 ms-30.2 ms that do not overlap, the reason in a footnote); `torch (1.20x, intervals overlap)` by their own."""
    ratio = f"{format_speedup(tie.ratio)}, " if tie.ratio is not None else ""
    interval = readable_interval(tie.interval) if tie.interval is not None else None
    basis = ("intervals overlap" if interval is None else f"paired interval {TOO_WIDE}" if interval == TOO_WIDE
             else f"{interval} paired")
    return f"{tie.strategy} ({ratio}{basis})"


def fit_rows(record: SweepRecord) -> list[dict[str, Any]]:
    """fits.csv's rows, carrying the text's decision (class_verdict): `complexity` the classes the text names
    (" / " between several), none where it names none; `rms` and its interval the first named's, or the best's."""
    rows = []
    for f in record.fits:
        verdict, near = class_verdict(f), named_classes(f)
        shown = near[0] if near else f.complexity
        low, high = class_rms_interval(f, shown) if shown is not None else (None, None)
        rows.append({"analysis": f.analysis, "strategy": f.strategy, "axis": f.axis, "fixed": json.dumps(f.fixed),
                     "points": f.power.points, "exponent": f.power.exponent, "low": f.power.low, "high": f.power.high,
                     "class_verdict": verdict, "complexity": " / ".join(near) if verdict != NONE else None,
                     "rms": class_rms(f, shown) if shown is not None else None, "rms_low": low, "rms_high": high,
                     "model_exponent": f.model.exponent if f.model else None, "finding": f.finding})
    return rows


def seconds_interval(low: float, high: float) -> str:
    """`31.7 ms-72.8 ms`: a point's 95% interval as the md and the HTML page both write it; TOO_WIDE where its
    ends are over UNREADABLE_SPAN apart, as the run's tables say it (walk 24: `6 µs-245 ms` read as a figure)."""
    if unreadable(low, high):
        return TOO_WIDE
    return f"{format_seconds(low)}-{format_seconds(high) if math.isfinite(high) else 'inf'}"


def sweep_markdown(record: SweepRecord) -> str:
    lines = [f"# Sweep {record.experiment}", "", f"`{record.command}`", ""]
    lines += [f"- {line}" for line in sweep_lines(record)]
    if picks := pick_rows(record):
        lines += ["", f"| {' | '.join(PICK_COLUMNS)} |", "|---|---|---|---|---|"]
        lines += [f"| {' | '.join(_cell(row[c]) for c in PICK_COLUMNS)} |" for row in picks]
    shown = shown_points(record)
    lines += ["", f"| {' | '.join(SHOWN_POINT_COLUMNS)} |", "|" + "---|" * len(SHOWN_POINT_COLUMNS)]
    lines += [f"| {' | '.join(_cell(row[c]) for c in SHOWN_POINT_COLUMNS)} |" for row in shown]
    return "\n".join([*lines, "", f"{model_note(shown)}."]) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def write_sweep_exports(record: SweepRecord, folder: Path) -> list[Path]:
    """points.csv, fits.csv and sweep.md in `folder`, each written atomically."""
    written = []
    for name, text in (("points.csv", csv_text(POINT_COLUMNS, point_rows(record))),
                       ("fits.csv", csv_text(FIT_COLUMNS, fit_rows(record))), ("sweep.md", sweep_markdown(record))):
        write_atomic(folder / name, _writes(text.encode()))
        written.append(folder / name)
    return written
