"""`harness history`: asv's results across commits as one self-contained page a researcher reads
(no network). The headline first: since a commit, which speedups regressed or improved on which
machines, each linked to its chart. Then one chart per analysis with every compared strategy's
speedup over its baseline across commits (benchmarks/speedups.py's series, drawn back from the
time ratio asv tracks), 95% interval bands (a bar at a lone commit), changes judged between
consecutive commits marked (report.regressions), a line style per machine, a strategy with no value
at a commit named under its chart, and CPU and GPU machines side by side; a table of each
strategy's latest speedup and share of the roof on each machine, numbers written as run reports
write them (record.verdict.with_interval); then every other series (raw seconds, errors, the kernel
suites) folded below, asv's steps marked."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from harness.base.atomic import write_atomic
from harness.base.units import format_share
from harness.report.history import SIGNED_UNITS, Series
from harness.report.history_charts import Trend, roof_chart, trend_chart
from harness.report.html import environment
from harness.bench.statistics import Interval
from harness.report.labels import UNRESOLVED_MARK, marked_speedup
from harness.specs.sections import DEFAULT_TARGET
from harness.report.regressions import INTERVAL, LOAD, RATIO, SHARE_BUSY, UNTIMED, Judged, Side, judge, sides, track_of

HISTORY = "history.html"
ROOF_GAP = "track_roof_gap"
GAPS_NAMED = 3  # commits a note under a chart names before "and N more commits"
NOT_TIMED = "not timed: skipped on a busy machine, failed, or unable to run here; asv's log of the run says which"
RAW_NAMES = {"track_seconds": "median seconds per matrix", "track_error": "error against float64"}


def split_point(point: str) -> tuple[str, str, str]:
    """`experiment:analysis/strategy` -> its three parts."""
    experiment, _, rest = point.partition(":")
    analysis, _, strategy = rest.partition("/")
    return experiment, analysis, strategy


def anchor(*parts: str) -> str:
    return "h-" + re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


@dataclass(frozen=True)
class Axis:
    """What every chart shares: commits in date order, machines CPU first, which are GPUs."""

    commits: list[str]
    dates: dict[str, int]
    machines: list[str]
    gpu: set[str]

    @classmethod
    def of(cls, all_series: Sequence[Series]) -> Axis:
        dates = {p.commit: p.date for s in all_series for p in s.points}
        gpu = {s.line for s in all_series if s.gpu}
        return cls(commits=sorted(dates, key=lambda c: (dates[c], c)), dates=dates, gpu=gpu,
                   machines=sorted({s.line for s in all_series}, key=lambda m: (m in gpu, m)))

    def latest(self, by_commit: dict[str, Side]) -> Side | None:
        measured = [c for c in self.commits if c in by_commit and by_commit[c].speedup is not None]
        return by_commit[measured[-1]] if measured else None


def steps(machine: str, point: str, by_commit: dict[str, Side], axis: Axis) -> list[Judged]:
    """Each measured commit against the one measured before it on the same machine."""
    measured = [by_commit[c] for c in axis.commits if c in by_commit and by_commit[c].speedup is not None]
    return [judge(machine, point, a, b) for a, b in itertools.pairwise(measured)]


def headline(found: dict[tuple[str, str], dict[str, Side]], axis: Axis, since: str) -> dict[str, object]:
    """Every point's latest speedup on each machine against its speedup at `since`."""
    judged = []
    for (machine, point), by_commit in sorted(found.items()):
        latest = axis.latest(by_commit)
        if latest is not None and latest.commit != since:
            judged.append(judge(machine, point, by_commit.get(since, Side(commit=since, speedup=None)), latest))
    counts = {v: sum(j.verdict == v for j in judged) for v in ("regression", "improvement", "no change", "inconclusive")}
    listed = [(j, anchor(*split_point(j.point)[:2])) for j in judged if j.verdict in ("regression", "improvement")]
    measured = {machine for (machine, _), by in found.items() if axis.latest(by) is not None}
    return {"since": since, "counts": counts, "changes": listed, "judged": len(judged),
            "machines": sorted(measured, key=axis.machines.index), "busy": busy_shares(found, axis)}


def busy_shares(found: dict[tuple[str, str], dict[str, Side]], axis: Axis) -> list[tuple[str, str, float]]:
    """(machine, its newest commit, the share of that run's rounds timed while the machine was busy)
    where any were: a page of intervals from a busy run said nothing of the load (walk-through 5)."""
    out = []
    for machine in axis.machines:
        at: dict[str, list[Side]] = {}  # commit -> this machine's sides there
        for (m, _), by in found.items():
            for commit, side in by.items() if m == machine else ():
                at.setdefault(commit, []).append(side)
        newest = next((c for c in reversed(axis.commits) if c in at), None)
        shares = [side.busy for side in at.get(newest or "", []) if side.busy is not None]
        if newest is not None and shares and max(shares) > 0:
            out.append((machine, newest, sum(shares) / len(shares)))
    return out


def quick_runs(all_series: Sequence[Series], axis: Axis) -> list[tuple[str, list[str], int]]:
    """(machine, its commits recorded with `asv run --quick`, the fewest timings a plain run takes)
    where the data show it: every time benchmark of the run that a plain run times at least twice a
    point (Series.least_samples) has one sample a point. asv records no flag for --quick; a run with
    no such benchmark is not said to be quick, and one with a point of more samples is not."""
    found: dict[tuple[str, str], list[tuple[int, int]]] = {}  # (machine, commit) -> (samples, least)
    for s in all_series:
        for p in s.points if s.least_samples > 1 else ():
            if p.samples is not None:
                found.setdefault((s.line, p.commit), []).append((p.samples, s.least_samples))
    out = []
    for machine in axis.machines:
        quick = [c for c in axis.commits if (machine, c) in found and all(n == 1 for n, _ in found[(machine, c)])]
        if quick:
            out.append((machine, quick, min(least for c in quick for _, least in found[(machine, c)])))
    return out


def _trend(machine: str, point: str, by_commit: dict[str, Side], axis: Axis) -> tuple[Trend, list[Judged]]:
    measured = {c: s for c, s in by_commit.items() if s.speedup is not None}
    marked = [j for j in steps(machine, point, by_commit, axis) if j.verdict in ("regression", "improvement")]
    return Trend(label=split_point(point)[2], machine=machine, values={c: s.speedup for c, s in by_commit.items() if s.speedup is not None},
                 bands={c: (s.low, s.high) for c, s in measured.items() if s.low and s.high},
                 marks={j.after.commit: j.verdict for j in marked}), marked


def _cell(side: Side | None, share: float | None) -> str:
    """`1,670x (743-3,753), 41% of roof`: as the run report writes a speedup and a share, marked
    `?` as it marks one whose interval is wider than the precision the tracked specs ask for (the
    default: benchmarks/speedups.py sets none)."""
    if side is None or side.speedup is None:
        return "-"
    interval = (side.low, side.high) if side.low and side.high else None
    resolved = interval is not None and Interval(estimate=side.speedup, low=interval[0], high=interval[1],
                                                 n=1).resolved(DEFAULT_TARGET)
    return marked_speedup(side.speedup, interval, not resolved) + (f", {format_share(share)} of roof" if share else "")


def _why(side: Side) -> str:
    """Why a commit has no speedup of a point, as far as asv's series tell: the cause the suite
    recorded (benchmarks/speedups.py), else from the busy share it records of every strategy its run timed."""
    if side.cause is not None:
        return side.cause
    return "timed, but with no speedup over its baseline" if side.busy is not None else NOT_TIMED


def gaps(keys: Sequence[tuple[str, str]], found: dict[tuple[str, str], dict[str, Side]], axis: Axis) -> list[str]:
    """`torch: no value at 01ababab (not timed: ...)` for each of `keys` (a chart's (machine, point)s)
    asv recorded at a commit with no speedup: its line (or all of it, and its legend entry) is
    missing there, which without a note under the chart read as nothing to say."""
    several = len({machine for machine, _ in keys}) > 1
    notes = []
    for machine, point in keys:
        by_why: dict[str, list[str]] = {}
        for commit in (c for c in axis.commits if c in found[(machine, point)]):
            if (side := found[(machine, point)][commit]).speedup is None:
                by_why.setdefault(_why(side), []).append(commit[:8])
        name = split_point(point)[2] + (f" on {machine}" if several else "")
        notes += [f"{name}: no value at {', '.join(commits[:GAPS_NAMED])}"
                  + (f" and {len(commits) - GAPS_NAMED} more commits" if len(commits) > GAPS_NAMED else "")
                  + f" ({why})" for why, commits in by_why.items()]
    return notes


def baselines(all_series: Sequence[Series]) -> dict[tuple[str, str], str]:
    """(experiment, analysis) -> its baseline: the point whose time ratio is exactly 1 throughout."""
    return {split_point(s.params.get("point", ""))[:2]: split_point(s.params.get("point", ""))[2]
            for s in all_series if track_of(s) == RATIO and s.points and all(p.value == 1.0 for p in s.points)}


def analyses(found: dict[tuple[str, str], dict[str, Side]], shares: dict[tuple[str, str], float],
             axis: Axis, baseline: dict[tuple[str, str], str]) -> list[dict[str, object]]:
    """Per analysis: a speedup chart per kind of machine, its judged steps, and the machines side by side."""
    keyed = sorted(found, key=lambda k: (split_point(k[1])[:2], axis.machines.index(k[0])))
    out: list[dict[str, object]] = []
    for (experiment, analysis), group in itertools.groupby(keyed, key=lambda k: split_point(k[1])[:2]):
        keys = list(group)
        if not any(axis.latest(found[k]) is not None for k in keys):
            continue  # no chart: unmeasured() says so in one line
        panels, marked = [], []
        for gpu in (False, True):
            mine = [k for k in keys if (k[0] in axis.gpu) == gpu]
            drawn = [_trend(machine, point, found[(machine, point)], axis) for machine, point in mine
                     if axis.latest(found[(machine, point)]) is not None]
            marked += [j for _, judged in drawn for j in judged]
            if mine:
                machines = [m for m in axis.machines if (m in axis.gpu) == gpu]
                over = baseline.get((experiment, analysis), "the baseline")
                svg = trend_chart([t for t, _ in drawn], axis.commits, machines, f"speedup over {over} (log)",
                                  reference=1.0) if drawn else None
                panels.append({"kind": "GPU machines" if gpu else "CPU machines", "notes": gaps(mine, found, axis),
                               "svg": Markup(svg) if svg else None})
        points = sorted({k[1] for k in keys}, key=lambda p: split_point(p)[2])
        machines = [m for m in axis.machines if any(k[0] == m for k in keys)]
        table = [[split_point(p)[2]] + [_cell(axis.latest(found.get((m, p), {})), shares.get((m, p))) for m in machines]
                 for p in points]
        out.append({"anchor": anchor(experiment, analysis), "title": f"{experiment}: {analysis}", "panels": panels,
                    "steps": marked, "machines": machines, "table": table})
    return out


def unmeasured(found: dict[tuple[str, str], dict[str, Side]], axis: Axis) -> list[str]:
    """`bench_dense: svd_topk (torch: not timed: ...)` for each analysis no commit measured a
    speedup of on any machine, with why each strategy has none at its newest commit: a line saying
    so in place of an empty chart and a table of "-"."""
    drawn = {split_point(p)[:2] for (_, p), by in found.items() if axis.latest(by) is not None}
    out = []
    for e, a in sorted({split_point(p)[:2] for _, p in found} - drawn):
        by_why: dict[str, list[str]] = {}
        for (_machine, point), by in sorted(found.items()):
            newest = [by[c] for c in axis.commits if c in by][-1:]
            if split_point(point)[:2] == (e, a) and newest:
                by_why.setdefault(_why(newest[0]), []).append(split_point(point)[2])
        out.append(f"{e}: {a} (" + "; ".join(f"{', '.join(dict.fromkeys(names))}: {why}"
                                             for why, names in by_why.items()) + ")")
    return out


def latest_values(all_series: Sequence[Series], name: str) -> dict[tuple[str, str], float]:
    """(machine, point) -> the newest measured value of a speedups-suite series."""
    return {(s.line, s.params.get("point", "")): v for s in all_series if track_of(s) == name
            for v in [next((p.value for p in reversed(s.points) if p.value), None)] if v}


def roofs(all_series: Sequence[Series], axis: Axis) -> list[dict[str, object]]:
    """Per tracked experiment: every strategy's share of each machine's roof at the newest commit."""
    gaps = latest_values(all_series, ROOF_GAP)
    out: list[dict[str, object]] = []
    for experiment, group in itertools.groupby(sorted(gaps, key=lambda k: k[1]), key=lambda k: split_point(k[1])[0]):
        keys = list(group)
        rows = list(dict.fromkeys(k[1].partition(":")[2] for k in keys))
        machines = [m for m in axis.machines if any(k[0] == m for k in keys)]
        shares = {(k[1].partition(":")[2], k[0]): 1 / gaps[k] for k in keys}
        out.append({"anchor": anchor("roof", experiment), "title": experiment,
                    "svg": Markup(roof_chart(rows, machines, shares))})
    return out


def raw(all_series: Sequence[Series], axis: Axis) -> list[dict[str, object]]:
    """Every other series, folded: the speedups suite's per analysis, the kernel suites' per benchmark."""
    skip = {RATIO, INTERVAL, SHARE_BUSY, ROOF_GAP, UNTIMED, LOAD}
    groups: dict[tuple[str, str], list[Trend]] = {}
    units: dict[tuple[str, str], str] = {}
    for s in all_series:
        track = track_of(s)
        signed = s.unit in SIGNED_UNITS  # drawn on a linear axis, 0 and below included
        values = {p.commit: p.value for p in s.points if p.value is not None and (signed or p.value)}
        if track in skip or not values:
            continue
        if track in RAW_NAMES:
            experiment, analysis, label = split_point(s.params.get("point", ""))
            key = (f"{experiment}: {analysis}", RAW_NAMES[track])
        else:
            key, label = (s.benchmark, s.kind), ", ".join(s.params.values()) or s.benchmark
        units[key] = s.unit or s.kind
        groups.setdefault(key, []).append(Trend(
            label=label, machine=s.line, values=values,
            marks={step.commit: "regression" if step.after > step.before else "improvement" for step in s.steps}))
    return [{"anchor": anchor("raw", *key), "title": f"{key[0]} ({key[1]})", "svg": Markup(trend_chart(
        trends, axis.commits, [m for m in axis.machines if any(t.machine == m for t in trends)], units[key],
        log=units[key] not in SIGNED_UNITS))} for key, trends in sorted(groups.items())]


def write_history(all_series: Sequence[Series], results_dir: Path, path: Path, since: str | None = None) -> Path:
    """The page; `since` (a full commit hash) defaults to the oldest commit with results."""
    axis = Axis.of(all_series)
    found = sides(all_series)
    gaps = latest_values(all_series, ROOF_GAP)
    shares = {k: 1 / v for k, v in gaps.items()}
    start = since or next((c for c in axis.commits if any(c in by for by in found.values())), "")
    html = environment().get_template("history.html.j2").render(
        headline=headline(found, axis, start) if found else None,
        analyses=analyses(found, shares, axis, baselines(all_series)), unmeasured=unmeasured(found, axis),
        roofs=roofs(all_series, axis), raw=raw(all_series, axis), results_dir=str(results_dir),
        quick=quick_runs(all_series, axis), named=GAPS_NAMED,
        commits=len(axis.commits), machines=axis.machines, gpu=axis.gpu, unresolved_mark=UNRESOLVED_MARK,
        target=DEFAULT_TARGET)
    write_atomic(path, lambda fh: fh.write(html.encode()))
    return path
