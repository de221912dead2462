"""`harness plan`'s lines: the busy caveat said once per plan, not once per estimate (a
walk-through's top3 at 100 columns was 11 lines, the caveat six times), and each figure labelled
with what it is of: the whole analysis, or the rounds of the timed sample."""

from __future__ import annotations

import pytest

from harness.machine.wisdom import BUSY, BUSY_USE
from harness.plan.calibration import SCALED
from harness.report.plan_view import BUSY_MARK, ESTIMATE, TIMED, WHOLE, plan_lines, plan_table
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
    assert estimates == f"  estimates: numpy, torch, factored, gram_eigh: {BUSY}{BUSY_MARK} on 2 groups (2026-11-28, 5 samples)"
    quiet = plan_lines(_plan(_measured({"numpy": 1.0}, busy=None)))
    assert not any(BUSY_USE in line or BUSY in line for line in quiet)


def test_the_whole_analysis_and_the_timed_sample_are_labelled_apart() -> None:
    plan = _plan(None)
    table = plan_table(plan)
    assert ESTIMATE in [column.header for column in table.table.columns] and (ESTIMATE, WHOLE) in table.footnotes
    lines = plan_lines(plan)
    step = plan.steps[0]
    assert lines[0].startswith(f"{step.analysis}: auto: fastest exact strategy (est. of the whole analysis ")
    assert lines[1].startswith(f"  timed ({TIMED}): ") and "whole analysis" not in lines[1]


def test_each_strategys_estimates_are_one_line_led_by_its_name() -> None:
    """top3's estimates at 100 columns were a five-line paragraph, each group's source with its own
    figures and the strategy named after them: `3072x768r16: measured while busy* (..., 18 samples);
    768x3072r16: ... (scipy_svds); ...`."""
    pytest.importorskip("torch")
    plan = _plan(_measured({"numpy": 4.0, "torch": 3.0}, busy=0.5))
    step = plan.steps[0]
    numpy = next(c for c in step.candidates if c.label == "numpy")
    first, second = numpy.basis  # the second group measured a day later, more often: 10, two digits
    numpy = numpy.model_copy(update={"basis": {**numpy.basis, second: f"{BUSY} (2026-11-29, 10 samples)"},
                                     "measured": {**numpy.measured, second: ("2026-11-29", 10)}})
    candidates = [numpy if c.label == "numpy" else c for c in step.candidates]
    plan = plan.model_copy(update={"steps": [step.model_copy(update={"candidates": candidates})]})
    lines = plan_lines(plan)
    start = next(i for i, line in enumerate(lines) if line.startswith("  estimates: "))
    indent = " " * len("  estimates: ")
    estimates = [lines[start]] + [line for line in lines[start + 1:] if line.startswith(indent)]
    assert estimates[0] == f"  estimates: numpy: {BUSY}{BUSY_MARK} on 2 groups (2026-11-28 to 2026-11-29, 5-10 samples)"  # not 10-5
    assert f"{indent}torch: {BUSY}{BUSY_MARK} on 2 groups (2026-11-28, 5 samples)" in estimates
    named = [name for line in estimates for name in line.strip().removeprefix("estimates: ").split(": ")[0].split(", ")]
    assert sorted(named) == sorted(c.label for c in step.candidates if c.available)  # each once, first
    assert not any(group in line for line in estimates for group in (first, second))


def test_one_sample_is_said_in_the_singular() -> None:
    """Walk 24: `torch: measured while busy* on 2 groups (2026-11-29, 1 samples)`."""
    from harness.report.plan_view import _basis

    plan = _plan(_measured({"numpy": 1.0}, busy=None))
    c = next(c for s in plan.steps for c in s.candidates if c.measured)
    one = c.model_copy(update={"measured": {g: (when, 1) for g, (when, _n) in c.measured.items()}})
    assert _basis(one).endswith(", 1 sample)") and "1 samples" not in _basis(one)
