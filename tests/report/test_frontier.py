"""The accuracy/time frontier: the points no other point beats on both time and error, from a
record whose times and errors are set to a known configuration."""

from __future__ import annotations

import html as html_lib
from pathlib import Path

from harness.base.units import format_seconds
from harness.record.run_record import RunRecord
from harness.report.charts import frontier_figure
from harness.report.frontier import frontier_lines, points
from harness.report.html import render_report
from harness.run.variants import keep_compiled


def test_the_frontier_keeps_exactly_the_undominated_points(smoke_run: tuple[Path, RunRecord]) -> None:
    record = smoke_run[1].model_copy(deep=True)
    a = next(a for a in record.analyses if len(a.timings) >= 2)
    checks = {v.strategy: v for v in a.verification}
    known = [(1.0, 1e-3), (2.0, 1e-6), (3.0, 1e-4), (4.0, 1e-9)][: len(a.timings)]
    for t, (seconds, error) in zip(a.timings, known):
        t.estimate_total_s = seconds
        checks[t.label].values_error, checks[t.label].vectors_error = error, None
    found = {p.seconds: p.on_frontier for p in points(record, a)}
    expected = {1.0: True, 2.0: True, 3.0: False, 4.0: True}
    assert found == {s: expected[s] for s, _ in known}
    assert frontier_figure(record, a).axes[0].get_title().endswith("accuracy/time frontier")
    a.timings[1].variant = "@bfloat16"  # several points per strategy: the terminal prints the frontier
    lines = frontier_lines(record)
    assert lines[0].startswith(f"{a.name} frontier, fastest first") and all(len(line) <= 100 for line in lines)
    assert sum(line.startswith("  ") for line in lines) == sum(expected[s] for s, _ in known)


def test_a_compiled_point_is_kept_only_where_it_beats_its_eager_twin(smoke_run: tuple[Path, RunRecord]) -> None:
    a = next(a for a in smoke_run[1].model_copy(deep=True).analyses if a.timings)
    eager = a.timings[0]
    faster, slower = eager.model_copy(deep=True), eager.model_copy(deep=True)
    faster.compiled, slower.compiled, eager.compiled = True, True, False
    faster.estimate_total_s, slower.estimate_total_s = eager.estimate_total_s / 2, eager.estimate_total_s * 2
    keep_compiled([eager, faster])
    keep_compiled([eager, slower])
    assert faster.kept is True and "2.00x eager, kept" in (faster.compile_note or "")
    assert slower.kept is False and "dropped" in (slower.compile_note or "")
    assert eager.kept is None


def test_a_slower_point_with_an_equal_error_is_not_on_the_frontier(smoke_run: tuple[Path, RunRecord]) -> None:
    """The walk-through's spectrum: a point 2000x slower was 'on the frontier' for an error 0.5%
    lower (2.653e-08 against 2.668e-08), which is sampling noise, not accuracy."""
    record = smoke_run[1].model_copy(deep=True)
    a = next(a for a in record.analyses if len(a.timings) >= 2)
    checks = {v.strategy: v for v in a.verification}
    known = [(0.348, 2.668e-08), (702.73, 2.653e-08), (800.0, 1e-15)][: len(a.timings)]
    for t, (seconds, error) in zip(a.timings, known):
        t.estimate_total_s = seconds
        checks[t.label].values_error, checks[t.label].vectors_error = error, None
    found = {p.seconds: p.on_frontier for p in points(record, a)}
    assert found == {s: {0.348: True, 702.73: False, 800.0: True}[s] for s, _ in known}


def test_the_frontier_table_marks_an_extrapolated_total_as_the_results_table_does(
        smoke_run: tuple[Path, RunRecord]) -> None:
    """The walk-through's frontier table read `485 µs` where the results table above said `~485 µs`."""
    folder, record = smoke_run[0], smoke_run[1].model_copy(deep=True)
    a = next(a for a in record.analyses if points(record, a))
    for t in a.timings:
        t.extrapolated = True
    a.timings[0].variant = a.timings[0].variant or "@float32"  # several points: the terminal prints the frontier
    front = next(p for p in points(record, a) if p.on_frontier)
    t = next(t for t in a.timings if t.label == front.label)
    page = html_lib.unescape(render_report(record, folder))
    frontier = page[page.index(f'id="analysis-{a.name}-frontier"'):]
    frontier = frontier[:frontier.index("</table>")]
    total = "~" + format_seconds(t.estimate_total_s)
    assert f'<td class="num">{total}</td>' in frontier
    assert any(f": {total}, error" in line for line in frontier_lines(record))
