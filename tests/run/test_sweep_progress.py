"""The sweep's live row (walk-through 8): it said `sweep point 1 of 5: data.ran… 0/?`, no total,
no ETA for the whole sweep, its label cut at 100 columns."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from harness.base.progress import Display
from harness.run import sweep
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
