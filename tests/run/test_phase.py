"""The benchmark phase end to end on the smoke spec: within a budget no strategy is dropped,
references are shared, threads are explicit, and unstable timings are said and never cached."""

from pathlib import Path

import pytest

from harness.bench import measure as measuring
from harness.cli.main import main
from harness.report.terminal import bench_lines
from harness.record.run_record import load_record
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")


def test_a_zero_budget_still_times_every_strategy_on_every_group(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["run", SMOKE, "-o", str(out), "--no-cache", "--budget", "0s",
                 "--set", "benchmark.repeats=5", "--set", "benchmark.sample=3"]) == 0
    record = load_record(out)
    assert record.bench is not None and record.bench.budget_s == 0.0
    for analysis, step in zip(record.analyses, record.plan.steps):
        assert [t.strategy for t in analysis.timings] == [t.strategy for t in step.timed]
        for timing in analysis.timings:
            assert timing.groups and all(len(g.measurement.samples_s) >= 1 for g in timing.groups)
            assert timing.cut, f"{analysis.name}: {timing.strategy} was cut but says nothing"
        assert all(v.passed for v in analysis.verification)
    assert any("matrix per group" in (t.cut or "") for a in record.analyses for t in a.timings)


def test_threads_are_the_plans_and_references_are_shared(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["run", SMOKE, "-o", str(out), "--no-cache", "--set", "benchmark.threads=1"]) == 0
    record = load_record(out)
    assert record.plan.bench is not None and record.plan.bench.threads == 1
    for analysis in record.analyses:
        for timing in analysis.timings:
            for g in timing.groups:
                assert set(g.measurement.threads.values()) == {1}, g.measurement.threads
                assert g.measurement.conditions is not None
    # svdvals, svd and svd_topk time the same 2 matrices of each of the 2 groups: 4 value
    # references for all three; the pca's 2 positions add 2 Gram references
    assert record.bench is not None
    assert record.bench.references_computed == 4 + 2


def test_unstable_measurements_are_said_and_said_again_when_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measuring, "judge", lambda samples, conditions: ["load 18.4 on 2 cores"])
    spec = ["--set", "analysis=[{op='svdvals', strategy='factored', compare=['numpy']}]",
            "--set", f"execution.cache_dir='{tmp_path / 'cache'}'"]
    assert main(["run", SMOKE, "-o", str(tmp_path / "a"), *spec]) == 0
    first = load_record(tmp_path / "a")
    assert first.bench is not None and first.bench.unstable == 4  # 2 strategies x 2 groups
    lines = bench_lines(first)
    assert any("unstable" in line and "load 18.4 on 2 cores" in line for line in lines)
    monkeypatch.setattr(measuring, "judge", lambda samples, conditions: [])  # a quiet machine now
    assert main(["run", SMOKE, "-o", str(tmp_path / "b"), *spec]) == 0
    second = load_record(tmp_path / "b")
    assert all(t.cached for t in second.analyses[0].timings)
    assert any("load 18.4 on 2 cores (measured by an earlier run" in line for line in bench_lines(second))
    assert main(["run", SMOKE, "-o", str(tmp_path / "c"), "--no-cache", *spec]) == 0
    assert load_record(tmp_path / "c").bench.unstable == 0  # type: ignore[union-attr]


def test_a_pool_is_started_before_its_first_timed_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from contextlib import contextmanager

    from harness.run import context
    from harness.run import phase as phasing
    from harness.base.executors import SerialExecutor

    started: list[bool] = []

    @contextmanager
    def pool(workers: int, threads: int = 1, preload: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
        started.append(True)
        yield SerialExecutor()

    measured = phasing.measure

    def measure(fn, **kwargs):  # type: ignore[no-untyped-def]
        strategy = fn.args[0]  # partial(compute_batches, strategy, op, batches, ctx)
        assert started or not strategy.fans_out, "the pool would start inside the timed call"
        return measured(fn, **kwargs)

    monkeypatch.setattr(context, "process_pool", pool)
    monkeypatch.setattr(phasing, "measure", measure)
    spec = ["--set", "analysis=[{op='svdvals', strategy='numpy', compare=['process_pool']}]", "--budget", "0"]
    assert main(["run", SMOKE, "-o", str(tmp_path / "r"), "--no-cache", *spec]) == 0
    assert started == [True]


def test_every_strategy_is_warmed_before_it_is_timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's import and the Gram kernel's compilation happen before, never inside, a timed call."""
    from harness.run import phase as phasing
    from harness.strategies.base import StrategyBase

    events: list[str] = []
    warm = StrategyBase.warm

    def warming(self, backend):  # type: ignore[no-untyped-def]
        events.append(f"warm {self.name}")
        warm(self, backend)

    measured = phasing.measure

    def measure(fn, **kwargs):  # type: ignore[no-untyped-def]
        events.append("measure")
        return measured(fn, **kwargs)

    monkeypatch.setattr(StrategyBase, "warm", warming)
    monkeypatch.setattr(phasing, "measure", measure)
    assert main(["run", SMOKE, "-o", str(tmp_path / "r"), "--no-cache", "--budget", "0"]) == 0
    assert events.count("measure") == sum(1 for i, e in enumerate(events) if e == "measure" and events[i - 1].startswith("warm"))
    record = load_record(tmp_path / "r")
    upfront = events.index("measure") - 1  # the runner's, for the chosen strategies, before any analysis
    assert all(e.startswith("warm") for e in events[:upfront])
    timed = 2 * sum(len(t.groups) for a in record.analyses for t in a.timings)
    assert "warm dual_gram" in events and len(events) - upfront == timed


def test_the_gram_kernel_is_compiled_by_warming() -> None:
    import sys

    from harness.strategies.registry import STRATEGIES

    pytest.importorskip("numba")
    STRATEGIES["dual_gram"].warm("numpy")
    assert "harness.linalg.gram_kernel" in sys.modules


def test_a_pool_gets_its_matrix_per_worker_whatever_the_order(tmp_path: Path) -> None:
    """With sample = 1 the pool still needs 2 matrices; the strategies timed after it must not
    shrink the shared sample back to 1."""
    spec = ["--set", "benchmark.sample=1", "--set", "execution.workers=2",
            "--set", "analysis=[{op='svdvals', strategy='factored', compare=['numpy', 'process_pool', 'torch']}]"]
    assert main(["run", SMOKE, "-o", str(tmp_path / "r"), "--no-cache", *spec]) == 0
    timings = {t.strategy: t for t in load_record(tmp_path / "r").analyses[0].timings}
    assert [g.sampled for g in timings["process_pool"].groups] == [2, 2]
    assert [g.sampled for g in timings["numpy"].groups] == [1, 1]
