"""The rounds cell and the `not timed again` line of a strategy this run timed on some of its shape
groups only (walk 17: `top3 torch ... 8 reused` while this run had timed it on 3072x768r16, and the
line under the table named torch_lowrank alone, not torch's group left untimed)."""

from __future__ import annotations

from pathlib import Path

from harness.report.labels import ROUNDS_NOTE, rounds_text
from harness.report.terminal import untimed_lines

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
    assert rounds_text(lowrank) == f"{n} reused"  # none timed by this run, as --explain defines it
    assert rounds_text(torch) == f"0+{n}"  # its fewest group: this run timed the other one
    assert "0+6: this run timed another of them" in ROUNDS_NOTE
    (line,) = [line for line in untimed_lines(record) if line.startswith("not timed again")]
    assert f"top3 torch_lowrank ({n} reused rounds), top3 torch on {untimed.group} ({n} reused rounds);" in line
    assert f"top3 torch on {timed.group}" not in line
