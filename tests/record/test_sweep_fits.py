"""A sweep's fits: the cost model's exponent is fitted over the model's own estimates, at every point."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.record.sweep_fits import exponent_text, fit_slice
from harness.record.sweep_record import PointRecord, PointTiming, point_timings
from harness.report.sweep import fit_sentence
from tests.report.test_run_screen import real

MODELLED, MEASURED = "modelled: never measured on this machine", "measured on this machine, 2026-11-28, 5 samples"


def _points(bases: list[str], model: list[float]) -> list[PointRecord]:
    """numpy's dense SVD over rank 16..128: the same seconds at every rank, as LAPACK is blind to it."""
    return [PointRecord(values={"data.rank": rank}, folder=f"rank-{rank}", complete=True, passed=True,
                        timings=[PointTiming(analysis="spectrum", strategy="numpy", seconds=0.05, low=0.04, high=0.06,
                                             model_s=m, basis=basis)])
            for rank, basis, m in zip((16, 32, 64, 128), bases, model)]


def test_the_cost_models_exponent_is_fitted_over_its_own_estimates_whatever_the_plans_basis() -> None:
    """numpy at rank 16 measured 28.3 ms by the wisdom and modelled 56.4 ms at every other rank: 'the
    cost model says 0.2' of a fixed-shape SVD (walk-through 4). Leaving such fits without the model's
    exponent dropped `its cost model says 2.10` from a second run of one sweep, whose points the first had
    measured (walk 12): the model's own figure is recorded at every point, and its clause always said."""
    (mixed,) = fit_slice("data.rank", {}, _points([MEASURED, MODELLED, MODELLED, MODELLED], [0.0564] * 4))
    assert mixed.model is not None and abs(mixed.model.exponent) < 1e-6 and mixed.finding is None
    assert "its cost model says 0.00;" in fit_sentence(mixed)


def test_a_point_records_the_cost_models_own_figure_where_the_plan_took_the_wisdoms(tmp_path: Path) -> None:
    """model_s was the wisdom's measurement where the plan took that: a point measured by an earlier run
    bent the model's exponent, or (left out) lost it."""
    record = real("main_job", tmp_path)
    [candidate] = [c for s in record.plan.steps if s.analysis == "spectrum" for c in s.candidates if c.label == "factored"]
    groups = list(candidate.per_matrix_s)
    candidate.model_s = {g: 1e-4 for g in groups}
    candidate.per_matrix_s = {g: 3e-4 for g in groups}
    candidate.basis = {groups[0]: MEASURED, **{g: MODELLED for g in groups[1:]}}
    [factored] = [t for t in point_timings(record) if (t.analysis, t.strategy) == ("spectrum", "factored")]
    assert factored.model_s == pytest.approx(1e-4) and factored.planned_s == pytest.approx(3e-4)
    assert factored.measured  # the plan's estimate, not the model's, was the wisdom's


def test_the_finding_and_the_fit_sentence_round_the_models_exponent_alike() -> None:
    """A sweep said `the cost model says 0.2` in its finding and `its cost model says 0.20` beside it."""
    (fit,) = fit_slice("data.rank", {}, _points([MODELLED] * 4, [0.01 * r ** 0.2 for r in (16, 32, 64, 128)]))
    assert fit.model is not None and fit.finding is not None
    said = exponent_text(fit.model.exponent)
    assert said == "0.20" and f"the cost model says {said}, " in fit.finding
    assert fit_sentence(fit).startswith(f"{fit.finding};")  # the finding is the fit's sentence: said once
