"""Walk 18's compare chart: a too-wide row (rounds enough, an interval over 100x) was a bare grey point
whose kind only the caption named; its square has a legend entry of its own, and a chart without one
has no such entry."""

from __future__ import annotations

from pathlib import Path

from harness.report import ratio_chart
from harness.report.compare import Comparison, compare_records
from harness.report.html import write_compare

from .test_compare_figures import _timed
from .test_run_screen import real

WIDE = "interval over 100x wide, no test"
FEW = "too few rounds for the test"


def _legend(a: list[float], b: list[float], tmp_path: Path) -> tuple[list[str], set[str], Comparison]:
    """The chart's legend texts, and the markers its points are drawn with (not its bars' caps), for A's
    and B's rounds."""
    tmp_path.mkdir(exist_ok=True)
    record = real("main_job", tmp_path)
    c = compare_records(_timed(record, "A", a), _timed(record, "B", b), ("a", "b"))
    ax = ratio_chart.ratio_figure(c).axes[0]
    legend = ax.get_legend()
    assert legend is not None
    return [t.get_text() for t in legend.get_texts()], {line.get_marker() for line in ax.lines} & set("osD"), c


def test_a_too_wide_row_has_its_own_legend_entry_and_only_it(tmp_path: Path) -> None:
    texts, markers, c = _legend([1.0, 4.0], [1.5, 5.0], tmp_path)  # 2 scattered rounds a side: every row too wide
    assert WIDE in texts and FEW not in texts and markers == {"s"}
    assert f"Grey square, no bar: {WIDE}." in write_compare([c], tmp_path / "c.html").read_text()  # the caption
    texts, markers, _ = _legend([1.0], [1.5, 5.0], tmp_path / "few")  # one round on a side: too few, not wide
    assert FEW in texts and WIDE not in texts and markers == {"o"}
    texts, _, _ = _legend([1.0, 1.1, 1.2], [1.3, 1.4, 1.5], tmp_path / "narrow")
    assert WIDE not in texts and FEW not in texts
