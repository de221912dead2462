"""`harness history`: asv's results across commits as one self-contained page (no network), CPU
and GPU machines apart, one chart per benchmark and parameters, one line per machine, asv's
steps marked."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from harness.base.atomic import write_atomic
from harness.report.history import Series
from harness.report.charts import _figure, _log_axis, to_svg
from harness.report.html import environment

HISTORY = "history.html"


def _title(s: Series) -> str:
    return ", ".join(f"{k}={v}" for k, v in s.params.items()) or s.benchmark


def history_chart(series: Sequence[Series]) -> str:
    """One benchmark and parameter combination: value against commit (date order, short hash),
    a line per machine, the [q25, q75] of asv's samples as error bars, steps as dashed lines
    labelled with their ratio."""
    commits = sorted({(p.date, p.commit) for s in series for p in s.points})
    x_of = {commit: i for i, (_date, commit) in enumerate(commits)}
    fig = _figure(4.2, 2.6)
    ax = fig.subplots()
    values = [p.value for s in series for p in s.points if p.value is not None and p.value > 0]
    for i, s in enumerate(series):
        pts = [p for p in s.points if p.value is not None]
        xs = [x_of[p.commit] for p in pts]
        ys = [p.value for p in pts]
        low = [max(0.0, y - (p.q25 if p.q25 is not None else y)) for p, y in zip(pts, ys)]  # type: ignore[operator]
        high = [max(0.0, (p.q75 if p.q75 is not None else y) - y) for p, y in zip(pts, ys)]  # type: ignore[operator]
        ax.errorbar(xs, ys, yerr=[low, high], marker="o", ms=3, lw=1.2, capsize=2, color=f"C{i % 10}", label=s.line)
        for step in s.steps:
            ax.axvline(x_of[step.commit] - 0.5, color=f"C{i % 10}", ls="--", lw=0.8)
            ax.annotate(f"x{step.ratio:.2f}", (x_of[step.commit] - 0.5, step.after), fontsize=7,
                        color="#b00020" if step.ratio > 1 and series[0].kind != "track" else "#1b7f3a")
    if values and max(values) / min(values) > 10:
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    else:  # from zero, so a step's height reads as its ratio
        ax.set_ylim(bottom=0, top=max(values or [1.0]) * 1.15)
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4), useOffset=False)
    ax.set_xticks(range(len(commits)), [c[:8] for _d, c in commits], rotation=45, ha="right", fontsize=7)
    ax.set_xlim(-0.5, max(len(commits) - 0.5, 0.5))
    ax.set_xlabel("commit (oldest left)")
    ax.set_ylabel(series[0].unit or series[0].kind)
    ax.set_title(_title(series[0]), fontsize=8)
    ax.grid(True, lw=0.4, color="#ddd")
    ax.legend(fontsize=6)
    return to_svg(fig)


def sections(all_series: Sequence[Series]) -> list[dict[str, object]]:
    """CPU machines, then GPU machines; in each, per benchmark, a chart per parameter combination."""
    out = []
    for gpu, in_kind in itertools.groupby(sorted(all_series, key=lambda s: s.gpu), key=lambda s: s.gpu):
        kind = list(in_kind)
        benchmarks = []
        for name, of_benchmark in itertools.groupby(sorted(kind, key=lambda s: s.benchmark), key=lambda s: s.benchmark):
            of_benchmark_list = list(of_benchmark)
            charts = []
            for _params, lines in itertools.groupby(sorted(of_benchmark_list, key=lambda s: list(s.params.values())),
                                                    key=lambda s: list(s.params.values())):
                lines_list = list(lines)
                charts.append(Markup(history_chart(lines_list)) if any(
                    p.value is not None for s in lines_list for p in s.points) else None)
            benchmarks.append({"name": name, "unit": of_benchmark_list[0].unit, "charts": charts})
        out.append({"title": "GPU machines" if gpu else "CPU machines",
                    "machines": sorted({s.line for s in kind}), "benchmarks": benchmarks})
    return out


def write_history(all_series: Sequence[Series], results_dir: Path, path: Path) -> Path:
    steps = [(s, step) for s in all_series for step in s.steps]
    html = environment().get_template("history.html.j2").render(
        sections=sections(all_series), steps=steps, results_dir=str(results_dir),
        commits=len({p.commit for s in all_series for p in s.points}), title=_title)
    write_atomic(path, lambda fh: fh.write(html.encode()))
    return path
