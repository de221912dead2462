"""The planner over precisions and compilation: points not offered say why, a precision whose
round-off or measured error misses the tolerance is refused, auto picks the fastest point whose
measured error meets it (and says so), tf32 without CUDA is one line, compilation without a C
compiler and CuPy without a GPU are refused with the reason (availability faked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.linalg import compiling
from harness.linalg.compiling import compile_missing_reason
from harness.machine.info import probe
from harness.machine.wisdom import MeasuredError, Observation, Wisdom, identity
from harness.plan import candidates
from harness.plan.compiler import compile_plan
from harness.plan.model import PlanError
from harness.specs.reading import load_spec
from harness.strategies.registry import STRATEGIES
from harness.strategies.base import OpRequest
from tests.conftest import CONFIGS
from tests.fake_cupy import install
from tests.plan.test_compiler import plan_for, step

SPECTRUM = ["analysis.0.compare=['numpy','factored']", "analysis.0.precisions=['float32','bfloat16']"]


def by_label(s):
    return {c.label: c for c in s.candidates}


def test_every_point_is_timed_or_listed_with_its_reason() -> None:
    s = step(plan_for([*SPECTRUM, "analysis.0.tolerance=0.05"]), "svdvals")
    timed = {t.label: t for t in s.timed}
    assert {"numpy@float32", "factored@float32", "factored@bfloat16"} <= set(timed)
    assert timed["factored@bfloat16"].precision == "bfloat16" and timed["numpy@float32"].role == "baseline"
    skipped = {c.label: c.reason for c in s.skipped}
    assert "bfloat16 not offered: nothing in it multiplies in bf16" in skipped["numpy@bfloat16"]
    assert "LAPACK has no such routine" in skipped["numpy@bfloat16"]


def test_a_precision_whose_round_off_exceeds_the_tolerance_is_refused() -> None:
    s = step(plan_for(SPECTRUM), "svdvals")  # the default tolerance, 1e-4: below bf16's 3.9e-3
    reason = by_label(s)["factored@bfloat16"].reason
    assert reason is not None and "3.9e-03" in reason and "cannot meet it" in reason
    assert "factored@bfloat16" not in {t.label for t in s.timed}
    assert s.precision == "float32"


def _wisdom(seconds: dict[str, float], errors: dict[str, float]) -> Wisdom:
    """Measurements of factored on the smoke groups: seconds (as shares of the cost model's
    float32 estimate, which scales the modelled estimates of the others) and errors per precision."""
    machine = probe()
    plan = plan_for([*SPECTRUM, "analysis.0.tolerance=0.05"], machine)
    model = by_label(step(plan, "svdvals"))["factored@float32"].model_s
    threads = plan.bench.threads
    op, factored = OpRequest("svdvals"), STRATEGIES["factored"]
    w = Wisdom(machine=identity(machine))
    for group in plan.groups:
        shape_group = type("G", (), {"shape": group.shape, "rank": group.rank, "kron": None})()
        for precision, share in seconds.items():
            flops = factored.work(op, shape_group, 4).flops  # type: ignore[arg-type]
            w.add([Observation(strategy="factored", op="svdvals", shape=group.shape, rank=group.rank,
                               dtype="float32", device="numpy", threads=threads, seconds=share * model[group.label],
                               flops=flops,
                               samples=5, when="2026-11-24T07:00:00", source="test", precision=precision)])
            w.add_errors([MeasuredError(strategy="factored", op="svdvals", device="numpy", precision=precision,
                                        error=errors[precision], when="2026-11-24T07:00:00")])
    return w


def plan_with(overrides: list[str], wisdom: Wisdom):
    spec = load_spec(CONFIGS / "smoke.toml", overrides)
    workload = Workload.from_source(build_source(spec.data, spec.experiment.seed, Path(".")))
    return compile_plan(spec, workload, probe(), wisdom)


def test_auto_picks_the_fastest_precision_whose_measured_error_meets_the_tolerance() -> None:
    w = _wisdom({"float32": 1.0, "bfloat16": 0.05}, {"float32": 6e-8, "bfloat16": 8e-3})
    s = step(plan_with([*SPECTRUM, "analysis.0.tolerance=0.01"], w), "svdvals")
    assert (s.strategy, s.precision) == ("factored", "bfloat16")
    assert "fastest exact (strategy, precision)" in s.reason and "measured error 8.0e-03 within tolerance 0.01" in s.reason
    # the same measurements under a tolerance the measured error misses: refused, float32 chosen
    # (gram_eigh's: its model is 10x factored's measured float32)
    s = step(plan_with([*SPECTRUM, "analysis.0.tolerance=0.005"], w), "svdvals")
    assert s.precision == "float32"
    reason = by_label(s)["factored@bfloat16"].reason
    assert reason is not None and "measured on this machine at bfloat16, 8.0e-03" in reason


def test_an_unmeasured_narrow_precision_is_timed_but_not_chosen() -> None:
    s = step(plan_for([*SPECTRUM, "analysis.0.tolerance=0.05"]), "svdvals")
    assert s.precision == "float32" and "factored@bfloat16" in {t.label for t in s.timed}
    assert "factored@bfloat16 not chosen: no error measured at bfloat16 on this machine yet" in s.reason


def test_tf32_without_cuda_is_one_line() -> None:
    with pytest.raises(PlanError) as caught:
        plan_for(["analysis.0.precisions=['float32','tf32']"])
    (line,) = caught.value.lines
    assert line.startswith("analysis[0].precisions: tf32 is a mode of NVIDIA tensor cores") and "\n" not in line


def test_compile_is_refused_without_a_c_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiling, "_c_compiler", lambda: None)
    assert "no C compiler is on PATH" in (compile_missing_reason("cpu") or "")
    s = step(plan_for(["analysis.0.compare=['numpy','torch']", "analysis.0.compile=true"]), "svdvals")
    reason = by_label(s)["torch@float32+compiled"].reason
    assert reason is not None and reason.startswith("compiled not offered: torch.compile's inductor builds C++")
    assert "numpy@float32+compiled" in {c.label for c in s.skipped}
    assert "no torch code to compile" in (by_label(s)["numpy@float32+compiled"].reason or "")


def test_compile_finds_a_compiler_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiling.shutil, "which", lambda name: "/opt/cc/bin/" + name if name == "mycc" else None)
    monkeypatch.setenv("CC", "mycc")
    assert compiling._c_compiler() == "mycc"
    monkeypatch.delenv("CC")
    assert compiling._c_compiler() is None


def test_cupy_is_unavailable_with_its_reason_and_planned_where_faked(monkeypatch: pytest.MonkeyPatch) -> None:
    overrides = ["analysis.0.compare=['numpy','cupy']"]
    reason = by_label(step(plan_for(overrides), "svdvals"))["cupy"].reason
    assert reason is not None and "CuPy is not installed" in reason
    install(monkeypatch, devices=-1)
    reason = by_label(step(plan_for(overrides), "svdvals"))["cupy"].reason
    assert reason is not None and reason.startswith("CuPy sees no CUDA device")
    install(monkeypatch, devices=1)
    monkeypatch.setattr(candidates, "memory_budget", lambda requested, backend: requested)  # no torch.cuda here
    s = step(plan_for(overrides), "svdvals")
    cupy = next(t for t in s.timed if t.strategy == "cupy")
    assert cupy.device == "cuda" and cupy.role == ("chosen" if s.strategy == "cupy" else "compare")
    reason = by_label(step(plan_for([*overrides, "execution.device='cpu'"]), "svdvals"))["cupy"].reason
    assert reason == "it runs on a GPU, and execution.device is 'cpu'"


def test_the_wisdom_keeps_each_points_worst_error() -> None:
    w = Wisdom(machine={})
    at = {"strategy": "factored", "op": "svdvals", "device": "numpy", "precision": "bfloat16", "when": "now"}
    w.add_errors([MeasuredError(**at, error=3e-3), MeasuredError(**at, error=1e-3)])
    w.add_errors([MeasuredError(**{**at, "precision": "float32"}, error=6e-8)])
    assert w.error("factored", "svdvals", "numpy", "bfloat16") == 3e-3
    assert w.error("factored", "svdvals", "numpy", "float32") == 6e-8
    assert w.error("factored", "svdvals", "numpy", "bfloat16", compiled=True) is None
