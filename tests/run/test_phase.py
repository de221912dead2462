"""The benchmark phase end to end on the smoke spec, each point in its own worker process: within
a budget no strategy is dropped, references are shared, threads are the plan's, rounds are pooled
by run, and a busy machine's rounds are kept with their reasons."""

from pathlib import Path

import pytest

from harness.bench.budget import PROCESSES
from harness.cli.main import main
from harness.report.terminal import bench_lines
from harness.record.run_record import load_record
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")
ONE = ["--set", "analysis=[{op='svdvals', strategy='factored', compare=['numpy']}]"]


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A quiet machine (whatever else the test machine runs) and a pool of its own."""
    from harness.run import rounds as rounding

    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: [])


def test_a_zero_budget_still_times_every_strategy_on_every_group(tmp_path: Path, quiet: None) -> None:
    out = tmp_path / "run"
    assert main(["run", SMOKE, "-o", str(out), "--no-cache", "--budget", "0s",
                 "--set", "benchmark.repeats=5", "--set", "benchmark.sample=3"]) == 0
    record = load_record(out)
    assert record.bench is not None and record.bench.budget_s == 0.0 and record.bench.floor_s > 0
    assert len(record.bench.run_id) == 12 and record.schema_version == 5
    for analysis, step in zip(record.analyses, record.plan.steps):
        assert [t.strategy for t in analysis.timings] == [t.strategy for t in step.timed]
        for timing in analysis.timings:
            assert timing.groups and all(len(g.rounds) >= 1 for g in timing.groups)
            assert all(g.calls >= 5 * len(g.rounds) for g in timing.groups)  # repeats: calls a round
            assert {r.split("#")[0] for g in timing.groups for r in g.rounds} == {  # its processes
                f"{record.bench.run_id}.{k}" for k in range(PROCESSES)}
            assert timing.cut and "round" in timing.cut
            if timing.role != "baseline":  # never a speedup without saying how sure it is
                assert timing.speedup_ci is not None or timing.unresolved
                assert timing.runs == 1 and timing.processes == PROCESSES and timing.spread is None
        assert all(v.passed for v in analysis.verification)


def test_threads_are_the_plans_in_the_workers_and_references_are_shared(tmp_path: Path, quiet: None) -> None:
    out = tmp_path / "run"
    assert main(["run", SMOKE, "-o", str(out), "--no-cache", "--set", "benchmark.threads=1"]) == 0
    record = load_record(out)
    assert record.plan.bench is not None and record.plan.bench.threads == 1
    for analysis in record.analyses:
        for timing in analysis.timings:
            for g in timing.groups:
                assert g.measurement.threads and set(g.measurement.threads.values()) == {1}, g.measurement.threads
                assert g.measurement.conditions is not None
    # svdvals, svd and svd_topk rotate through the same 2 matrices of each of the 2 groups: 4 value
    # references at most for all three; the pca's 2 positions add 2 Gram references at most
    assert record.bench is not None
    assert 2 + 1 <= record.bench.references_computed <= 4 + 2


def test_rounds_are_pooled_into_the_next_run_unless_fresh(tmp_path: Path, quiet: None) -> None:
    """A resolved speedup costs the next run no round; --fresh measures anew; both keep rounds. Run
    b finds a's rounds settled whatever the load (the rule is tests/bench/test_series.py's: under
    load a's interval may stay wider than any target)."""
    from harness.bench.series import Settlement
    from harness.run import phase as phasing, rounds as rounding

    spec = ["--no-cache", *ONE, "--set", "benchmark.target='100%'"]
    assert main(["run", SMOKE, "-o", str(tmp_path / "a"), *spec]) == 0
    first = load_record(tmp_path / "a").analyses[0].timings
    assert all(t.rounds >= 1 and t.rounds_pooled == 0 and not t.cached for t in first)
    with pytest.MonkeyPatch.context() as settled:
        for module in (rounding, phasing):
            settled.setattr(module, "settlement", lambda found, target, names=("", ""): Settlement(
                settled=found is not None, resolved=found is not None))
        assert main(["run", SMOKE, "-o", str(tmp_path / "b"), *spec]) == 0
    second = load_record(tmp_path / "b")
    assert all(t.cached and t.rounds_pooled == t.rounds >= 1 for t in second.analyses[0].timings)
    assert all(t.reused_from is not None and t.reused_from <= second.started for t in second.analyses[0].timings)
    assert not any(t.reused_from for t in first)
    assert second.bench is not None and second.bench.rounds == 0 and second.bench.rounds_pooled > 0
    assert main(["run", SMOKE, "-o", str(tmp_path / "c"), *spec, "--fresh"]) == 0
    fresh = load_record(tmp_path / "c")
    assert all(t.rounds_pooled == 0 and not t.cached and t.runs == 1 for t in fresh.analyses[0].timings)
    assert main(["run", SMOKE, "-o", str(tmp_path / "d"), *spec, "--set", "benchmark.target='1%'"]) == 0
    last = load_record(tmp_path / "d")
    pooled = next(t for t in last.analyses[0].timings if t.role != "baseline")
    assert pooled.rounds_pooled > 0 and last.bench is not None
    assert all(t.earlier_ci is None for t in first)  # no earlier run: nothing this run could widen
    assert pooled.earlier_ci is not None and (last.bench.rounds or pooled.earlier_ci == pooled.speedup_ci)
    if last.bench.rounds:  # a, c and d: the rounds of b's run were a's
        assert pooled.runs == 3
    else:  # a and c settled it: their pooled interval held to 1%, or only the machine's spread is left
        assert pooled.runs == 2 and pooled.speedup_ci is not None and pooled.settled
        low, high = pooled.speedup_ci
        assert (max(high / pooled.speedup - 1, 1 - low / pooled.speedup) <= 0.01
                or "the machine's own spread" in (pooled.unresolved_reason or ""))


@pytest.mark.parametrize("strategy", ["factored_gram", "dual_gram"])
def test_a_pcas_rounds_at_one_rank_are_not_pooled_at_another(strategy: str, tmp_path: Path, quiet: None) -> None:
    """A position's shape is the same at every rank, its cost is not (factored_gram's grows as
    rank^2, dual_gram's forming of the deltas as rank): a rank sweep must not reuse one rank's
    rounds at another. The same rank pools them."""
    pca = (f"analysis=[{{op='pca', components=2, strategy='{strategy}', baseline='{strategy}', "
           f"compare=['{strategy}']}}]")
    spec = ["--no-cache", "--set", pca, "--set", "benchmark.target='100%'"]  # any interval at all resolves
    for name, rank in (("a", 4), ("b", 8), ("c", 8)):
        assert main(["run", SMOKE, "-o", str(tmp_path / name), *spec, "--set", f"data.rank={rank}"]) == 0
    timed = {name: load_record(tmp_path / name).analyses[0].timings[0] for name in "abc"}
    assert [t.strategy for t in timed.values()] == [strategy] * 3
    assert timed["b"].rounds_pooled == 0 and not timed["b"].cached
    assert timed["c"].rounds_pooled > 0


def test_an_old_spec_key_reads_as_the_target(tmp_path: Path, quiet: None) -> None:
    assert main(["run", SMOKE, "-o", str(tmp_path / "a"), "--no-cache", *ONE,
                 "--set", "benchmark.precision='100%'"]) == 0
    assert load_record(tmp_path / "a").bench.precision == 1.0  # type: ignore[union-attr]


@pytest.fixture
def shares(quiet: None, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, float]]:
    """Each run's analyses that get a share of the budget (the weights its Budget starts with)."""
    from harness.run import phase as phasing

    budgets: list[dict[str, float]] = []

    class Seen(phasing.Budget):  # type: ignore[misc]
        def __init__(self, budget_s: float, limit_s: float, floors: dict[str, float],
                     weights: dict[str, float]) -> None:
            budgets.append(dict(weights))
            super().__init__(budget_s, limit_s, floors, weights)

    monkeypatch.setattr(phasing, "Budget", Seen)
    return budgets


def test_an_analysis_its_pooled_rounds_settle_keeps_no_share_of_the_budget(
        tmp_path: Path, shares: list[dict[str, float]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Its floor and share go to the analyses that still need rounds, even those before it. Run a
    is real whatever the load; run b finds what it pooled settled (the rule is
    tests/bench/test_series.py's: under load run a's interval may stay wider than any target)."""
    from harness.bench.series import Settlement
    from harness.run import phase as phasing, rounds as rounding

    values = "{name='values', op='svdvals', strategy='factored', compare=['numpy']}"
    top = "{name='top', op='svd_topk', k=2, strategy='factored', compare=['scipy_svds']}"
    common = ["--no-cache", "--set", "benchmark.target='100%'"]
    assert main(["run", SMOKE, "-o", str(tmp_path / "a"), *common, "--set", f"analysis=[{values}]"]) == 0
    for module in (rounding, phasing):  # the phase's share and the rounds' own rule alike
        monkeypatch.setattr(module, "settlement", lambda found, target, names=("", ""): Settlement(
            settled=found is not None, resolved=found is not None))
    assert main(["run", SMOKE, "-o", str(tmp_path / "b"), *common, "--set", f"analysis=[{top}, {values}]"]) == 0
    assert set(shares[0]) == {"values"} and set(shares[1]) == {"top"}  # "values" is settled by run a's rounds
    assert load_record(tmp_path / "b").analyses[1].timings[0].cached


def test_each_point_of_a_strategy_is_settled_by_its_own_pooled_rounds(
        tmp_path: Path, shares: list[dict[str, float]]) -> None:
    """factored@float32's pooled rounds say nothing of factored@bfloat16, which still needs its
    rounds: the analysis keeps its share (points of one strategy are told apart by their labels)."""
    common = ["--no-cache", "--set", "benchmark.target='100%'"]
    values = ("{{name='values', op='svdvals', strategy='factored', compare=['numpy', 'factored'], tolerance=0.05, "
              "precisions={}}}")
    assert main(["run", SMOKE, "-o", str(tmp_path / "a"), *common,
                 "--set", f"analysis=[{values.format(['float32'])}]"]) == 0
    assert main(["run", SMOKE, "-o", str(tmp_path / "b"), *common,
                 "--set", f"analysis=[{values.format(['bfloat16', 'float32'])}]"]) == 0
    assert set(shares[1]) == {"values"}


def test_rounds_measured_under_load_are_kept_flagged_and_outweighed_by_quiet_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A busy run's rounds are said, kept in the pool with their reasons, and used by a later run
    only while its quiet rounds are too few; the wisdom keeps them flagged, says so, and a quiet
    run's measurements replace them."""
    from harness.bench import measure
    from harness.machine import wisdom
    from harness.machine.info import probe

    from harness.bench import noise
    from harness.run import rounds as rounding

    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))
    busy = lambda conditions: ["load 18.4 on 2 cores"]  # noqa: E731
    monkeypatch.setattr(rounding, "condition_reasons", busy)
    monkeypatch.setattr(noise, "condition_reasons", busy)
    assert main(["run", SMOKE, "-o", str(tmp_path / "a"), "--no-cache", *ONE]) == 0
    first = load_record(tmp_path / "a")
    assert first.bench is not None and first.bench.busy_rounds > 0 and first.bench.unstable > 0
    assert any("unstable" in line and "load 18.4 on 2 cores" in line for line in bench_lines(first))
    factored = next(t for t in first.analyses[0].timings if t.strategy == "factored")
    assert factored.speedup_ci is not None and factored.busy_rounds == factored.rounds  # an answer, flagged
    said = capsys.readouterr().err
    assert ("wisdom: 4 measurements taken while busy (svdvals: numpy, factored) inform the next plan until quiet "
            "ones replace them") in " ".join(said.split())
    learned = wisdom.load(tmp_path / "wisdom", probe()).observations
    assert len(learned) == 4 and all(o.busy is not None for o in learned)  # two strategies on two groups
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: [])
    monkeypatch.setattr(noise, "condition_reasons", lambda conditions: [])
    monkeypatch.setattr(measure, "judge", lambda samples, conditions, earlier=(), per=1: [])  # steady, whatever this machine runs
    assert main(["run", SMOKE, "-o", str(tmp_path / "b"), "--no-cache", *ONE]) == 0
    second = load_record(tmp_path / "b")
    assert second.bench is not None and second.bench.rounds_pooled > 0 and second.bench.rounds >= 1
    factored = next(t for t in second.analyses[0].timings if t.strategy == "factored")
    assert factored.busy_rounds == 0 and factored.runs == 1  # its own quiet rounds outweigh the busy run's
    assert "wisdom: the next plan" not in capsys.readouterr().err  # quiet measurements are simply used
    assert all(o.busy is None for o in wisdom.load(tmp_path / "wisdom", probe()).observations)  # and replace them


@pytest.mark.parametrize("cut", ["every group", "the second group"])
def test_a_busy_machine_out_of_time_still_times_the_baseline_and_the_chosen_strategy(
        cut: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Every analysis gets an answer: the baseline and the chosen strategy get their first round
    whatever the load; a compared one cut before a round of every group has no timing (never a
    made-up one, nor one of half the workload), says why, and is still verified. The log says,
    once, that the budget ended the analysis' rounds."""
    from harness.run import rounds as rounding
    from harness.record.run_record import UNTIMED

    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: ["load 18.4 on 2 cores"])
    monkeypatch.setattr(rounding.Rounds, "_block_s",  # no block fits the limit (but the first group's)
                        lambda self, subject, slot=0: 1e9 if cut == "every group" or subject.part == 1 else 0.0)
    spec = ["--no-cache", "--set", "analysis=[{op='svdvals', strategy='factored', compare=['numpy', 'torch']}]"]
    assert main(["run", SMOKE, "-o", str(tmp_path / "a"), *spec]) == 0
    record = load_record(tmp_path / "a")
    (analysis,) = record.analyses
    assert {t.strategy for t in analysis.timings} == {"numpy", "factored"} and record.bench.rounds == 1  # type: ignore[union-attr]
    factored = next(t for t in analysis.timings if t.strategy == "factored")
    assert factored.speedup_ci is not None  # one round, and still an interval: a wide one
    assert {s.strategy: s.reason for s in analysis.skipped} == {"torch": UNTIMED}
    assert {v.strategy for v in analysis.verification if v.passed} == {"numpy", "factored", "torch"}
    assert any(line.startswith("not timed, out of time on a busy machine: svdvals: torch") for line in bench_lines(record))
    stopped = [line for line in capsys.readouterr().err.splitlines() if line.startswith("svdvals: rounds: ")]
    assert len(stopped) == 1 and f"the {record.bench.limit_s:.1f} s " in stopped[0], stopped  # type: ignore[union-attr]


def test_a_warm_rerun_of_a_settled_spec_starts_no_worker(tmp_path: Path, quiet: None,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run is real whatever the load; the second finds its pooled rounds settled (the
    rule itself is tests/bench/test_series.py's: under load a first run's interval may not be) and
    then must start no worker, time no round and still verify and record."""
    from harness.bench.series import Settlement
    from harness.run import rounds as rounding

    assert main(["run", SMOKE, "-o", str(tmp_path / "a"), *ONE]) == 0

    def no_worker(self: object, blocks: object) -> None:
        raise AssertionError(f"a settled point started workers for {blocks}")

    monkeypatch.setattr(rounding, "settlement", lambda found, target, names=("", ""): Settlement(
        settled=found is not None, resolved=found is not None))
    monkeypatch.setattr(rounding.Rounds, "_start", no_worker)
    assert main(["run", SMOKE, "-o", str(tmp_path / "b"), *ONE]) == 0
    record = load_record(tmp_path / "b")
    assert record.bench is not None and record.bench.rounds == 0
    assert all(v.passed for a in record.analyses for v in a.verification)


def test_the_gram_kernel_is_compiled_by_warming() -> None:
    import sys

    from harness.strategies.registry import STRATEGIES

    pytest.importorskip("numba")
    STRATEGIES["dual_gram"].warm("numpy")
    assert "harness.linalg.gram_kernel" in sys.modules


@pytest.mark.parametrize("hands_stored,compiled", [(False, []), (True, ["deltas", "stored"]), (None, ["deltas", "stored"])])
def test_warming_compiles_only_the_kernels_the_source_will_call(
        hands_stored: bool | None, compiled: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh clone compiles each kernel once (3 s for the stored-delta ones): a synthetic run's
    dual_gram never calls them, a checkpoint's does, and an unknown source gets them all."""
    from types import SimpleNamespace

    from harness.strategies import gram

    pytest.importorskip("numba")
    calls: list[str] = []
    monkeypatch.setattr(gram, "warm_deltas", lambda: calls.append("deltas"))
    monkeypatch.setattr(gram, "accumulate_delta_gram", lambda blocks: calls.append("stored"))
    source = None if hands_stored is None else SimpleNamespace(hands_stored=hands_stored)
    monkeypatch.setattr(gram, "load_kernel", lambda name: SimpleNamespace(
        add_piece_delta_gram=lambda *a: None, piece_scratch=lambda n: None))
    gram.DualGramStrategy().warm("numpy", source)  # type: ignore[arg-type]
    assert sorted(set(calls)) == compiled


def test_a_pool_gets_its_matrix_per_worker_whatever_the_order(tmp_path: Path) -> None:
    """With sample = 1 the pool still needs 2 matrices; the strategies timed after it must not
    shrink the shared sample back to 1."""
    spec = ["--set", "benchmark.sample=1", "--set", "execution.workers=2",
            "--set", "analysis=[{op='svdvals', strategy='factored', compare=['numpy', 'process_pool', 'torch']}]"]
    assert main(["run", SMOKE, "-o", str(tmp_path / "r"), "--no-cache", *spec]) == 0
    timings = {t.strategy: t for t in load_record(tmp_path / "r").analyses[0].timings}
    assert [g.sampled for g in timings["process_pool"].groups] == [2, 2]
    assert [g.sampled for g in timings["numpy"].groups] == [1, 1]


def test_an_environment_is_an_axis_timed_in_a_worker_of_its_own(tmp_path: Path, quiet: None) -> None:
    """Each point again in its own environment, labelled and recorded; the analysis itself and the
    user's environment are untouched."""
    import csv
    import os

    before = dict(os.environ)
    spec = ["--no-cache", "--set", "analysis=[{op='svd_topk', k=2, strategy='factored', compare=['scipy_svds'], "
            "environments=[{OPENBLAS_THREAD_TIMEOUT='18'}]}]"]
    assert main(["run", SMOKE, "-o", str(tmp_path / "a"), *spec]) == 0
    assert dict(os.environ) == before
    (analysis,) = load_record(tmp_path / "a").analyses
    labels = {t.label: t.env for t in analysis.timings}
    assert labels["scipy_svds+OPENBLAS_THREAD_TIMEOUT=18"] == {"OPENBLAS_THREAD_TIMEOUT": "18"}
    assert labels["scipy_svds"] == {} and analysis.strategy == "factored"
    rows = list(csv.DictReader((tmp_path / "a" / "timings.csv").open()))
    assert {r["env"] for r in rows} == {"", "OPENBLAS_THREAD_TIMEOUT=18"}


def test_the_wisdom_keeps_one_figure_per_shape_for_a_strategy_whose_cost_ignores_the_rank(
        tmp_path: Path, quiet: None) -> None:
    """Walk-through 7: numpy (LAPACK on the dense delta) read 45.4 ms at rank 16 and 36.2 ms at
    ranks 32-256 of one 512x512 shape: each rank was a wisdom entry of its own, and the plan read
    whichever came first. Its measurements now merge into one entry per shape; factored's, whose
    cost grows with the rank, stay apart."""
    from harness.machine import wisdom
    from harness.machine.info import probe

    for name, rank in (("a", 4), ("b", 8)):
        assert main(["run", SMOKE, "-o", str(tmp_path / name), "--no-cache", "--budget", "0s", *ONE,
                     "--set", f"data.rank={rank}"]) == 0
    learned = wisdom.load(tmp_path / "wisdom", probe()).observations
    numpy = [o for o in learned if o.strategy == "numpy"]
    factored = [o for o in learned if o.strategy == "factored"]
    shapes = {o.shape for o in numpy}
    assert numpy and all(o.rank is None for o in numpy) and len(numpy) == len(shapes)
    assert {(o.shape, o.rank) for o in factored} == {(shape, rank) for shape in shapes for rank in (4, 8)}
