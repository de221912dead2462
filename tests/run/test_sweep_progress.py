"""The sweep's live row (walk-through 8): it said `sweep point 1 of 5: data.ran… 0/?`, no total,
no ETA for the whole sweep, its label cut at 100 columns."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from harness.base.progress import Display
from harness.run import sweep
from harness.run.phase import BenchPhase
from harness.run.rounds import Rounds
from harness.run.session import RunOptions
from tests.conftest import CONFIGS

TINY = ["data.modules.w=[40, 32]", "sweep.data.rank=[2, 4, 8]", "benchmark.warmup=0"]


class Seen(Exception):
    """Stops the sweep once the first point's session is asked for: the display's row is read then."""


def test_the_sweeps_row_counts_its_points_with_an_eta_and_a_label_that_fits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = sweep.plan_sweep(CONFIGS / "sweep_rank.toml", TINY)
    assert plan is not None
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    rows: list[dict[str, object]] = []

    def first_point(*args: object) -> None:
        assert display.progress is not None
        rows.extend({"description": t.description, "total": t.total, "completed": t.completed,
                     "item": str(t.fields["item"]), "units_s": t.fields["units_s"],
                     "estimate_s": t.fields["estimate_s"]} for t in display.progress.tasks)
        raise Seen

    monkeypatch.setattr(sweep, "prepare_session", first_point)
    with pytest.raises(Seen), Display(console) as display:
        sweep.run_sweep(plan, TINY, tmp_path / "out", display, RunOptions())
    assert rows == [{"description": "sweep", "total": 3, "completed": 0, "item": "point 1 of 3: data.rank=2",
                     "units_s": [c.plan.estimate_s for c in plan.contexts], "estimate_s": plan.estimate_s}]


class Starting(BaseException):
    """Stops the point's run as its first timing worker would start (a BaseException: a strategy's
    failure is an Exception, which the rounds keep to that strategy)."""


def test_a_points_row_says_what_it_does_without_a_bar_count_or_eta_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Walk 9: the point's row read `sweep_rank ━━━╸ 0/1 spectrum: 0.0/3.0 s budget 0:00:05 ETA >0:00:15`
    while its workers started: its bar full at 0/1, its clock frozen, its ETA above a whole point's
    ~10 s. The sweep's row carries the bar, count and ETA; the point's names the work under way."""
    plan = sweep.plan_sweep(CONFIGS / "sweep_rank.toml", TINY)
    assert plan is not None
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    rows: list[str] = []

    def starting(*args: object) -> None:
        assert display.progress is not None
        seen = Console(file=io.StringIO(), width=100, record=True)
        seen.print(display.progress.get_renderable())
        rows.extend(line for line in seen.export_text().splitlines() if line.strip())
        raise Starting

    monkeypatch.setattr(BenchPhase, "imported", lambda self: None)  # no forkserver: no worker is started
    monkeypatch.setattr(Rounds, "_spawn", starting)
    with pytest.raises(Starting), Display(console) as display:
        sweep.run_sweep(plan, TINY, tmp_path / "out", display, RunOptions())
    assert len(rows) == 2, rows
    whole, point = (line.split() for line in rows)
    assert whole[1:3] == ["sweep", "0/3"] and "ETA" in whole  # the whole sweep's count and ETA
    assert point[1:-1] == ["sweep_rank", "spectrum:", "starting", "workers"]  # nothing but its elapsed time after
    assert re.fullmatch(r"\d+:\d\d:\d\d", point[-1])
