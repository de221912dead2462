"""A sweep point whose measurement is too wide to read is said so (walk 24, configs/sweep_rank.toml at load 7.8-10.4):
rank 64's factored `17.6x (0.0243-12,737)` over numpy in the crossover's clause and `6 µs-245 ms` in the Points
table were passed on as ordinary figures, the chart drawing a bar from 6 µs to 250 ms. Every view now says `too
wide` as the run's tables do, and a line names the point and the command that re-runs it alone."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from matplotlib.collections import LineCollection

from harness.cli.main import parser
from harness.plan.sweep import sweep_points
from harness.record.sweep_fits import fit_sweep
from harness.record.sweep_record import SweepRecord
from harness.record.verdict import TOO_WIDE
from harness.report.sweep import pick_rows, shown_points, sweep_lines, sweep_markdown
from harness.report.sweep_page import render_sweep, scaling_figure
from harness.specs.reading import SpecError, load_spec
from tests.report.test_sweep_noise import walk16

ROOT = Path(__file__).parents[2]


def walk24() -> SweepRecord:
    """Walk 16's second run with rank 64's factored as walk 24 measured it: 1.21 ms (6 µs-245 ms) per matrix,
    17.6x (0.0243-12,737) over numpy in paired rounds."""
    record = walk16(2)
    [point] = [p for p in record.points if p.values["data.rank"] == 64]
    factored = next(t for t in point.timings if t.strategy == "factored")
    point.timings[point.timings.index(factored)] = factored.model_copy(update={
        "seconds": 1.21e-3, "low": 6e-6, "high": 0.245, "paired": (0.0243, 12_737.0), "speedup": 17.6})
    return fit_sweep(record)


def test_a_too_wide_point_is_said_too_wide_in_the_words_and_tables() -> None:
    record = walk24()
    lines = sweep_lines(record)
    said = " ".join(lines)
    assert "12,737" not in said and "0.0243" not in said
    assert ("not at data.rank=64: factored 17.6x over numpy in paired rounds, its interval too wide to read, an "
            "unusable measurement") in said
    assert {r["point"]: r["agrees"] for r in pick_rows(record)}["data.rank=64"] == (
        "yes, not told apart from numpy (17.6x, paired interval too wide)")
    [row] = [r for r in shown_points(record) if r["point"] == "data.rank=64" and r["strategy"].startswith("factored")]
    assert (row["per matrix"], row["95% interval"]) == ("1.21 ms", TOO_WIDE)
    assert "| 1.21 ms | too wide |" in sweep_markdown(record) and "| 6 µs-" not in sweep_markdown(record)


def test_the_unusable_points_line_gives_a_command_the_cli_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The line's command runs that point alone: the swept key set by itself is refused (each point sets its own),
    so it sets `sweep={}` too, as the point's run did."""
    monkeypatch.chdir(ROOT)
    [line] = [line for line in sweep_lines(walk24()) if "unusable, the 95% interval" in line]
    assert line.startswith("at data.rank=64, spectrum factored: its measurement is unusable, the 95% interval too wide")
    command = line.split("`")[-2]
    words = shlex.split(command)
    assert words[:2] == ["harness", "run"]
    args = parser("run").parse_args(words[1:])
    assert sweep_points(args.spec, args.set) is None  # an ordinary spec: no sweep left
    spec = load_spec(args.spec, args.set)
    assert spec.data.rank == 64 and not spec.sweep
    with pytest.raises(SpecError, match="data.rank is swept"):
        sweep_points(args.spec, ["data.rank=64"])


def test_the_chart_draws_no_error_bar_for_a_too_wide_point_and_says_so() -> None:
    record = walk24()
    ax = scaling_figure(record, record.fits).axes[0]
    bars = [s for c in ax.collections if isinstance(c, LineCollection) for s in c.get_segments()]
    assert bars and all(max(s[:, 1]) / min(s[:, 1]) < 1e3 for s in bars)  # no bar from 6 µs to 245 ms
    assert TOO_WIDE in [t.get_text() for t in ax.texts]
    page = render_sweep(record)
    assert "Drawn without an error bar, marked too wide: factored at rank 64" in page
