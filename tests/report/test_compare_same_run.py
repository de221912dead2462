"""`harness compare` given one run twice, a B that timed nothing itself, and the ratio's header (walk 21:
`compare runs/first runs/first` said `none judged (too few rounds, below)` over rows of `3, 3`, the reason
last; the header said `paired rounds` of Welch's unpaired t and took 4 lines at 100 columns)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.record.run_record import RECORD, RunRecord, save_record
from harness.report.compare import compare_records
from harness.report.compare_view import compare_table, ratio_header, summary_line

from .test_compare_steps import MAIN_RUN
from .test_run_screen import draw, real


def _refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one line `compare` refuses with (exit 2), nothing on stdout."""
    assert cli.main(["compare", *args]) == 2
    out, err = capsys.readouterr()
    assert not out and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


def test_one_run_given_twice_is_refused_before_any_comparing(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The same folder, it and its record.json, through `..`, and a copy of it: one run, refused in one line."""
    real("main_job", tmp_path)
    first = str(tmp_path / "main_job")
    err = _refused(capsys, first, first)
    assert err.endswith(f"{first} and {first} are the same run: compare two runs of one spec "
                        "(harness run SPEC again makes a second)")
    _refused(capsys, first, str(tmp_path / "main_job" / RECORD))
    _refused(capsys, first, str(tmp_path / "main_job" / ".." / "main_job"))
    shutil.copytree(first, tmp_path / "copy")
    assert "are the same run" in _refused(capsys, first, str(tmp_path / "copy"), "--html", str(tmp_path / "c.html"))
    assert not (tmp_path / "c.html").exists()


def _saved(record: RunRecord, folder: Path) -> str:
    folder.mkdir()
    save_record(record, folder)
    return str(folder)


def test_records_without_run_ids_are_one_run_by_start_and_command(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """main_job's record predates run ids: its start and command tell a copy from a second run."""
    a = real("main_job", tmp_path)
    assert a.bench is not None and not a.bench.run_id
    first = str(tmp_path / "main_job")
    assert "are the same run" in _refused(capsys, first, _saved(a, tmp_path / "copy"))
    later = a.model_copy(update={"started": "2026-11-25T10:39:01+00:00"})
    assert cli.main(["compare", first, _saved(later, tmp_path / "second")]) == 0
    capsys.readouterr()


def _pooled_all(a: RunRecord) -> RunRecord:
    """A second run that timed none of its groups itself: every round it holds was pooled from A."""
    b = a.model_copy(deep=True, update={"started": "2026-11-25T10:39:01+00:00"})
    assert b.bench is not None
    b.bench.run_id = "second"
    for g in (g for an in b.analyses for t in an.timings for g in t.groups):
        g.pooled = len(g.rounds)
    return b


def test_a_run_that_timed_nothing_itself_says_so_first_and_writes_its_rounds_as_pooled(tmp_path: Path) -> None:
    a = real("main_job", tmp_path)
    c = compare_records(a, _pooled_all(a), ("runs/first", "runs/second"))
    n = len(c.rows)
    assert summary_line(c) == (f"B against A, {n} groups: none judged (B timed none of them itself, every round it "
                               "holds was pooled from A, below)")
    _text, _words, values = draw([compare_table(c)], 160)
    rounds = [v for v in values if v.startswith("2, ")]
    assert rounds == ["2, 0+2"] * n  # B's own table's notation: all pooled
    assert c.not_judged and c.not_judged.endswith(f"time B anew: `{MAIN_RUN} -o runs/second-anew --fresh`, then "
                                                  "`harness compare runs/first runs/second-anew`")


@pytest.mark.parametrize("width", [100, 106, 110, 160])
def test_the_compare_header_takes_two_lines_at_most_each_header_whole(tmp_path: Path, width: int) -> None:
    """At 100 columns with the medians shown and narrow ratio cells (no interval), and at 160."""
    a = real("main_job", tmp_path)
    c = compare_records(a, _pooled_all(a), ("runs/first", "runs/second"))
    table = compare_table(c)
    assert ratio_header(c) == "B / A (99% CI)"
    text, _words, _values = draw([table], width)
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line.strip()) == {"─"})
    assert 1 <= rule <= 2 and lines[rule - 1].startswith("analysis")  # the header: 2 lines at most
    # the medians are drawn at 160; at 100 they leave, so that `rounds A, B` stays whole (walk 23: `rounds A,` over `B`)
    medians = " ".join(lines[:rule]).count("median")  # both or neither, and both at 160
    assert medians == 2 if width == 160 else medians == 0 if width == 100 else medians in (0, 2)
    # each header on one line (walk 23 at 104-111 columns: `B / A (99%` over `CI)`)
    assert all(any(header in line for line in lines[:rule]) for header in ("rounds A, B", "B / A (99% CI)")), lines[:rule]
    assert "paired" not in text

