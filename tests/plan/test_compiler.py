"""The planner's choices and reasons, with CUDA and torch faked present or absent."""

import re
import sys
from pathlib import Path

import pytest

from harness.base.units import format_seconds
from harness.bench.budget import MIN_ROUNDS

from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.machine.info import MachineInfo, probe
from harness.plan.model import Plan, PlanError
from harness.plan.compiler import compile_plan
from harness.specs.sections import Spec
from harness.specs.reading import load_spec
from tests.conftest import CONFIGS


def plan_for(overrides: list[str], machine: MachineInfo | None = None):
    """The smoke plan with `overrides`, on `machine` (default: this one, probed)."""
    spec = load_spec(CONFIGS / "smoke.toml", overrides)
    workload = Workload.from_source(build_source(spec.data, spec.experiment.seed, Path(".")))
    return compile_plan(spec, workload, probe() if machine is None else machine)


def step(plan, name: str):
    return next(s for s in plan.steps if s.analysis == name)


def test_auto_picks_factored_for_lora_and_says_why() -> None:
    plan = plan_for(["data.modules={up=[600,400]}", "data.rank=8"])
    svdvals = step(plan, "svdvals")
    assert svdvals.strategy == "factored"
    assert svdvals.reason.startswith("auto: fastest exact strategy")
    assert "numpy est." in svdvals.reason


def test_dense_workload_never_gets_factored_and_the_plan_says_why() -> None:
    plan = plan_for(["data.form='dense'", "analysis.2.compare=['factored','torch']"])
    for s in plan.steps:
        assert s.strategy != "factored"
    topk = step(plan, "svd_topk")
    assert "factored not possible: needs LoRA or LoKr factors" in topk.reason
    assert [c.strategy for c in topk.skipped] == ["factored"]
    assert "torch_lowrank" not in [t.strategy for t in topk.timed]


def test_auto_leaves_out_randomized() -> None:
    topk = step(plan_for(["data.form='dense'"]), "svd_topk")
    assert topk.strategy != "torch_lowrank"
    assert "torch_lowrank left out: randomized" in topk.reason


def test_baseline_and_compare_roles() -> None:
    s = step(plan_for([]), "svd")
    assert [(t.strategy, t.role) for t in s.timed] == [("numpy", "baseline"), ("torch", "compare")]


def test_a_chosen_strategy_named_in_compare_too_is_labelled_chosen() -> None:
    """The walk-through's factored read "compare" in two analyses and "chosen" in a third."""
    s = step(plan_for(["analysis.1.strategy='torch'"]), "svd")
    assert [(t.strategy, t.role) for t in s.timed] == [("numpy", "baseline"), ("torch", "chosen")]
    s = step(plan_for(["analysis.1.strategy='numpy'", "analysis.1.compare=['numpy','torch']"]), "svd")
    assert [(t.strategy, t.role) for t in s.timed] == [("numpy", "baseline"), ("torch", "compare")]


def test_tiny_memory_budget_chunks_the_groups() -> None:
    # torch svd of a 48x32 float32 matrix: (2*48*32 + 48*32 + 32*32) * 4 bytes = 22,528
    plan = plan_for(["execution.memory_budget=30000", "analysis.1.strategy='torch'"])
    assert step(plan, "svd").batch_sizes == {"48x32r4": 1, "32x48r4": 1}
    plan = plan_for(["execution.memory_budget=100000", "analysis.1.strategy='torch'"])
    assert step(plan, "svd").batch_sizes == {"48x32r4": 4, "32x48r4": 4}


def test_a_named_strategy_that_cannot_fit_is_an_error() -> None:
    with pytest.raises(PlanError, match=r"analysis\[1\].strategy: numpy cannot run: one 48x32r4 matrix needs"):
        plan_for(["execution.memory_budget=20000"])


def test_cuda_requested_without_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(PlanError, match="execution.device: 'cuda' requested but torch sees no CUDA device"):
        plan_for(["execution.device='cuda'"])


def test_fake_cuda_puts_torch_on_the_gpu_within_free_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (40_000, 80 * 2**30))
    plan = plan_for(["analysis.1.strategy='torch'", "data.form='dense'"], probe().model_copy(update={"cores": 2}))
    s = step(plan, "svd")
    assert s.device == "cuda"
    # 80% of 40,000 free bytes = 32,000: one 48x32 float32 matrix with vectors per batch
    assert s.batch_sizes == {"48x32": 1, "32x48": 1}
    svdvals = step(plan, "svdvals")  # the modelled GPU throughput beats 2 cores
    assert svdvals.device == "cuda" and svdvals.strategy in {"torch", "gram_eigh"}


def test_without_torch_the_plan_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    plan = plan_for(["data.form='dense'"])
    svdvals = step(plan, "svdvals")
    assert svdvals.strategy in {"numpy", "process_pool", "gram_eigh"}
    assert "torch not possible: torch is not installed" in svdvals.reason
    assert [c.strategy for c in svdvals.skipped] == ["torch"]
    with pytest.raises(PlanError, match="torch cannot run: torch is not installed"):
        plan_for(["analysis.1.strategy='torch'"])


def test_k_larger_than_a_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """Said of k, under its key, not as every strategy's failure (validate's one pass)."""
    with pytest.raises(PlanError, match=re.escape("analysis[2].k: 40 exceeds min(m, n) of the 48x32r4 group (at most 32 there)")):
        plan_for(["analysis.2.k=40"])


def test_plan_round_trips_as_json() -> None:
    plan = plan_for([])
    assert type(plan).model_validate_json(plan.model_dump_json()) == plan
    assert isinstance(Spec, type)


def test_the_budget_buys_rounds_and_the_floor_is_said() -> None:
    big = ["data.modules={up=[600,400]}", "data.rank=8", "benchmark.sample=4", "analysis.0.compare=['numpy','torch']"]
    two_cores = probe().model_copy(update={"cores": 2})
    roomy = plan_for([*big, "benchmark.budget='10m'"], two_cores)
    tight = plan_for([*big, "benchmark.budget='0.2s'"], two_cores)
    for plan in (roomy, tight):
        assert plan.bench is not None and plan.bench.floor_s > 0
        for s in plan.steps:
            for t in s.timed:
                assert [a.group for a in t.allocations] == (
                    ["positions"] if s.op == "pca" else [g.label for g in plan.groups])
                assert all(a.matrices >= 1 and a.rounds >= MIN_ROUNDS for a in t.allocations)
                assert t.cut and "round" in t.cut
    assert tight.bench is not None and roomy.bench is not None
    assert tight.bench.limit_s == tight.bench.floor_s > 0.2  # the floor is spent, not the budget
    assert roomy.bench.limit_s == 600.0
    rounds = {a.rounds for s in roomy.steps for t in s.timed for a in t.allocations}
    assert rounds and min(rounds) > MIN_ROUNDS + 1  # the budget above the floor buys rounds
    assert tight.bench.estimate_s < roomy.bench.estimate_s
    assert roomy.estimate_s > roomy.bench.estimate_s  # the whole run: analyses and loading too
    from harness.report.plan_view import bench_plan_line, floor_note

    assert "more than the budget" in bench_plan_line(tight) and floor_note(tight, asked=True) is not None
    assert floor_note(roomy, asked=True) is None
    assert floor_note(tight, asked=False) is None  # the default budget grows to the floor without a word


def test_a_fan_out_strategy_is_timed_on_a_matrix_per_worker() -> None:
    plan = plan_for(["analysis.0.compare=['process_pool']", "execution.workers=2", "benchmark.budget=0"])
    pool = next(t for t in step(plan, "svdvals").timed if t.strategy == "process_pool")
    assert all(a.matrices == 2 and a.sample >= 2 for a in pool.allocations)


def test_threads_default_to_the_cores_other_processes_leave(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.bench import threads
    from harness.bench.conditions import Conditions

    cores = probe().cores
    monkeypatch.setattr(threads, "sample_conditions", lambda seconds, n: Conditions(cores=n, others_cpu=0.0))
    threads.default_threads.cache_clear()
    plan = plan_for([])
    assert plan.bench is not None and plan.bench.threads == cores
    assert plan.bench.threads_reason == f"the machine's {cores} cores"
    monkeypatch.setattr(threads, "sample_conditions", lambda seconds, n: Conditions(cores=n, others_cpu=0.96))
    threads.default_threads.cache_clear()
    busy = plan_for([]).bench
    assert busy is not None and busy.threads == 1 and "other processes took 96% of the CPUs" in busy.threads_reason
    # its moment and how short it was: beside the rounds' `58-68%` it read as a second answer (walk 23)
    assert busy.threads_reason.endswith("in the 150 ms look when the plan was made")
    named = plan_for(["benchmark.threads=1"]).bench
    assert named is not None and (named.threads, named.threads_reason) == (1, "benchmark.threads")
    threads.default_threads.cache_clear()  # the next test watches the real machine


def _cut_s(plan: Plan) -> float:
    """The planned rounds' seconds the phase's limit (a clock's) leaves untimed on this plan's machine."""
    return sum(t.estimate_s for s in plan.steps for t in s.timed) - sum(plan.timings_s)


def test_a_busy_machine_slows_the_whole_run_estimate_and_the_plan_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 48: `whole run est. 13.54 s` for a 27 s run beside other work on 2 cores."""
    from harness.bench import threads
    from harness.bench.conditions import Conditions
    from harness.report.plan_view import bench_plan_line

    from harness.plan import compiler

    monkeypatch.setattr(compiler, "load_average", lambda: None)  # the probe's share alone
    four = probe().model_copy(update={"cores": 4})
    shares = {"idle": 0.0, "busy": 0.5}
    plans = {}
    for name, share in shares.items():
        monkeypatch.setattr(threads, "sample_conditions", lambda seconds, n, share=share: Conditions(cores=n, others_cpu=share))
        threads.default_threads.cache_clear()
        plans[name] = plan_for([], four)
    threads.default_threads.cache_clear()  # the next test watches the real machine
    idle, busy = plans["idle"], plans["busy"]
    assert idle.slowdown == 1.0 and idle.estimate_s == idle.idle_s  # unchanged on an idle machine
    assert "idle" not in bench_plan_line(idle)
    assert busy.bench is not None and busy.bench.threads == 2 and busy.slowdown == 2.0  # 4 cores over 2 left free
    assert busy.estimate_s == pytest.approx(2 * (busy.idle_s - _cut_s(busy)))  # the rounds the limit cuts: not slowed
    line = bench_plan_line(busy)  # each parenthesis next to what it is of, the idle figure named
    assert f"whole run est. {format_seconds(busy.estimate_s)} (of which " in line
    assert line.endswith(f"); {format_seconds(busy.idle_s)} on an idle machine")
    named = plan_for(["benchmark.threads=2"], four)  # the spec's threads: nothing was watched
    assert named.slowdown == 1.0


def test_a_probe_that_caught_a_quiet_moment_slows_the_plan_by_the_minutes_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Walk 15: a run planned at slowdown 1.0 under load ~5 on 2 cores (its 0.15 s probe saw the
    others idle), and its ETA ran short. The minute's load average, one process of it taken as the
    run's own, is a floor under the probe's; the threads stay the probe's."""
    from harness.bench import threads
    from harness.bench.conditions import Conditions
    from harness.plan import compiler

    two = probe().model_copy(update={"cores": 2})
    monkeypatch.setattr(threads, "sample_conditions", lambda seconds, n: Conditions(cores=n, others_cpu=0.0))
    plans = {}
    for load in (None, 0.4, 1.6, 5.0):
        monkeypatch.setattr(compiler, "load_average", lambda load=load: load)
        threads.default_threads.cache_clear()
        plans[load] = plan_for([], two)
    threads.default_threads.cache_clear()  # the next test watches the real machine
    assert {load: p.slowdown for load, p in plans.items()} == {None: 1.0, 0.4: 1.0, 1.6: 1.0, 5.0: 2.0}
    assert all(p.bench is not None and p.bench.threads == 2 for p in plans.values())
    assert plans[5.0].estimate_s == pytest.approx(2 * (plans[5.0].idle_s - _cut_s(plans[5.0])))


def test_any_analysis_name_plans_and_gets_its_own_allocations() -> None:
    """Names are free text: one holding "|" or prefixing another must not mix up benchmark items."""
    plan = plan_for(["analysis.0.name='a|b'", "analysis.1.name='a'", "analysis.2.name='a|b|c'"])
    assert plan.bench is not None
    for s in plan.steps:
        for t in s.timed:
            assert [a.group for a in t.allocations] == (
                ["positions"] if s.op == "pca" else [g.label for g in plan.groups]), (s.analysis, t.strategy)


def test_gram_eigh_is_planned_only_where_its_bound_meets_the_tolerance() -> None:
    """Its error, relative to sigma_1, is bounded whatever the spectrum: within a loose tolerance it
    is a candidate auto may pick; below its bound it is left out, by auto and by name, with why."""
    dense = ["data.form='dense'", "data.modules={w=[300,100]}"]
    loose = step(plan_for(dense), "svdvals")
    gram = next(c for c in loose.candidates if c.strategy == "gram_eigh")
    assert gram.available and gram.estimate_s is not None
    tight = step(plan_for([*dense, "analysis.0.tolerance=1e-9", "analysis.0.compare=['gram_eigh']"]), "svdvals")
    assert tight.strategy != "gram_eigh"
    assert "gram_eigh not possible: its error bound, 4.5e-07 of sigma_1 on the 300x100 group" in tight.reason
    assert [c.strategy for c in tight.skipped] == ["gram_eigh"]
    with pytest.raises(PlanError, match="gram_eigh cannot run: its error bound, .* exceeds the tolerance 1e-09"):
        plan_for([*dense, "analysis.0.tolerance=1e-9", "analysis.0.strategy='gram_eigh'"])


def test_auto_picks_gram_eigh_for_tall_dense_values_within_its_bound() -> None:
    plan = plan_for(["data.form='dense'", "data.modules={w=[3072,768]}"], probe().model_copy(update={"cores": 2}))
    assert step(plan, "svdvals").strategy == "gram_eigh"
