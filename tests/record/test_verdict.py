"""The verdict lines: one per analysis with its interval, and a line when the plan's choice lost."""

from harness.record.run_record import AnalysisRecord, GroupTiming, StrategyTiming
from harness.record.verdict import choice_check, significance, verdict
from harness.bench.measure import Measurement


def timing(strategy: str, role: str, speedup: float, ci: tuple[float, float] | None, unresolved: bool = False) -> StrategyTiming:
    m = Measurement(samples_s=[1.0], median_s=1.0, iqr_s=0.0, warmup=0, threads={})
    return StrategyTiming(strategy=strategy, role=role, device="numpy", groups=[GroupTiming(group="g", sampled=1, total=1, measurement=m)],
                          estimate_total_s=1.0, iqr_total_s=0.0, extrapolated=False, speedup=speedup, speedup_ci=ci,
                          unresolved=unresolved)


def analysis(chosen: str, timings: list[StrategyTiming], reason: str = "auto: fastest exact strategy") -> AnalysisRecord:
    return AnalysisRecord(name="spectrum", op="svdvals", k=None, strategy=chosen, device="cpu", reason=reason,
                          n_matrices=1, wall_s=0.0, timings=timings)


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
    assert line == ("spectrum: the plan chose torch, but numpy measured 1.25x (1.11-1.43) faster than it; the next "
                    "plan learns from these rounds")
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


def test_an_interval_that_holds_1_is_not_significant_never_slower_or_faster() -> None:
    a = analysis("torch", [timing("numpy", "baseline", 1.0, None), timing("torch", "compare", 0.746, (0.476, 1.18))])
    assert verdict(a) == ("spectrum: torch is not significantly faster or slower than numpy: 0.746x (0.476-1.18); "
                          "1 of 1 speedups resolved")
    assert [significance(t) for t in a.timings] == ["baseline", "not significant"]
    assert significance(timing("t", "compare", 0.92, (0.85, 0.99))) == "slower"
    assert significance(timing("t", "compare", 4.36, None)) == "no interval"


def test_a_strategy_the_spec_named_is_the_users_choice_and_the_line_parses() -> None:
    """`strategy = "numpy"` in the spec: the plan chose nothing, and "speedups no interval against
    1.42-1.60" did not parse."""
    named = analysis("numpy", [timing("numpy", "baseline", 1.0, None), timing("torch", "compare", 1.51, (1.42, 1.60))],
                     reason="named in the spec (est. 1.2 ms)")
    assert choice_check(named, approximate=set()) == (
        "spectrum: the spec names numpy, but torch measured 1.51x (1.42-1.60) faster than it; name torch (or auto) "
        "to run it")
    both = analysis("torch", [timing("numpy", "baseline", 1.0, None), timing("torch", "compare", 1.2, (1.1, 1.3)),
                              timing("factored", "compare", 9.0, (8.0, 10.0))])
    assert choice_check(both, approximate=set()) == (
        "spectrum: the plan chose torch, but factored measured faster than it (9.00x (8.00-10.0) against 1.20x "
        "(1.10-1.30) over the baseline); the next plan learns from these rounds")


def _main_job_top3() -> AnalysisRecord:
    """The top3 analysis of a real record (the main job's: factored against scipy_svds, torch and torch_lowrank)."""
    from pathlib import Path

    from harness.record.run_record import RunRecord

    raw = (Path(__file__).parents[1] / "report" / "records" / "main_job.json").read_text()
    return next(a for a in RunRecord.model_validate_json(raw).analyses if a.name == "top3")


def test_the_resolved_count_counts_the_strategies_the_limit_left_untimed() -> None:
    """The walk-through's "0 of 1 speedups resolved" while 3 were compared and 2 not timed."""
    from harness.record.run_record import UNTIMED, Skipped

    a = _main_job_top3()
    a.skipped = [Skipped(strategy=t.label, reason=UNTIMED) for t in a.timings if t.label in ("torch", "torch_lowrank")]
    a.timings = [t for t in a.timings if t.label not in ("torch", "torch_lowrank")]
    assert verdict(a).endswith("; 0 of 3 speedups resolved (2 of them not timed)")
    a.skipped = [Skipped(strategy="cupy", reason="CuPy is not installed")]  # not run: never compared here
    assert verdict(a).endswith("; 0 of 1 speedups resolved")


def test_an_unresolved_interval_is_a_factor_either_way_never_a_symmetric_percentage() -> None:
    """44.50-194 around 92.93 is -52%/+109%: "±109% wide" said the low end was below zero."""
    a = _main_job_top3()
    head = next(t for t in a.timings if t.label == "factored")
    low, high = head.speedup_ci
    assert round(high / head.speedup, 3) == round(head.speedup / low, 3) == 2.088  # symmetric in log space
    assert "(92.9x, 44.5-194: x2.1 either way); " in verdict(a)
    head.speedup_ci = (head.speedup / 1.054, head.speedup * 1.054)
    assert "x1.05 either way" in verdict(a)  # not "x1.1", nor the "x1.0" a factor above 1 never is


def test_an_interval_too_wide_to_read_says_in_the_table_and_the_verdict_what_it_still_says() -> None:
    """Issue 48: the verdict said `at least 13.79x faster (1,453x, 13.79-152,983: ...)` while the
    table's cell read `1,453x (interval too wide to say) ?`: one rule and one figure in both."""
    from harness.report.labels import speedup_text

    cases = [  # (speedup, interval, the table's cell, the verdict's words)
        (1453.0, (13.79, 152983.0), "1,453x (≥13.8) ?",
         "factored is at least 13.8x faster than numpy (1,453x; the interval is too wide to say more)"),
        (0.02, (0.0001, 0.5), "0.0200x (≤0.500) ?",
         "factored is at least 2.00x slower than numpy (50.0x; the interval is too wide to say more)"),
        (1.17, (4.5e-05, 30147.0), "1.17x (too wide) ?",
         "factored is not significantly faster or slower than numpy: 1.17x (too wide)"),
        (45.57, (17.27, 120.0), "45.6x (17.3-120) ?",  # readable: every figure 3 significant ones
         "factored is at least 17.3x faster than numpy (45.6x, 17.3-120: x2.6 either way)"),
    ]
    for speedup, ci, cell, said in cases:
        t = timing("factored", "compare", speedup, ci, unresolved=True)
        assert speedup_text(t) == cell
        assert verdict(analysis("factored", [timing("numpy", "baseline", 1.0, None), t])) == (
            f"spectrum: {said}; 0 of 1 speedups resolved")


def test_a_timed_baseline_with_no_speedup_beside_it_still_gets_a_line_saying_why() -> None:
    """Issue 48: pooled rounds set aside left the chosen point with no round beside the baseline,
    and the run printed no line at all for the analysis."""
    from harness.record.run_record import Skipped, UNTIMED
    from harness.report.labels import no_verdict

    chosen = timing("factored_gram", "chosen", 1.0, None)
    chosen.speedup, chosen.unresolved, chosen.unresolved_reason = None, True, "no round timed it beside the baseline"
    other = chosen.model_copy(update={"strategy": "dual_gram", "role": "compare"})
    a = analysis("factored_gram", [timing("gram_pairwise", "baseline", 1.0, None), other, chosen])
    assert verdict(a) is None
    assert no_verdict(a, "gram_pairwise") == ("spectrum: factored_gram has no speedup over gram_pairwise: no round "
                                              "timed it beside the baseline; 0 of 2 speedups resolved")
    alone = analysis("factored_gram", [timing("gram_pairwise", "baseline", 1.0, None)])
    alone.skipped = [Skipped(strategy="factored_gram", reason=UNTIMED)]
    assert no_verdict(alone, "gram_pairwise") == ("spectrum: no strategy was timed beside gram_pairwise; 0 of 1 "
                                                  "speedups resolved (1 of them not timed)")
    assert no_verdict(analysis("numpy", [timing("numpy", "baseline", 1.0, None)]), "numpy") is None  # nothing compared
