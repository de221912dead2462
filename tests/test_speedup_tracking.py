"""What asv tracks of the speedups (benchmarks/speedups.py) and the regression gate over it
(benchmarks/continuous.py): the points are the specs' compared strategies, a run's record becomes
the series, and the gate's verdicts map to its documented exit codes. The timing itself is
`harness run`'s, tested where it lives; the gate's end-to-end figures are in README."""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

import pytest

import benchmarks.continuous as continuous
from benchmarks.history_page import MACHINES, SLOW
from benchmarks.speedups import Dense, MainJob, measured, run_spec, untimed
from harness.record.run_record import UNTIMED, AnalysisRecord, RunRecord, Skipped
from harness.record.verification import Verification
from harness.report.regressions import BUSY_CAUSE, CAUSES, ELSEWHERE_CAUSE, FAILED_CAUSE, Side

pytest.importorskip("asv")


def test_points_are_every_strategy_of_each_tracked_analysis_its_baseline_first() -> None:
    assert MainJob.params == [
        "task_geometry:spectrum/numpy", "task_geometry:spectrum/process_pool", "task_geometry:spectrum/torch",
        "task_geometry:spectrum/factored", "task_geometry:top3/scipy_svds", "task_geometry:top3/torch_lowrank",
        "task_geometry:top3/torch", "task_geometry:top3/factored", "task_geometry:geometry/dual_gram",
        "task_geometry:geometry/factored_gram"]
    assert {"bench_dense:svd/numpy", "bench_dense:svd/process_pool", "bench_dense:svd_topk/torch_lowrank"} < set(Dense.params)
    assert len(Dense.params) == 9
    # a cache of its own per class: asv keys setup_cache by where its function is written
    assert MainJob.setup_cache.__code__.co_firstlineno != Dense.setup_cache.__code__.co_firstlineno


def test_a_runs_record_becomes_the_series(smoke_run: tuple[Path, RunRecord]) -> None:
    folder, record = smoke_run
    found = measured(folder, "smoke")
    timings = {(a.name, t.label): t for a in record.analyses for t in a.timings}
    assert set(found) == {f"smoke:{a}/{label}" for a, label in timings}
    for (analysis, label), t in timings.items():
        point = found[f"smoke:{analysis}/{label}"]
        assert point["seconds"] == pytest.approx(t.seconds_per_matrix) and point["seconds"] > 0
        assert 0.0 <= point["busy"] <= 1.0 and point["error"] < 1e-3
        if t.role == "baseline":
            assert point["speedup"] == 1.0 and point["interval"] == 1.0
        elif t.speedup_ci:
            low, high = t.speedup_ci
            assert point["speedup"] == t.speedup and point["interval"] == pytest.approx(math.sqrt(high / low))
    bench, point = MainJob(), next(p for p, v in found.items() if v["speedup"] != 1.0)
    assert bench.track_time_ratio(found, point) == pytest.approx(1 / found[point]["speedup"])
    assert math.isnan(bench.track_time_ratio(found, "smoke:nothing/here")) and math.isnan(bench.track_busy({}, point))


def test_why_a_run_did_not_time_a_point_becomes_its_cause_code() -> None:
    """asv's log says only n/a of a point the run did not time: the suite records which cause
    (walk-through 6, history 3), a code the history page reads back (report.regressions.CAUSES)."""
    analysis = AnalysisRecord.model_construct(timings=[], verification=[Verification.failed("cupy", 1e-3, "no GPU")],
                                              skipped=[Skipped(strategy="torch", reason=UNTIMED),
                                                       Skipped(strategy="numba", reason="its worker was lost")])
    assert untimed(analysis) == {"cupy": FAILED_CAUSE, "torch": BUSY_CAUSE, "numba": ELSEWHERE_CAUSE}
    found = {"e:a/torch": {"untimed": BUSY_CAUSE, "load": 6.1}}
    assert Dense().track_untimed(found, "e:a/torch") == BUSY_CAUSE and Dense().track_load(found, "e:a/torch") == 6.1
    assert Side(commit="c", speedup=None, untimed=BUSY_CAUSE, load=6.1).cause == f"{CAUSES[BUSY_CAUSE]} (load 6.1)"


def test_a_run_that_fails_says_how(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"harness run .*missing\.toml .* exited 2"):
        run_spec(tmp_path / "missing.toml", [], "1s", tmp_path)


def test_the_gate_unpacks_only_a_commits_harness(tmp_path: Path) -> None:
    head = continuous.commit("HEAD")
    tree = continuous.unpack(head, tmp_path)
    assert (tree / "harness" / "__init__.py").exists() and [p.name for p in tree.iterdir()] == ["harness"]
    shown = subprocess.run(["git", "show", f"{head}:harness/__init__.py"], capture_output=True, text=True,
                           cwd=continuous.ROOT, check=True).stdout
    assert (tree / "harness" / "__init__.py").read_text() == shown


def test_a_commit_that_is_not_one_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert continuous.main(["no-such-ref-40", "HEAD"]) == 2
    err = capsys.readouterr().err.strip()
    # in the user's words: it said `continuous: git rev-parse --verify --quiet no-such-ref-40^{commit}: failed`
    assert err.startswith("harness gate: no commit 'no-such-ref-40' in this repository") and "\n" not in err


def side(commit: str, speedup: float, interval: float = 1.2) -> object:
    from harness.report.regressions import Side

    return Side(commit=commit, speedup=speedup, interval=interval, busy=0.0)


def test_the_gate_takes_only_the_suites_it_timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """asv's results for a commit hold what an earlier `asv run` timed too (the dense case): the gate
    judged those stored points, not asked for, as inconclusive "runs 1.26x, 1.26x, 1.26x"."""
    from benchmarks.history_page import write_results

    commits = write_results(tmp_path, commits=2)
    monkeypatch.setattr(continuous, "RESULTS", tmp_path)
    main_job = continuous.timed(MACHINES[0], commits[-1], [])  # the default --bench: the main job's
    assert main_job and set(main_job) <= set(MainJob.params) and not set(main_job) & set(Dense.params)
    assert set(continuous.timed(MACHINES[0], commits[-1], [], r"^speedups\.")) & set(Dense.params)


@pytest.mark.parametrize("head_runs, code, verdict", [
    ([2.0, 2.1, 1.95], 1, "regression"),  # 1.5x slower than BASE's 3x, every run
    ([3.0, 3.1, 2.95], 0, "no change"),
    ([2.0, 6.0, 2.1], 4, "inconclusive"),  # HEAD's runs scattered: the interval too wide to tell
])
def test_the_gate_interleaves_three_runs_and_exits_with_its_verdict(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], head_runs: list[float], code: int,
        verdict: str) -> None:
    base_runs = [3.0, 3.05, 2.97]
    order: list[str] = []
    monkeypatch.setattr(continuous, "commit", lambda ref: ref * 40)
    monkeypatch.setattr(continuous, "asv", lambda *args, env=None: None)
    monkeypatch.setattr(continuous, "unpack", lambda sha, into: into)
    monkeypatch.setattr(continuous, "measure_commit", lambda sha, tree, machine, bench: order.append(sha))

    def timed(machine: str, sha: str, skipped: list[str], bench: str) -> dict[str, object]:
        n = order.count(sha) - 1
        runs = head_runs if sha == "b" * 40 else base_runs
        return {SLOW: side(sha, runs[n]), "e:a/steady": side(sha, 10.0 * (1 + 0.01 * n))}

    monkeypatch.setattr(continuous, "timed", timed)
    assert continuous.main(["a", "b", "--machine", MACHINES[0]]) == code
    assert order == ["a" * 40, "b" * 40] * 3
    out = capsys.readouterr().out
    assert re.search(rf"^{re.escape(SLOW)} on {MACHINES[0]}: .*: {verdict}", out, re.M)
    assert re.search(r"^e:a/steady on .*: no change", out, re.M)
    assert "time: setup" in out and "load average" in out


def test_the_scaling_suite_tracks_each_timed_strategys_exponent_of_a_valid_small_sweep(tmp_path: Path) -> None:
    """Its points are the sweep's timed strategies, its sweep plans as `harness run` would run it,
    and a sweep record's fits become the series (an unfitted strategy a NaN)."""
    from benchmarks.scaling import BUDGET, SETS, SPEC, Exponents, exponents
    from harness.bench.scaling import power_law
    from harness.record.sweep_record import ScalingFit, SweepRecord, write_sweep
    from harness.run.sweep import plan_sweep

    assert Exponents.params == ["spectrum/numpy", "spectrum/factored"]
    sweep = plan_sweep(SPEC, SETS, BUDGET)
    assert sweep is not None and [p.values["data.rank"] for p in sweep.points] == [8, 32, 128]
    sizes = [8.0, 32.0, 128.0]
    fit = ScalingFit(analysis="spectrum", strategy="factored", axis="data.rank", sizes=sizes,
                     power=power_law(sizes, [n**1.5 for n in sizes]), complexity="n log n", rms=0.1)
    write_sweep(SweepRecord(experiment="sweep_rank", spec_path=str(SPEC), command="harness run", started="now",
                            axes={"data.rank": [8, 32, 128]}, fits=[fit]), tmp_path)
    cache = exponents(tmp_path)
    bench = Exponents()
    assert bench.track_exponent(cache, "spectrum/factored") == pytest.approx(1.5)
    assert math.isnan(bench.track_exponent(cache, "spectrum/numpy"))
    assert Exponents.track_exponent.unit == "exponent"  # type: ignore[attr-defined]
