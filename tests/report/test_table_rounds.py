"""The rounds cell and the `not timed again` line of a strategy this run timed on some of its shape
groups only (walk 17: `top3 torch ... 8 reused` while this run had timed it on 3072x768r16, and the
line under the table named torch_lowrank alone, not torch's group left untimed)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from harness.record.run_record import RunRecord
from harness.report.exports import results_csv, results_json
from harness.report.labels import ROUNDS_NOTE, rounds_text
from harness.report.terminal import run_table, untimed_lines

from .test_run_screen import real


def test_a_strategy_timed_on_one_group_is_not_called_reused_and_its_other_group_is_named(tmp_path: Path) -> None:
    record = real("main_job", tmp_path)
    top3 = next(a for a in record.analyses if a.name == "top3")
    lowrank, torch = (next(t for t in top3.timings if t.label == label) for label in ("torch_lowrank", "torch"))
    for g in lowrank.groups:
        g.pooled = len(g.rounds)  # every round reused: this run timed none of it
    timed, untimed = torch.groups
    timed.pooled, untimed.pooled = len(timed.rounds) - 1, len(untimed.rounds)  # this run timed one group once
    lowrank.settled = torch.settled = False
    n = len(untimed.rounds)
    assert rounds_text(lowrank) == f"0+{n}"  # none timed by this run, as --explain defines it
    assert "0+3, none timed by this run" in ROUNDS_NOTE
    assert rounds_text(torch) == f"0+{n}"  # its fewest group: this run timed the other one
    assert "0+6: this run timed another of them" in ROUNDS_NOTE
    (line,) = [line for line in untimed_lines(record) if line.startswith("not timed again")]
    assert f"top3 torch_lowrank ({n} reused rounds), top3 torch on {untimed.group} ({n} reused rounds);" in line
    assert f"top3 torch on {timed.group}" not in line


def _header_lines(record: RunRecord) -> int:
    """How many lines the table's header takes at 100 columns in a pipe (`COLUMNS=100 harness run > out`)."""
    console = Console(width=100, file=io.StringIO(), record=True, color_system=None, force_terminal=False)
    console.print(run_table(record))
    lines = console.export_text().splitlines()
    return next(k for k, line in enumerate(lines) if set(line.strip()) == {"─"})


@pytest.mark.parametrize("name", ["small_reused", "main_job"])
def test_the_header_takes_one_line_at_100_columns_whether_or_not_a_row_is_all_earlier_runs(name: str, tmp_path: Path) -> None:
    """Walk 18 (small_reused: `COLUMNS=100 harness run ... -o runs/small`): top3 torch_lowrank's
    `8 reused` widened the rounds column, so `max error` split onto two header lines in that run
    alone; `0+8` is no wider than the cells of any other run."""
    record = real(name, tmp_path)
    lowrank = next(t for a in record.analyses if a.name == "top3" for t in a.timings if t.label == "torch_lowrank")
    if name == "small_reused":  # as that run left it: earlier runs' rounds alone (its record was overwritten since)
        for g in lowrank.groups:
            g.pooled = len(g.rounds)
        assert rounds_text(lowrank) == f"0+{len(g.rounds)}"
    assert _header_lines(record) == 1


def test_the_csv_and_json_name_the_group_a_rows_rounds_are_of(tmp_path: Path) -> None:
    """Walk 18: csv's top3 torch read `rounds 4, rounds_this_run 0, rounds_pooled 4, timing timed`,
    this run having timed its other group: the row names the group its rounds count."""
    record = real("main_job", tmp_path)
    torch = next(t for a in record.analyses if a.name == "top3" for t in a.timings if t.label == "torch")
    timed, untimed = torch.groups
    timed.pooled, untimed.pooled = len(timed.rounds) - 1, len(untimed.rounds)
    torch.rounds, torch.rounds_pooled = len(untimed.rounds), untimed.pooled
    row = next(r for r in csv.DictReader(io.StringIO(results_csv(record))) if (r["analysis"], r["strategy"]) == ("top3", "torch"))
    assert (row["rounds_this_run"], row["rounds_group"], row["timing"]) == ("0", untimed.group, "timed")
    data = json.loads(results_json(record))["results"]
    assert {(r["strategy"], r["rounds_group"]) for r in data if r["analysis"] == "geometry"} == {
        ("dual_gram", "positions"), ("factored_gram", "positions")}
    assert "`rounds_group` (the shape group they count" in " ".join((Path(__file__).parents[2] / "docs" / "outputs.md").read_text().split())
