"""The verdict lines: one per analysis with its interval, and a line when the plan's choice lost."""

from harness.record.run_record import AnalysisRecord, GroupTiming, StrategyTiming
from harness.record.verdict import choice_check, verdict
from harness.bench.measure import Measurement


def timing(strategy: str, role: str, speedup: float, ci: tuple[float, float] | None, unresolved: bool = False) -> StrategyTiming:
    m = Measurement(samples_s=[1.0], median_s=1.0, iqr_s=0.0, warmup=0, threads={})
    return StrategyTiming(strategy=strategy, role=role, device="numpy", groups=[GroupTiming(group="g", sampled=1, total=1, measurement=m)],
                          estimate_total_s=1.0, iqr_total_s=0.0, extrapolated=False, speedup=speedup, speedup_ci=ci,
                          unresolved=unresolved)


def analysis(chosen: str, timings: list[StrategyTiming]) -> AnalysisRecord:
    return AnalysisRecord(name="spectrum", op="svdvals", k=None, strategy=chosen, device="cpu", reason="", n_matrices=1,
                          wall_s=0.0, timings=timings)


def test_the_verdict_names_the_chosen_strategy_its_interval_and_how_many_resolved() -> None:
    a = analysis("factored", [timing("numpy", "baseline", 1.0, None), timing("factored", "compare", 1130.4, (1050.2, 1210.9)),
                              timing("torch", "compare", 1.8, (1.2, 2.7), unresolved=True)])
    assert verdict(a) == "spectrum: factored is 1,130x (1,050-1,211) faster than numpy; 1 of 2 speedups resolved"


def test_a_slower_strategy_is_said_slower_with_the_interval_turned_round() -> None:
    a = analysis("torch", [timing("numpy", "baseline", 1.0, None), timing("torch", "compare", 0.5, (0.4, 0.625))])
    assert verdict(a) == "spectrum: torch is 2.00x (1.60-2.50) slower than numpy; 1 of 1 speedups resolved"


def test_the_plan_lost_only_when_the_intervals_do_not_overlap() -> None:
    lost = analysis("torch", [timing("numpy", "baseline", 1.0, None), timing("torch", "compare", 0.8, (0.7, 0.9))])
    line = choice_check(lost, approximate=set())
    assert line is not None and line.startswith("spectrum: the plan chose torch, but numpy measured 1.25x faster")
    close = analysis("torch", [timing("numpy", "baseline", 1.0, None), timing("torch", "compare", 0.95, (0.8, 1.1))])
    assert choice_check(close, approximate=set()) is None
    faster = analysis("numpy", [timing("numpy", "baseline", 1.0, None), timing("lowrank", "compare", 3.0, (2.5, 3.5))])
    assert choice_check(faster, approximate={"lowrank"}) is None  # auto never picks a randomized one
    assert choice_check(faster, approximate=set()) is not None


def test_a_point_that_missed_the_tolerance_or_is_compiled_never_says_the_plan_lost() -> None:
    from harness.record.verification import Verification

    fast = timing("factored", "compare", 3.0, (2.5, 3.5))
    fast.precision, fast.variant = "bfloat16", "@bfloat16"
    chosen = timing("numpy", "baseline", 1.0, None)
    a = analysis("numpy", [chosen, fast])
    assert choice_check(a, approximate=set()) is not None  # faster, and nothing says it failed
    a.verification = [Verification.judged("factored@bfloat16", 1, 1e-4, 3e-3)]
    assert choice_check(a, approximate=set()) is None  # 3e-3 misses 1e-4: it could not have run the analysis
    fast.compiled, a.verification = True, []
    assert choice_check(a, approximate=set()) is None  # compiled points never run the full analysis
