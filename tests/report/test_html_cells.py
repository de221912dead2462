"""Walk 16's HTML cells on its first smoke record: the measurement cell's grammar and rounds in the
words stderr uses, the per-matrix `!` the terminal and md show, the tables' notes as a list, and a
measurement's reasons in one cause order in every output."""

from __future__ import annotations

import csv
import html as html_lib
import io
import json
import re
from pathlib import Path

from harness.base.units import format_seconds
from harness.bench.noise import cause_rank
from harness.report.exports import results_csv, results_json
from harness.report.html import render_report
from harness.report.labels import SPREAD_HEADER, UNSTABLE_MARK
from harness.bench.noise import reasons_text

from .test_run_screen import real


def _page(tmp_path: Path) -> str:
    record = real("first_smoke", tmp_path)
    return html_lib.unescape(render_report(record, tmp_path / "first_smoke"))


def test_the_measurement_cell_counts_agree_and_says_the_rounds_in_each_process(tmp_path: Path) -> None:
    """`4 of 12 matrices timed, 2 samples, 1 threads planned: 1 round in 3 processes` and `1 samples`."""
    cells = re.findall(r"</summary>(.*?)<br>(.*?)<br>", _page(tmp_path))
    assert len(cells) >= 9
    for first, planned in cells:
        counts = re.fullmatch(r"\d+ of \d+ matrices timed, (\d+) (samples?), (\d+) (threads?)", first)
        assert counts, first
        for n, word in (counts.group(1, 2), counts.group(3, 4)):
            assert word.endswith("s") == (n != "1"), first
        assert re.match(r"\d+ rounds? planned in each of 3 processes, ", planned), planned
    assert any(", 1 sample, " in first for first, _ in cells)  # geometry's: walk 16's `1 samples`


def test_a_per_matrix_cell_carries_the_unstable_mark_as_the_terminal_does(tmp_path: Path) -> None:
    """Walk 16: HTML `228 µs`, terminal and md `228 µs !`."""
    record = real("first_smoke", tmp_path)
    page = html_lib.unescape(render_report(record, tmp_path / "first_smoke"))
    timings = [t for a in record.analyses for t in a.timings]
    assert any(t.unstable for t in timings)
    for t in timings:
        mark = f" {UNSTABLE_MARK}" if t.unstable else ""
        assert f'<td class="num">{format_seconds(t.seconds_per_matrix)}{mark}</td>' in page, t.label


def test_how_to_read_the_tables_is_a_list_an_item_a_column_or_mark(tmp_path: Path) -> None:
    """Walk 16: one 14-line grey paragraph at 1280 px, hard to scan."""
    page = _page(tmp_path)
    section = page[page.index('id="reading"'):page.index("<h2", page.index('id="reading"'))]
    assert "<p" not in section
    terms = re.findall(r"<li><b>([^<]+)</b>", section)
    for term in ("Role:", "dtype:", "Per matrix:", UNSTABLE_MARK, "Compute total:", f"{SPREAD_HEADER}:", "Speedup:",
                 "Colours:", "Rounds", "GFLOP/s:", "% of peak:", "Measurement:"):
        assert term in terms, term


def test_a_measurements_reasons_read_in_cause_order_wherever_they_are_listed(tmp_path: Path) -> None:
    """Walk 16: `IQR …; other processes …; load …` in one csv row, `other processes …; load …; IQR …`
    in the next, and the HTML's notes as recorded; a record's reasons may come in any order."""
    record = real("first_smoke", tmp_path)
    t = record.analyses[0].timings[0]
    for g in t.groups:
        g.measurement.unstable = True
        g.measurement.reasons = ["IQR 40% of median", "load 8.5 on 2 cores", "other processes took 87% of the 2 CPUs"]
    ordered = sorted(t.groups[0].measurement.reasons, key=cause_rank)
    assert ordered != t.groups[0].measurement.reasons
    page = html_lib.unescape(render_report(record, tmp_path / "first_smoke"))
    # a group's reasons on one line, as timings.csv and --verbose say them (walk 22)
    notes = [f'<span class="warn">unstable</span> {g.group}: {"; ".join(ordered)}' for g in t.groups]
    assert "<br>".join(notes) in page
    row = next(r for r in csv.DictReader(io.StringIO(results_csv(record))) if r["strategy"] == t.label)
    assert row["unstable_why"] == "; ".join(ordered)
    (first,) = [r for r in json.loads(results_json(record))["results"] if r["strategy"] == t.label
                and r["analysis"] == record.analyses[0].name]
    assert first["unstable_why"] == "; ".join(ordered)
    assert reasons_text(t.groups[0].measurement.reasons) == "; ".join(ordered)  # --verbose's line
