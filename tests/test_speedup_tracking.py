"""What asv tracks of the speedups (benchmarks/speedups.py) and the regression gate over it
(benchmarks/continuous.py): the points are the specs' compared strategies, a run's record becomes
the series, and the gate's verdicts map to its documented exit codes. The timing itself is
`harness run`'s, tested where it lives; the gate's end-to-end figures are in README."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

import benchmarks.continuous as continuous
from benchmarks.history_page import MACHINES, SLOW, write_results
from benchmarks.speedups import COMPARED, TIMED, Speedups, measured, run_spec
from harness.record.run_record import RunRecord

pytest.importorskip("asv")


def test_points_are_every_compared_strategy_of_each_tracked_analysis() -> None:
    assert {"task_geometry:spectrum/factored", "task_geometry:top3/torch", "task_geometry:geometry/factored_gram",
            "bench_dense:svd/process_pool", "bench_dense:svd_topk/torch_lowrank"} <= set(COMPARED)
    baselines = {"task_geometry:spectrum/numpy", "task_geometry:top3/scipy_svds", "task_geometry:geometry/dual_gram",
                 "bench_dense:svd/numpy"}
    assert not baselines & set(COMPARED) and baselines <= set(TIMED) and set(COMPARED) < set(TIMED)
    assert len(COMPARED) == len(set(COMPARED)) == 13


def test_a_runs_record_becomes_the_series(smoke_run: tuple[Path, RunRecord]) -> None:
    folder, record = smoke_run
    found = measured(folder, "smoke")
    timings = {(a.name, t.label): t for a in record.analyses for t in a.timings}
    assert set(found) == {f"smoke:{a}/{label}" for a, label in timings}
    for (analysis, label), t in timings.items():
        point = found[f"smoke:{analysis}/{label}"]
        assert point["seconds"] == pytest.approx(t.seconds_per_matrix) and point["seconds"] > 0
        assert 0.0 <= point["busy"] <= 1.0 and point["error"] < 1e-3
        if t.role != "baseline" and t.speedup_ci:
            low, high = t.speedup_ci
            assert point["speedup"] == t.speedup and point["interval"] == pytest.approx(math.sqrt(high / low))
    bench, point = Speedups(), next(p for p, v in found.items() if v["speedup"] != 1.0)
    assert bench.track_time_ratio(found, point) == pytest.approx(1 / found[point]["speedup"])
    assert math.isnan(bench.track_time_ratio(found, "smoke:nothing/here")) and math.isnan(bench.track_busy({}, point))


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
    assert err.startswith("continuous: git rev-parse") and "\n" not in err


@pytest.mark.parametrize("pair, busy, code, verdicts", [
    ((0, 2), 0.0, 1, {"regression", "no change"}),  # the synthetic torch slowdown at the last commit
    ((0, 1), 0.0, 0, {"no change"}),
    ((0, 2), 1.0, 4, {"inconclusive"}),  # the same slowdown, timed on a busy machine: never a verdict
])
def test_verdicts_and_exit_codes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 pair: tuple[int, int], busy: float, code: int, verdicts: set[str]) -> None:
    commits = write_results(tmp_path / "asv", commits=3, busy=busy)
    timed: list[str] = []
    monkeypatch.setattr(continuous, "RESULTS", tmp_path / "asv")
    monkeypatch.setattr(continuous, "commit", lambda ref: ref)
    monkeypatch.setattr(continuous, "asv", lambda *args, env=None: None)
    monkeypatch.setattr(continuous, "unpack", lambda sha, into: into)
    monkeypatch.setattr(continuous, "measure_commit", lambda sha, tree, machine: timed.append(sha))
    base, head = commits[pair[0]], commits[pair[1]]
    assert continuous.main([base, head, "--machine", MACHINES[0]]) == code
    assert timed == [base, head]
    out = capsys.readouterr().out
    summary = next(line for line in out.splitlines() if line.startswith(f"{base[:8]} -> {head[:8]} on {MACHINES[0]}: "))
    assert {v for v in ("regression", "no change", "inconclusive") if v in summary} == verdicts
    assert (f"{SLOW} on {MACHINES[0]}:" in out and "regression" in out) == (code == 1)
    assert "time: setup" in out and "load average" in out
