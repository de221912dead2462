"""A sweep's fits: the cost model's exponent is fitted only over the model's own estimates."""

from __future__ import annotations

from harness.record.sweep_fits import exponent_text, fit_slice
from harness.record.sweep_record import PointRecord, PointTiming
from harness.report.sweep import fit_sentence

MODELLED, MEASURED = "modelled: never measured on this machine", "measured on this machine, 2026-11-28, 5 samples"


def _points(bases: list[str], model: list[float]) -> list[PointRecord]:
    """numpy's dense SVD over rank 16..128: the same seconds at every rank, as LAPACK is blind to it."""
    return [PointRecord(values={"data.rank": rank}, folder=f"rank-{rank}", complete=True, passed=True,
                        timings=[PointTiming(analysis="spectrum", strategy="numpy", seconds=0.05, low=0.04, high=0.06,
                                             model_s=m, basis=basis)])
            for rank, basis, m in zip((16, 32, 64, 128), bases, model)]


def test_the_cost_models_exponent_is_fitted_only_over_its_own_estimates() -> None:
    """numpy at rank 16 measured 28.3 ms by the wisdom and modelled 56.4 ms at every other rank:
    'the cost model says 0.2' of a fixed-shape SVD, and a finding of it (walk-through 4)."""
    (mixed,) = fit_slice("data.rank", {}, _points([MEASURED, MODELLED, MODELLED, MODELLED], [0.0283, 0.0564, 0.0564, 0.0564]))
    assert mixed.model is None and mixed.finding is None
    (model,) = fit_slice("data.rank", {}, _points([MODELLED] * 4, [0.0564] * 4))
    assert model.model is not None and abs(model.model.exponent) < 1e-6


def test_the_finding_and_the_fit_sentence_round_the_models_exponent_alike() -> None:
    """A sweep said `the cost model says 0.2` in its finding and `its cost model says 0.20` beside it."""
    (fit,) = fit_slice("data.rank", {}, _points([MODELLED] * 4, [0.01 * r ** 0.2 for r in (16, 32, 64, 128)]))
    assert fit.model is not None and fit.finding is not None
    said = exponent_text(fit.model.exponent)
    assert said == "0.20" and fit.finding.endswith(f"the cost model says {said}")
    assert f"its cost model says {said};" in fit_sentence(fit)
