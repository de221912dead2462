"""`harness compare` read beside each run's own table (walk 9, "compare"): the group kept at 100
columns, the rounds in the run tables' notation, B / A in one format on every view, and the notes
under the terminal's table on the HTML page too."""

from __future__ import annotations

import html
import json
from pathlib import Path

from rich.console import Console
from rich.text import Text

from harness.record.run_record import RunRecord
from harness.report import ratio_chart
from harness.report.compare import CompareOutput, Comparison, compare_records
from harness.report.compare_view import compare_table
from harness.report.html import write_compare
from harness.report.labels import rounds_text

from .test_run_screen import draw, real


def _resumed(a: RunRecord) -> RunRecord:
    """B as walk 9's runs/main: A's rounds and an earlier run's pooled, 2 of its own, resumed in its
    folder (its table: `2+4 resumed`); its second spectrum group a round short of its own."""
    b = a.model_copy(deep=True)
    for an in b.analyses:
        for t in an.timings:
            t.resumed = True
            for g in t.groups:
                own = [r.replace("2026", "2028") for r in g.rounds]
                g.rounds = g.rounds + [r.replace("2026", "2027") for r in g.rounds] + own
                g.pooled = len(g.rounds) - len(own)
                g.measurement.samples_s = g.measurement.samples_s * 3
    short = b.analyses[0].timings[0].groups[1]
    short.rounds, short.measurement.samples_s = short.rounds[:-1], short.measurement.samples_s[:-1]
    return b


def _compared(tmp_path: Path) -> tuple[RunRecord, RunRecord, Comparison]:
    a = real("main_job", tmp_path)
    b = _resumed(a)
    return a, b, compare_records(a, b, ("runs/first", "runs/main"))


def _columns(c: Comparison, width: int) -> dict[str, list[str]]:
    table = compare_table(c).fit(Console(width=width), width)
    return {str(col.header): [Text.from_markup(str(cell)).plain for cell in col._cells] for col in table.columns}


def test_the_group_tells_a_strategys_rows_apart_at_100_and_160_columns(tmp_path: Path) -> None:
    """`spectrum numpy  1.38 ...` twice at 100 columns: the group had left, the medians stayed (a row
    "too few rounds" among them, as in walk 9, kept its rounds column instead)."""
    a, b, _c = _compared(tmp_path)
    few = b.analyses[-1].timings[-1].groups[0]  # geometry: B timed none of its own, all of its rounds A's
    few.rounds, few.pooled = few.rounds[:2], 2
    few.measurement.samples_s = few.measurement.samples_s[:2]
    c = compare_records(a, b, ("runs/first", "runs/main"))
    assert c.too_few
    for width in (100, 160):
        text, _words, _values = draw([compare_table(c)], width)
        columns = _columns(c, width)
        rows = list(zip([r.analysis for r in c.rows], columns["strategy"], columns["group"]))
        assert len(set(rows)) == len(rows) == len(c.rows)  # no two rows alike
        left = [name for name in ("A median", "B median", "p-value", "rounds A, B") if name not in columns]
        if left:
            assert f"(left out at this width: {', '.join(left)};" in " ".join(text.split())
    assert "A median" not in _columns(c, 100) and "A median" in _columns(c, 160)


def test_the_rounds_read_as_each_runs_own_table(tmp_path: Path) -> None:
    """B's table said `3+6 resumed`, compare `3, 6 (+3 pooled)`; and `1, 2` where B's table said 1."""
    a, b, c = _compared(tmp_path)
    tables = {side: {(an.name, t.label): rounds_text(t) for an in r.analyses for t in an.timings}
              for side, r in (("A", a), ("B", b))}
    cells = _columns(c, 200)["rounds A, B"]
    short = c.rows[1]  # spectrum numpy's second group, a round short of B's others
    for r, cell in zip(c.rows, cells):
        key = (r.analysis, r.strategy + r.variant)
        assert (r.n_a, r.n_b, r.shared) == ((2, 3, 2) if r is short else (2, 4, 2))  # the test as before
        assert cell == ("2, 1+4 r" if r is short else "2, 2+4 r") == f"{r.rounds_a}, {r.rounds_b}"
        if key != ("spectrum", "numpy"):
            assert cell == f"{tables['A'][key]}, {tables['B'][key]}"
    assert tables["B"][("spectrum", "numpy")] == "1+4 r"  # the table gives the fewest over the groups
    note = [line for line in str(compare_table(c).fit(Console(width=200), 200).caption).split("\n")
            if line.startswith("rounds A, B: ")]
    assert note == ["rounds A, B: each row's own group's rounds in A and in B. Rounds B reused from A count as A's "
                    "alone, so no round is compared with itself."]
    note = [line for line in str(compare_table(c, verbose=True).fit(Console(width=200), 200).caption).split("\n")
            if line.startswith("rounds A, B: ")]  # why a row's rounds differ from its run's table: --verbose's
    assert note[0].endswith("A run's table gives a strategy's fewest rounds over its groups, so it differs on spectrum "
                            "numpy on 3072x768r16 (B's table: 1+4 r).")
    as_json = json.loads(CompareOutput(gate=None, passed=True, comparisons=[c]).model_dump_json())
    assert [f"{r['rounds_a']}, {r['rounds_b']}" for r in as_json["comparisons"][0]["rows"]] == cells
    page = write_compare([c], tmp_path / "c.html").read_text()
    assert all(f'<td class="num">{cell}</td>' in page for cell in cells) and "pooled)" not in page


def test_b_over_a_is_written_alike_in_the_tables_and_the_chart(tmp_path: Path) -> None:
    """The tables printed `0.931`, the HTML chart `0.931x`."""
    _a, _b, c = _compared(tmp_path)
    ratios = [cell.split()[0] for cell in _columns(c, 200)["B / A (99% CI)"]]
    assert [t.get_text() for t in ratio_chart.ratio_figure(c).axes[0].texts] == ratios
    page = write_compare([c], tmp_path / "c.html").read_text()
    assert all(f'<td class="num">{ratio}' in page for ratio in ratios)
    assert not any(f"{ratio}x" in page for ratio in ratios)


def test_the_page_carries_every_note_the_terminal_prints_under_its_table(tmp_path: Path) -> None:
    """compare.html lacked the terminal's `1 row with B / A and the medians on either side of 1` (walk 6)."""
    _a, _b, c = _compared(tmp_path)
    r = c.rows[0]
    c.rows[0] = r.model_copy(update={"time_b_s": r.time_a_s * 0.96, "ratio": 1.24, "ratio_ci": (0.279, 5.51)})
    caption = str(compare_table(c).fit(Console(width=400), 400).caption)
    notes = [Text.from_markup(line).plain for line in caption.split("\n")]
    assert any(line.startswith("B / A and the medians' ratio lie on either side of 1 on ") for line in notes)
    assert any(line.startswith("rounds A, B: ") for line in notes)
    page = html.unescape(write_compare([c], tmp_path / "c.html").read_text())
    assert [line for line in notes if line not in page] == []


def test_a_row_whose_tables_both_write_its_rounds_otherwise_is_named_once(tmp_path: Path) -> None:
    """Walk 13: `svd_topk torch on 48x32r4 (A's table: 1), svd_topk torch on 48x32r4 (B's table: 1)`."""
    a = real("main_job", tmp_path)
    b = _resumed(a)
    short = a.analyses[0].timings[0].groups[1]  # A's second spectrum group a round short too
    short.rounds, short.measurement.samples_s = short.rounds[:-1], short.measurement.samples_s[:-1]
    c = compare_records(a, b, ("runs/first", "runs/main"))
    first = c.rows[0]
    assert (first.rounds_a, first.rounds_b) == ("2", "2+4 r")
    assert c.table_rounds == [f"{first.analysis} {first.strategy}{first.variant} on {first.group} (A's table: 1, B's: 1+4 r)"]
