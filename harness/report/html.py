"""The self-contained HTML report of a run folder, and of a comparison of runs: Jinja2 templates
(package data) filled with the record's numbers and inline SVG charts; nothing is fetched when
the page is opened."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape
from rich.text import Text

from harness.report.compare import Comparison
from harness.report import charts, pca_chart, roofline_chart
from harness.report.compare_view import ROUNDS_CELLS, summary_line, table_notes, unstable_summary
from harness.report.ratio_chart import ratio_caption, ratio_figure
from harness.report.heatmap import heatmap_table
from harness.report.frontier import TIE, points as frontier_points
from harness.report.artifacts import decay_bands, feature_grids, read_features, read_pca
from harness.record.verdict import significance
from harness.report.labels import (DTYPE_NOTE, PER_MATRIX_NOTE, COMPUTE_TOTAL, RESUMED, table_footnotes, BENCH_ROUNDS_NOTE, COMPUTED_NOTE, PEAK_NOTE, ROLES_NOTE, ROUNDS_NOTE, SPEEDUP_NOTE, SPREAD_HEADER, SPREAD_NOTE, UNSTABLE_MARK, VERIFIED_NOTE,
                                   check_status, device_library, device_text, dtype_text, per_matrix_text, precision_text,
                                   peak_text, rounds_text, speedup_figures, spread, strategy_label, total_text,
                                   verdict_lines)
from harness.report.unstable import measurement_count, unstable_causes, unstable_measurements
from harness.report.unresolved import quieter_advised
from harness.report.plan_view import missed_note
from harness.report.terminal import UNRESOLVED_EACH, axes_summary, bench_summary, unstable_head, untimed_rows, warning_lines
from harness.base.atomic import write_atomic
from harness.record.run_record import AnalysisRecord, RunRecord, StrategyTiming, load_record
from harness.base.units import (format_bytes, format_p, format_ratio, format_rate, format_seconds, format_speedup,
                                 p_clause, plural)
from harness.bench.budget import estimate_parts, rounds_note
from harness.plan.model import Timed

REPORT = "report.html"


@functools.cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("harness", "report/templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["seconds"] = format_seconds
    env.filters["total"] = total_text
    env.filters["bytes"] = format_bytes
    env.filters["speedup"] = format_speedup
    env.filters["rounds_text"] = rounds_text
    env.filters["dtype"] = lambda precision: dtype_text(precision, False)  # the frontier's: compiled is its own column
    env.filters["sci"] = lambda x: "-" if x is None else f"{x:.1e}"
    env.filters["ratio"] = format_ratio
    env.filters["p"] = format_p
    env.filters["p_clause"] = p_clause
    env.filters["rate"] = format_rate
    env.filters["prose"] = prose
    env.filters["planned"] = plan_note
    env.filters["device"] = device_text
    env.filters["parts"] = estimate_parts
    return env


def prose(text: str) -> Markup:
    """A line of the terminal's prose as HTML: escaped, then each `code` span a <code> (the
    terminal's backticks showed as typed in a page's headline) whose words never break inside:
    each a nowrap span, so a command breaks only between words (walk 22: Chromium broke `--force` at its
    dashes, "-o FOLDER --" / "force --fresh")."""
    def code(span: re.Match[str]) -> str:
        return '<code class="cmd">' + " ".join(f'<span class="word">{w}</span>' for w in span[1].split(" ")) + "</code>"

    return Markup(re.sub(r"`([^`]+)`", code, str(escape(text))))


def _timing_rows(record: RunRecord, analysis: AnalysisRecord) -> list[dict[str, Any]]:
    rows = []
    for t in analysis.timings:
        rows.append(
            {
                "timing": t,
                "device": device_text(t.device),
                "significance": significance(t),
                "unstable": sum(g.measurement.unstable for g in t.groups),
                "label": strategy_label(analysis, t.label, analysis.computed(t)),  # as the terminal table writes it
                "precision": precision_text(record, t),  # the terminal's and md's `f32+c` (walk 18: `float32, compiled`)
                "per_matrix": per_matrix_text(t.seconds_per_matrix, bool(t.unstable)),  # the terminal's cell, its `!` too
                "spread": spread(t),
                # (unstable?, text): what was timed, reused or planned, and why a measurement is unreliable
                "notes": [(False, _timed_text(t))]
                + ([(False, "reused from an earlier run on this machine")] if t.cached else [])
                + ([(False, RESUMED)] if t.resumed else [])
                + ([(False, planned)] if (planned := _planned(record, analysis, t)) else []) + [(True, r) for r in t.unstable],
                "gflops": t.gflops_per_s,
                "share": peak_text(record, t),
                "speedup": speedup_figures(analysis, t),  # a busy run's two figures break between them
            }
        )
    return rows


def _lead(note: str, term: str) -> tuple[str, str]:
    """(term, the rest): a table note with the words it explains first, set in bold by the page."""
    assert note.startswith(term), term
    return term, note[len(term):]


def _reading(record: RunRecord, extrapolated: bool) -> list[tuple[str, str]]:
    """How to read the tables, one item per column or mark (walk 16: one 14-line grey paragraph),
    each in the terminal's words; `code` spans as the page's prose writes them."""
    total = (" compute only (loading, features and writing are not in it): each shape group's median scaled to "
             "all its matrices" + ("; ~ = extrapolated from a sample of the matrices" if extrapolated else "") + ".")
    return [
        _lead(ROLES_NOTE, "Role:"),
        _lead(DTYPE_NOTE, "dtype:"),
        _lead(PER_MATRIX_NOTE, "Per matrix:"),
        (UNSTABLE_MARK, " beside a per-matrix time: measured under unreliable conditions; its measurement cell says why."),
        (f"{COMPUTE_TOTAL.capitalize()}:", total),
        _lead(SPREAD_NOTE + ".", f"{SPREAD_HEADER}:"),
        _lead(SPEEDUP_NOTE, "Speedup:"),
        ("Colours:", " green, faster; red, slower, both beyond the interval; grey, not significant."),
        _lead(f"{ROUNDS_NOTE} {BENCH_ROUNDS_NOTE}", "Rounds"),
        ("GFLOP/s:", " achieved, the timed matrices' flops over their median times."),
        _lead(PEAK_NOTE + ("" if record.roofs else " (none measured: run `harness calibrate`)") + ".", "% of peak:"),
        ("Measurement:", " steady, or unstable (how many shape groups); open it for the matrices and samples timed, "
                         "the rounds planned and each reason."),
        _lead(VERIFIED_NOTE, "The max error"),
    ]


def _frontier(record: RunRecord, analysis: AnalysisRecord) -> dict[str, Any] | None:
    """The analysis' accuracy/time frontier: its chart, and its points as rows."""
    found = frontier_points(record, analysis)
    if not found:
        return None
    chart = charts.frontier_chart(record, analysis)
    return {"chart": Markup(chart) if chart else None, "points": found, "tie": f"{TIE:g}",
            "compiled": [(t.label, t.compile_s, t.compile_note) for t in analysis.timings if t.compiled]}


def _timed_text(t: StrategyTiming) -> str:
    """`4 of 12 matrices timed, 6 samples, 1 thread`: what the measurement cell's rows stand on
    (walk 16 read "1 samples, 1 threads")."""
    threads = sorted({_threads(g.measurement.threads) for g in t.groups} - {""})
    return (f"{sum(g.sampled for g in t.groups)} of {plural(sum(g.total for g in t.groups), 'matrix', 'matrices')} timed, "
            f"{plural(sum(len(g.measurement.samples_s) for g in t.groups), 'sample')}"
            + (f", {'; '.join(threads)}" if threads else ""))


def _threads(counts: dict[str, int]) -> str:
    """`2 threads` when every pool had 2, else each pool's count (`openblas 1, openmp 2 threads`)."""
    values = set(counts.values())
    if len(values) == 1:
        return plural(values.pop(), "thread")
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + " threads" if counts else ""


def plan_note(timed: Timed) -> str:
    """The rounds the plan gave a point, in bench.budget's words from its allocations: a record from
    before them says "1 round in 3 processes", which walk 16 read as one round spread over three (its
    own note where it has no allocations)."""
    return rounds_note(timed.allocations) or timed.cut or ""


def _planned(record: RunRecord, analysis: AnalysisRecord, t: StrategyTiming) -> str:
    """plan_note of the plan's point of the timing (the record's note where the plan has none)."""
    timed = next((x for s in record.plan.steps if s.analysis == analysis.name for x in s.timed
                  if x.label == t.label), None)
    return plan_note(timed) if timed is not None else t.cut or ""


def _spectra(bands: dict[str, Any], analysis: str) -> Markup | None:
    if analysis not in bands:
        return None
    return Markup(charts.decay_chart(bands[analysis], f"{analysis}: singular values"))


def _pca(folder: Path, record: RunRecord) -> list[dict[str, Any]]:
    sections = []
    axes = {a.name: axes_summary(a) for a in record.analyses}
    for analysis, arrays in sorted(read_pca(folder).items()):
        scores, cosine = arrays.get("scores"), arrays.get("cosine")
        n = next((len(a) for a in (scores, cosine) if a is not None), 0)
        labels = [str(a) for a in arrays["adapters"]] if "adapters" in arrays else [f"#{i}" for i in range(n)]
        ratio = arrays.get("explained_variance_ratio")
        sections.append(
            {
                "analysis": analysis,
                "axes": axes.get(analysis),
                "ratio": None if ratio is None else [f"{100 * r:.1f}%" for r in np.atleast_1d(ratio)[:5]],
                "scatter": None if scores is None or scores.ndim != 2 or scores.shape[0] != len(labels)
                else Markup(pca_chart.pca_scatter(scores, labels, ratio, f"{analysis}: adapters on PC1/PC2")),
                "cosine": None if cosine is None or cosine.shape != (len(labels), len(labels))
                else heatmap_table(cosine, labels, labels, f"{analysis}: cosine similarity", "adapter", "adapter"),
            }
        )
    return sections


def _no_roofline(record: RunRecord) -> str:
    """Why a record has no timing to draw: an interrupted run timed nothing, an old record has no
    flop counts; a whole run without either timed nothing that has a cost model."""
    if not record.complete and not any(a.timings for a in record.analyses):
        return "the run was interrupted before any strategy was timed."
    if record.schema_version < 3:
        return f"this record is of schema {record.schema_version}; flop and byte counts came with schema 3."
    return "no timing in this record has flop and byte counts."


def _headline(record: RunRecord) -> dict[str, Any]:
    """What the page says first, in the terminal's words: every analysis' verdict (or why it has
    none: never timed, no baseline), the terminal's warnings in its order (not timed, unresolved:
    the page said them sections lower), and last its unreliable measurements by cause, counted as
    the terminal counts them, with what to do."""
    unstable = unstable_measurements(record)
    warnings = [Text.from_markup(line).plain for line in warning_lines(record, unstable_line=False, report=True)]
    each = [line for line in warnings if line.startswith(UNRESOLVED_EACH)]  # folded under their count's line
    why, n, of = unstable_causes(unstable), len(unstable), measurement_count(record)  # (walk 20: 7 of 9 bold lines)
    head = warnings[warnings.index(each[0]) - 1] if each else None  # the line that counts them
    return {"verdicts": verdict_lines(record), "warnings": [w for w in warnings if w not in each],
            "unresolved_each": [line.removeprefix(UNRESOLVED_EACH) for line in each], "unresolved_head": head,
            "unstable": why.causes,  # whose rounds in the lead
            "unstable_lead": why.lead(unstable_head(record, unstable)),  # the terminal's words
            "unstable_count": n, "measurements": of, "advised": quieter_advised(record)}  # its re-run said once


def _roofline(record: RunRecord) -> dict[str, Any]:
    """The roofline chart of every timing with flop and byte counts, and what its roofs are;
    without a chart, why."""
    points = roofline_chart.roofline_points(record)
    dtype = record.plan.dtype
    devices = sorted({p.device for p in points})
    return {
        "chart": Markup(roofline_chart.roofline_chart(points, record.roofs, dtype)) if points else None,
        "roofs": [f"{roofline_chart.roof_label(r, dtype)} ({r.by}, {r.measured[:10]}"
                  + (f", {r.threads} threads" if r.threads else "") + ")"
                  for _, r in sorted(record.roofs.items())],
        "missing": [d for d in devices if d not in record.roofs or record.roofs[d].peak(dtype) is None],
        "why_none": None if points else _no_roofline(record),
        "above": roofline_chart.above_text(points, record.roofs, dtype),
    }


def render_report(record: RunRecord, folder: Path) -> str:
    bands = decay_bands(folder)
    analyses = [
        {
            "record": a,
            "anchor": f"analysis-{a.name}",
            "device": device_library(a.device)[0],
            "library": device_library(a.device)[1],
            "rows": _timing_rows(record, a),
            # what was not timed and why, then its status as the tables give it (its check's where it answered)
            "untimed": [(label, timing, why, check_status(a, label, timing)) for label, _role, timing, why in untimed_rows(record, a)],
            "checks": [(strategy_label(a, v.strategy), v) for v in a.verification],
            "chart": Markup(charts.timing_chart(a)) if a.timings else None,
            "frontier": _frontier(record, a),
            "spectra": _spectra(bands, a.name),
            "footnotes": [note for _column, note in table_footnotes(record, [a])],  # every column is drawn
        }
        for a in record.analyses
    ]
    heatmaps = [
        {"title": f"{analysis}: {metric} ({module})",
         "svg": heatmap_table(grid, adapters, layers, f"{metric}, {module}: adapter x layer", "layer", "adapter")}
        for (analysis, metric, module), (grid, adapters, layers) in feature_grids(read_features(folder)).items()
    ]
    extrapolated = any(t.extrapolated for a in record.analyses for t in a.timings)
    return environment().get_template("report.html.j2").render(
        record=record, machine=record.machine, analyses=analyses, heatmaps=heatmaps, pca=_pca(folder, record),
        headline=_headline(record),
        roofline=_roofline(record), bench=bench_summary(record), missed=missed_note(record),
        reading=_reading(record, extrapolated),
        notes={"computed": COMPUTED_NOTE, "spread_header": SPREAD_HEADER, "compute_total": COMPUTE_TOTAL},
    )


def write_report(folder: Path, output: Path | None = None) -> Path:
    """Render the run folder's report to `output` (default: the folder's report.html)."""
    record = load_record(folder)
    folder = folder if folder.is_dir() else folder.parent
    path = output or folder / REPORT
    html = render_report(record, folder)
    write_atomic(path, lambda fh: fh.write(html.encode()))
    return path


def write_compare(comparisons: list[Comparison], path: Path) -> Path:
    """The comparison page: per B, its table and its chart of B/A ratios with their spread."""
    several = len(comparisons) > 1
    sections = [{"c": c, "chart": Markup(charts.to_svg(ratio_figure(c))) if c.rows else None, "caption": ratio_caption(c),
                 "summary": summary_line(c, several), "unstable": unstable_summary(c),  # a line, a list
                 "notes": [line for _column, line in table_notes(c)]} for c in comparisons]  # the terminal's, every column drawn
    page = environment().get_template("compare.html.j2")
    html = page.render(comparisons=comparisons, sections=sections, rounds_cells=ROUNDS_CELLS)
    write_atomic(path, lambda fh: fh.write(html.encode()))
    return path
