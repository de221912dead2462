"""`harness plan`'s lines: the busy caveat said once per plan, not once per estimate (a
walk-through's top3 at 100 columns was 11 lines, the caveat six times), and each figure labelled
with what it is of: the whole analysis, or the rounds of the timed sample."""

from __future__ import annotations

import pytest

from harness.machine.wisdom import BUSY, BUSY_USE
from harness.plan.calibration import SCALED
from harness.report.plan_view import BUSY_MARK, TIMED, WHOLE, plan_lines, plan_table
from tests.plan.test_calibration import _measured, _plan


def test_the_busy_caveat_is_said_once_and_each_busy_estimate_marked() -> None:
    pytest.importorskip("torch")
    plan = _plan(_measured({"gram_eigh": 4.0, "numpy": 4.0, "torch": 3.0, "factored": 2.0}, busy=0.69))
    lines = plan_lines(plan)
    caveats = [line for line in lines if BUSY_USE in line]
    assert caveats == [f"{BUSY_MARK} {BUSY}: other processes took up to 69% of the CPUs then; {BUSY_USE}"]
    # the scaling, said once too: numpy's backend by its own median (4x), torch's by the machine's (4, 4, 3, 2)
    assert [line for line in lines if SCALED in line] == [f"modelled x3.5, x4: {SCALED}"]
    estimates = next(line for line in lines if line.startswith("  estimates: "))
    assert f"{BUSY}{BUSY_MARK} (2026-11-28, 5 samples) (numpy, torch, factored, gram_eigh)" in estimates
    assert estimates.count(BUSY) == 1 and "% of the CPUs" not in estimates
    quiet = plan_lines(_plan(_measured({"numpy": 1.0}, busy=None)))
    assert not any(BUSY_USE in line or BUSY in line for line in quiet)


def test_the_whole_analysis_and_the_timed_sample_are_labelled_apart() -> None:
    plan = _plan(None)
    assert WHOLE in [column.header for column in plan_table(plan).table.columns]
    lines = plan_lines(plan)
    step = plan.steps[0]
    assert lines[0].startswith(f"{step.analysis}: auto: fastest exact strategy (est. of the whole analysis ")
    assert lines[1].startswith(f"  timed ({TIMED}): ") and "whole analysis" not in lines[1]
