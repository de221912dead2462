"""Modelled and measured estimates on one footing: a busy machine's measurements scale the cost
model's figures, and a measured strategy does not lose to a modelled one within the model's
error (a walk-through's `auto` pick flipped between gram_eigh, process_pool and factored over 7
runs of one spec, comparing busy measurements with an idle model); and beats it only by more than
the spread of this machine's measured/modelled ratios (one scale left factored_gram -> dual_gram)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.machine.info import probe
from harness.machine.wisdom import BUSY, MODELLED, Observation, Wisdom, identity
from harness.plan.calibration import MODEL_ERROR, factors, model_error
from harness.plan.choice import choose
from harness.plan.compiler import compile_plan
from harness.plan.model import Candidate
from harness.specs.reading import load_spec
from harness.strategies.base import OpRequest
from harness.strategies.registry import STRATEGIES
from tests.conftest import CONFIGS

MACHINE = probe()
SVDVALS = ["analysis.0.compare=['numpy']"]


def _plan(wisdom: Wisdom | None):
    spec = load_spec(CONFIGS / "smoke.toml", SVDVALS)
    workload = Workload.from_source(build_source(spec.data, spec.experiment.seed, Path(".")))
    return compile_plan(spec, workload, MACHINE, wisdom)


def _measured(times: dict[str, float], busy: float | None) -> Wisdom:
    """Measurements of smoke's svdvals at `times` x the cost model's own estimate, per strategy."""
    plan = _plan(None)
    step, threads = plan.steps[0], plan.bench.threads
    w = Wisdom(machine=identity(MACHINE))
    for c in (c for c in step.candidates if c.strategy in times and not c.variant):
        for group in plan.groups:
            shape = type("G", (), {"shape": group.shape, "rank": group.rank, "kron": None})()
            flops = STRATEGIES[c.strategy].work(OpRequest("svdvals"), shape, 4).flops  # type: ignore[arg-type]
            w.add([Observation(strategy=c.strategy, op="svdvals", shape=group.shape, rank=group.rank, dtype="float32",
                               device=c.device, threads=threads, seconds=times[c.strategy] * c.per_matrix_s[group.label],
                               flops=flops, samples=5, when="2026-11-28T10:00:00", source="test", busy=busy)])
    return w


def test_busy_measurements_scale_the_model_and_the_unmeasured_does_not_win_on_its_raw_figure() -> None:
    """gram_eigh and numpy measured while busy at 4x the model; torch's raw model (smaller than
    gram_eigh's busy figure) is scaled by the same 4x, and the measured gram_eigh runs, every time."""
    pytest.importorskip("torch")
    unmeasured = _plan(None).steps[0]
    torch = next(c for c in unmeasured.candidates if c.strategy == "torch")
    gram = next(c for c in unmeasured.candidates if c.strategy == "gram_eigh")
    assert torch.estimate_s is not None and gram.estimate_s is not None and torch.estimate_s < 4 * gram.estimate_s
    w = _measured({"gram_eigh": 4.0, "numpy": 4.0}, busy=0.7)
    steps = [_plan(w).steps[0] for _ in range(3)]
    assert {(s.strategy, s.reason) for s in steps} == {(steps[0].strategy, steps[0].reason)}  # the same pick, said alike
    s = steps[0]
    assert s.strategy == "gram_eigh", s.reason
    assert s.reason.split(";")[0].endswith(", measured while busy)")
    assert re.search(r"; torch est\. [^;]*, modelled x4;", s.reason), s.reason
    scaled = next(c for c in s.candidates if c.strategy == "torch")
    assert scaled.scale == pytest.approx(4.0) and scaled.estimate_s == pytest.approx(4 * torch.estimate_s)
    assert all(b.startswith(f"{MODELLED} x4: ") for b in scaled.basis.values())
    topk = _plan(w).steps[2]  # chosen on a scaled model: its figure says by what, in full
    assert topk.reason.startswith("auto: fastest exact strategy (est. of the whole analysis ")
    assert topk.reason.split(";")[0].endswith(", modelled, scaled x4 by this machine's measurements)")
    assert all(b.startswith(BUSY) for c in s.candidates if c.strategy == "gram_eigh" for b in c.basis.values())


def test_a_quiet_wisdom_that_agrees_with_the_model_changes_no_pick() -> None:
    before = _plan(None)
    after = _plan(_measured({"numpy": 1.0}, busy=None))
    assert [s.strategy for s in after.steps] == [s.strategy for s in before.steps]
    assert all("scaled" not in s.reason for s in after.steps)


def _candidate(strategy: str, estimate_s: float, basis: str, ratio: float = 1.0) -> Candidate:
    """One group's point, measured at `ratio` x the model's figure (a modelled one: `basis` MODELLED)."""
    return Candidate(strategy=strategy, device="numpy", estimate_s=estimate_s, per_matrix_s={"g": estimate_s},
                     model_s={"g": estimate_s / ratio}, basis={"g": basis})


@pytest.mark.parametrize("ratio", [MODEL_ERROR * 0.9, MODEL_ERROR * 1.1])
def test_a_measured_strategy_wins_a_near_tie_with_a_modelled_one_in_any_order(ratio: float) -> None:
    modelled = _candidate("gram_eigh", 1e-4, f"{MODELLED}: never measured on this machine")
    measured = _candidate("numpy", ratio * 1e-4, "measured on this machine, 2026-11-28, 5 samples")
    workload = Workload.from_source(build_source(load_spec(CONFIGS / "smoke.toml").data, 0, Path(".")))
    picks = {choose("auto", order, "svdvals", workload)[0].strategy for order in ([modelled, measured],
                                                                                 [measured, modelled])}
    assert picks == {"numpy" if ratio < MODEL_ERROR else "gram_eigh"}


def test_the_machines_factor_is_a_median_one_outlier_does_not_move() -> None:
    points = [Candidate(strategy=name, device="numpy", estimate_s=r, per_matrix_s={"g": r}, model_s={"g": 1.0},
                        basis={"g": "measured on this machine"}) for name, r in
              (("numpy", 2.0), ("gram_eigh", 2.2), ("factored", 1.9), ("process_pool", 60.0))]
    found = factors(points)
    assert found["numpy"] == pytest.approx(found["*"]) and 2.0 <= found["numpy"] <= 2.2


def _smoke() -> Workload:
    return Workload.from_source(build_source(load_spec(CONFIGS / "smoke.toml").data, 0, Path(".")))


@pytest.mark.parametrize("faster", [3.7, 1000.0])
def test_a_modelled_strategy_beats_a_measured_one_only_by_more_than_the_models_spread(faster: float) -> None:
    """The walk-through: this machine's measured/modelled ratios span 25x (numpy at 25x the model
    while busy, torch at 1x); gram_eigh, never measured, is estimated 3.7x below numpy: within
    the spread, so the measured numpy runs, and the reason says why. 1000x below still wins."""
    measured = [_candidate("numpy", 4e-4, f"{BUSY} on this machine", ratio=25.0),
                _candidate("torch", 1e-2, "measured on this machine", ratio=1.0)]
    modelled = _candidate("gram_eigh", 4e-4 / faster, f"{MODELLED} x25: scaled")
    margin = model_error(measured + [modelled])
    assert margin == pytest.approx(25.0)
    picks = {(c.strategy, why) for c, why in (choose("auto", order, "svdvals", _smoke(), margin=margin) for order in
                                              ([modelled, *measured], [*measured, modelled]))}
    assert len(picks) == 1  # the same pick, said alike, in any order
    chosen, reason = picks.pop()
    if faster < margin:
        assert chosen == "numpy" and reason.startswith("auto: fastest measured exact strategy"), reason
        assert "; numpy (measured) over gram_eigh (est. 108 µs, modelled): within the model's error: it has been " \
               "off by up to 25x on this machine;" in reason, reason
    else:
        assert chosen == "gram_eigh" and "off by" not in reason, reason


def test_the_models_error_is_its_least_where_nothing_or_one_ratio_is_known() -> None:
    assert model_error([]) == MODEL_ERROR
    assert model_error([_candidate("gram_eigh", 1e-4, f"{MODELLED}: never measured")]) == MODEL_ERROR
    assert model_error([_candidate("numpy", 1e-4, "measured on this machine", ratio=40.0)]) == MODEL_ERROR
    quiet = _plan(_measured({"numpy": 1.0, "gram_eigh": 1.1}, busy=None))
    assert model_error(c for s in quiet.steps for c in s.candidates) == MODEL_ERROR


def test_the_plan_weighs_a_modelled_pick_against_the_spread_of_its_own_wisdom() -> None:
    """numpy measured at 9x the model while busy, factored at 1x: the model's error here is 9x,
    the machine's factor 3x; gram_eigh's scaled estimate is more than MODEL_ERROR but less than
    9x below factored's measured one, so factored runs, and the reason says why."""
    w = _measured({"numpy": 9.0, "factored": 1.0}, busy=0.7)
    step = _plan(w).steps[0]
    by = {c.label: c for c in step.candidates}
    assert MODEL_ERROR * by["gram_eigh"].estimate_s < by["factored"].estimate_s < 9 * by["gram_eigh"].estimate_s
    assert step.strategy == "factored", step.reason
    assert re.search(r"; factored \(measured\) over gram_eigh \(est\. [^;]*, modelled x3\): within the model's "
                     r"error: it has been off by up to 9x on this machine;", step.reason), step.reason


@pytest.mark.parametrize("apart", [1.12, 1.4])
def test_measured_strategies_closer_than_a_tie_keep_the_models_order(apart: float) -> None:
    """Walk-through 5: the tutorial's first smoke run picked gram_eigh for svd_topk on the model's
    order; its second measured torch 56 µs against gram_eigh's 63 µs (intervals overlapping), took
    torch, and compare had no pick to pair. A tie keeps the model's order; a clear margin does not."""
    gram = _candidate("gram_eigh", apart * 5e-5, "measured on this machine", ratio=10.0)  # the model's first
    torch = _candidate("torch", 5e-5, "measured on this machine", ratio=1.0)
    picks = {(c.strategy, why) for c, why in (choose("auto", order, "svdvals", _smoke()) for order in
                                              ([gram, torch], [torch, gram]))}
    assert len(picks) == 1
    chosen, reason = picks.pop()
    if apart < 1.25:  # MEASURED_TIE
        assert chosen == "gram_eigh" and reason.startswith("auto: tied fastest exact strategy"), reason
        assert "gram_eigh and torch (est. 50 µs) measured within 1.25x of each other" in reason, reason
    else:
        assert chosen == "torch" and "tie" not in reason, reason
