"""The plan's whole-run estimate and the live display's first `ETA ~` on one busy machine (walk 20:
`harness plan` read `whole run est. 60.9 s` at load 7.6, every run's display began `ETA ~0:00:29`,
and the runs took 35-41 s). Load slows the run but for the benchmark phase's limit, a clock's
seconds: both now count the rounds it leaves, and the display starts from the plan's figure less
the torch import done before it opens (run.eta.work_left)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest

from harness.base.units import format_seconds
from harness.bench import threads
from harness.bench.conditions import Conditions
from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.machine.info import probe
from harness.plan import compiler
from harness.plan.compiler import compile_plan
from harness.plan.model import Plan
from harness.report.plan_view import bench_plan_line
from harness.run.phase import BenchPhase
from harness.specs.reading import load_spec
from tests.conftest import CONFIGS
from tests.run.clocked import clocked_display


def _busy_plan(monkeypatch: pytest.MonkeyPatch) -> tuple[Plan, Workload]:
    """The task_geometry plan on 2 cores at load 7.6 (slowdown 2), the probe seeing them taken."""
    monkeypatch.setattr(compiler, "load_average", lambda: 7.6)
    monkeypatch.setattr(threads, "sample_conditions", lambda seconds, n: Conditions(cores=n, others_cpu=0.5))
    threads.default_threads.cache_clear()
    try:
        spec = load_spec(CONFIGS / "task_geometry.toml", [])
        workload = Workload.from_source(build_source(spec.data, spec.experiment.seed, Path(".")))
        return compile_plan(spec, workload, probe().model_copy(update={"cores": 2})), workload
    finally:
        threads.default_threads.cache_clear()  # the next test watches the real machine


def test_the_plans_whole_run_estimate_is_where_the_live_display_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, workload = _busy_plan(monkeypatch)
    assert plan.slowdown == 2.0 and plan.bench is not None
    assert sum(plan.timings_s) < sum(t.estimate_s for s in plan.steps for t in s.timed)  # the limit cuts rounds
    line = bench_plan_line(plan)
    torch_s = plan.busy_s(plan.overheads.get("torch import", 0.0))
    assert f"whole run est. {format_seconds(plan.estimate_s)} (of which " in line
    assert "torch import" not in plan.overheads or f"torch import {format_seconds(torch_s)}" in line
    with clocked_display(lambda: 0.0) as display:
        units, estimate_s = BenchPhase(plan, workload, 0, display, 2).work_left()
        with display.phase("task_geometry", len(plan.steps), estimate_s=estimate_s, units_s=units):
            eta = display.progress.columns[-1].render(display.progress.tasks[0]).plain
    assert eta == f"ETA ~{timedelta(seconds=round(plan.estimate_s - torch_s))}", (eta, line)
    # the busy figure is the idle one slowed but for the cut rounds, not twice it (60.9 s for 35-41 s runs)
    assert plan.idle_s < plan.estimate_s < 2 * plan.idle_s
    assert re.search(r"; [\d.]+ m?s on an idle machine$", line)
