"""The machine's wisdom: flop counts, interpolation, stale files ignored, the planner's choices
flipping on (fake) measurements, runs and calibrations teaching it."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from rich.console import Console

from harness.cli import main as cli
from harness.machine import wisdom
from harness.machine.picks import KEPT, Pick
from harness.bench import measure as measure_module
from harness.machine.roofline import RUN_PROBE, Roof
from harness.run.calibrate import _spec, calibrate, lora_ops, values_ops
from harness.data.layout import AdapterLayout
from harness.data.registry import build_source
from harness.data.workload import ShapeGroup, Workload
from harness.machine.info import ThreadPool, probe
from harness.plan.compiler import compile_plan
from harness.base.progress import Display
from harness.report.plan_view import plan_lines
from harness.record.run_record import load_record
from harness.specs.reading import load_spec
from harness.strategies import cost
from harness.strategies.base import OpRequest
from harness.strategies.registry import STRATEGIES
from tests.conftest import CONFIGS

MACHINE = probe()


def observation(strategy: str, shape: tuple[int, int], seconds: float, *, op: str = "svdvals", device: str = "numpy",
                threads: int = 1, samples: int = 7, when: str = "2026-11-23T10:00:00+00:00",
                width: int = 1, busy: float | None = None) -> wisdom.Observation:
    flops = cost.svd_flops(shape, op != "svdvals")
    return wisdom.Observation(strategy=strategy, op=op, shape=shape, dtype="float32", device=device, threads=threads,
                              width=width, seconds=seconds, flops=flops, samples=samples, when=when, source="test",
                              busy=busy)


# --- flop and byte counts -------------------------------------------------------------------------

def test_flop_counts_on_known_cases() -> None:
    m, n = 3072, 768
    assert cost.svd_flops((m, n), False) == 4 * m * n**2 - 4 / 3 * n**3  # Golub & Van Loan 5.4.9
    assert cost.svd_flops((n, m), True) == 6 * m * n**2 + 20 * n**3  # orientation does not change the count
    assert cost.dense_work((m, n), False, 4).bytes == 4 * (m * n + n)  # the matrix in, the values out
    assert cost.dense_work((m, n), True, 4).bytes == 4 * (m * n + n + (m + n) * n)
    assert cost.gram_work(2, 3, 4) == cost.Work(2 * 3 * 3, 4 * 2 * 3)  # n (n + 1) d with symmetry
    assert cost.factored_work((m, n), 16, False, 4) == cost.Work(4 * (m + n) * 256 + 22 * 16**3, 4 * ((m + n) * 16 + 16))
    assert cost.lanczos_work((m, n), 3, 8) == cost.Work(2 * m * n * 45, 8 * m * n * 45)  # ARPACK's least


def test_each_strategy_counts_its_own_kernel() -> None:
    group = ShapeGroup(shape=(300, 200), rank=8, refs=())
    op = OpRequest("svd_topk", 3)
    assert STRATEGIES["numpy"].work(OpRequest("svdvals"), group, 4) == cost.dense_work((300, 200), False, 4)  # type: ignore[attr-defined]
    # float32 factors take the Gram route, float64 ones Householder QR: each counts its own
    assert STRATEGIES["factored"].work(op, group, 4) == cost.factored_gram_work((300, 200), 8, 3, 4)  # type: ignore[attr-defined]
    assert STRATEGIES["factored"].work(op, group, 8) == cost.factored_work((300, 200), 8, True, 8)  # type: ignore[attr-defined]
    assert STRATEGIES["scipy_svds"].work(op, group, 4) == cost.lanczos_work((300, 200), 3, 4)  # type: ignore[attr-defined]
    assert STRATEGIES["torch_lowrank"].work(op, group, 4) == cost.randomized_work((300, 200), 13, 2, 4)  # type: ignore[attr-defined]


def test_gram_strategies_count_per_layout(lora_workload: Workload) -> None:
    layout = AdapterLayout.from_workload(lora_workload)
    dense = STRATEGIES["dual_gram"].work(layout, 4)  # type: ignore[attr-defined]
    assert dense == cost.Work(layout.n * (layout.n + 1) * layout.d, 4 * layout.n * layout.d)
    factored = STRATEGIES["factored_gram"].work(layout, 4)  # type: ignore[attr-defined]
    nr = [layout.n * p.rank for p in layout.positions]  # type: ignore[operator]
    assert factored.flops == sum(r * (r + 1) * sum(p.shape) for r, p in zip(nr, layout.positions))  # syrk


# --- estimates ------------------------------------------------------------------------------------

def test_estimates_interpolate_by_flops_and_stay_within_coverage() -> None:
    w = wisdom.Wisdom(machine=wisdom.identity(MACHINE))
    small, big = observation("numpy", (100, 100), 1e-3), observation("numpy", (400, 400), 0.1)
    w.add([small, big])
    for o in (small, big):  # on a measured point: its own seconds, and where they came from
        found = w.estimate("numpy", "svdvals", "numpy", "float32", 1, o.flops, o.shape)
        assert found is not None and math.isclose(found.seconds, o.seconds)
        assert found.basis == "measured on this machine, 2026-11-23, 7 samples"
    middle = math.sqrt(small.flops * big.flops)  # a power law between neighbours: the geometric mean
    found = w.estimate("numpy", "svdvals", "numpy", "float32", 1, middle, (200, 200))
    assert found is not None and math.isclose(found.seconds, math.sqrt(1e-3 * 0.1))
    assert found.basis.endswith("14 samples")
    beyond = w.estimate("numpy", "svdvals", "numpy", "float32", 1, 2 * big.flops, (500, 500))
    assert beyond is not None and math.isclose(beyond.seconds, 0.2)  # a constant rate past the last point
    assert w.estimate("numpy", "svdvals", "numpy", "float32", 1, 5 * big.flops, (800, 800)) is None
    assert w.estimate("numpy", "svdvals", "numpy", "float32", 1, small.flops / 5, (50, 50)) is None
    for other in [("torch", "svdvals", "numpy", "float32", 1), ("numpy", "svd", "numpy", "float32", 1),
                  ("numpy", "svdvals", "cpu", "float32", 1), ("numpy", "svdvals", "numpy", "float64", 1),
                  ("numpy", "svdvals", "numpy", "float32", 2)]:
        assert w.estimate(*other, small.flops, small.shape) is None


def test_estimates_prefer_the_same_orientation() -> None:
    w = wisdom.Wisdom(machine=wisdom.identity(MACHINE))
    w.add([observation("torch", (3072, 768), 0.06, device="cpu"), observation("torch", (768, 3072), 0.24, device="cpu")])
    flops = cost.svd_flops((3072, 768), False)
    tall = w.estimate("torch", "svdvals", "cpu", "float32", 1, flops, (3072, 768))
    wide = w.estimate("torch", "svdvals", "cpu", "float32", 1, flops, (768, 3072))
    assert tall is not None and wide is not None and (tall.seconds, wide.seconds) == (0.06, 0.24)


def test_a_key_keeps_the_median_of_its_recent_measurements_and_a_roof_only_rises(tmp_path: Path) -> None:
    roof = Roof(device="cpu", gemm_gflops={"float32": 50.0}, bandwidth_gbs=10.0, measured="x", by="harness calibrate")
    wisdom.learn(tmp_path, MACHINE, [observation("numpy", (64, 64), 1.0)], [roof])
    stored = wisdom.learn(tmp_path, MACHINE, [observation("numpy", (64, 64), 9.0, when="2026-11-24T00:00:00+00:00")],
                          [roof.model_copy(update={"by": RUN_PROBE, "bandwidth_gbs": 1.0})])
    assert stored is not None and [(o.seconds, o.samples, o.when[:10]) for o in stored.observations] == [(5.0, 14, "2026-11-24")]
    for seconds in (1.1, 0.9, 1.0, 1.2, 50.0):  # one outlier among the last five moves nothing much
        stored = wisdom.learn(tmp_path, MACHINE, [observation("numpy", (64, 64), seconds)])
    assert stored is not None and stored.observations[0].recent == [1.1, 0.9, 1.0, 1.2, 50.0]
    assert stored.observations[0].seconds == 1.1
    assert wisdom.load(tmp_path, MACHINE).roofs["cpu"].bandwidth_gbs == 10.0
    # a busy probe lowers nothing; a better one raises what it measured better, and a probe
    # with another thread count (the machine's cores changed) replaces the roof
    busy = roof.model_copy(update={"gemm_gflops": {"float32": 12.0, "float64": 20.0}, "bandwidth_gbs": 2.0,
                                   "measured": "y"})
    after = wisdom.learn(tmp_path, MACHINE, roofs=[busy])
    assert after is not None and after.roofs["cpu"].gemm_gflops == {"float32": 50.0, "float64": 20.0}
    assert (after.roofs["cpu"].bandwidth_gbs, after.roofs["cpu"].measured) == (10.0, "y")
    fewer = wisdom.learn(tmp_path, MACHINE, roofs=[busy.model_copy(update={"threads": 1})])
    assert fewer is not None and fewer.roofs["cpu"].gemm_gflops["float32"] == 12.0


# --- stale wisdom ---------------------------------------------------------------------------------

def test_wisdom_of_another_machine_or_version_is_never_used(tmp_path: Path) -> None:
    wisdom.learn(tmp_path, MACHINE, [observation("numpy", (64, 64), 1.0)])
    assert len(wisdom.load(tmp_path, MACHINE).observations) == 1
    for change in ({"numpy": "0.0.1"}, {"cores": MACHINE.cores + 1}, {"cpu": "another CPU"},
                   {"cuda_device": "NVIDIA H100"}, {"harness": "0.0.0"}, {"torch": "1.0"}):
        assert wisdom.load(tmp_path, MACHINE.model_copy(update=change)).observations == [], change
    assert wisdom.load(tmp_path, MACHINE.model_copy(update={"thread_env": {"OMP_NUM_THREADS": "1"}})).observations == []
    loaded = ThreadPool(api="openmp", library="libgomp.so.1", version=None, threads=2)  # torch imported since
    assert len(wisdom.load(tmp_path, MACHINE.model_copy(update={"blas": [*MACHINE.blas, loaded]})).observations) == 1
    path = wisdom.path_for(tmp_path, MACHINE)
    raw = json.loads(path.read_text())
    path.write_text(json.dumps(raw | {"version": wisdom.VERSION + 1}))
    assert wisdom.load(tmp_path, MACHINE).observations == []
    path.write_text(json.dumps(raw | {"machine": raw["machine"] | {"numpy": "9"}}))  # a file under the wrong name
    assert wisdom.load(tmp_path, MACHINE).observations == []
    path.write_text("{not json")
    assert wisdom.load(tmp_path, MACHINE).observations == []


def test_wisdom_can_be_turned_off_and_moved(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(wisdom.ENV, "off")
    assert wisdom.folder() is None
    monkeypatch.setenv(wisdom.ENV, str(tmp_path / "elsewhere"))
    assert wisdom.folder() == tmp_path / "elsewhere"
    monkeypatch.delenv(wisdom.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the machine's, whatever folder a run is in
    assert wisdom.folder() == tmp_path / "cache" / "spectral-harness" / "wisdom"


# --- the planner ----------------------------------------------------------------------------------

def dense_plan(w: wisdom.Wisdom | None, compare: tuple[str, ...] | list[str] = ("numpy", "torch")):
    # a tolerance below gram_eigh's bound leaves it out: the measured strategies are the question here
    spec = load_spec(CONFIGS / "smoke.toml", ["data.form='dense'", "benchmark.threads=1",
                                              f"analysis.0.compare={list(compare)!r}", "analysis.0.tolerance=1e-9"])
    workload = Workload.from_source(build_source(spec.data, spec.experiment.seed, Path(".")))
    return compile_plan(spec, workload, MACHINE, w)


def faked(fast: str, device: str) -> wisdom.Wisdom:
    """Measurements of numpy and torch on smoke's two shapes, `fast` 100x faster than the other."""
    w = wisdom.Wisdom(machine=wisdom.identity(MACHINE))
    for shape in ((48, 32), (32, 48)):
        w.add([observation("numpy", shape, 1e-5 if fast == "numpy" else 1e-3),
               observation("torch", shape, 1e-5 if fast == "torch" else 1e-3, device=device)])
    return w


def test_auto_follows_the_measurements_and_says_so() -> None:
    pytest.importorskip("torch")
    modelled = dense_plan(None).steps[0]
    assert all(set(c.basis.values()) == {"modelled: no measurement"} for c in modelled.candidates if c.available)
    device = next(c.device for c in modelled.candidates if c.strategy == "torch")
    width = min(MACHINE.cores, 6)  # the pool spreads a group's 6 matrices over its workers
    for fast in ("numpy", "torch"):
        w = faked(fast, device)
        w.add(observation("process_pool", shape, 1e-3, width=width) for shape in ((48, 32), (32, 48)))
        w.add(observation("process_pool", shape, 1e-9, width=width + 1) for shape in ((48, 32), (32, 48)))  # unused
        plan = dense_plan(w)
        step = plan.steps[0]
        assert step.strategy == fast, step.reason
        assert ", measured)" in step.reason
        for c in step.candidates:
            if c.available:
                assert set(c.basis.values()) == {"measured on this machine, 2026-11-23, 7 samples"}, c.strategy
        text = "\n".join(plan_lines(dense_plan(faked(fast, device))))
        start = text.index("  estimates: ")
        estimates = text[start:text.index("\n", text.index("modelled", start))]
        assert re.search(r"estimates: numpy\S*( \S+)*: measured on this machine on 2 groups \(2026-11-23, 7 samples\)",
                         estimates)
        assert re.search(r"process_pool: modelled x\S+: never measured on this machine", estimates)


# --- learning: runs and calibrations --------------------------------------------------------------

@pytest.fixture
def steady(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every measurement judged stable, so that what is learned does not depend on how busy the
    machine is (unstable measurements are never learned: tested apart)."""
    from harness.run import rounds

    monkeypatch.setattr(measure_module, "judge", lambda samples, conditions, earlier=(), per=1: [])
    monkeypatch.setattr(rounds, "condition_reasons", lambda conditions: [])


def test_a_run_teaches_the_wisdom_and_the_next_plan_uses_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, steady: None) -> None:
    monkeypatch.setenv(wisdom.ENV, str(tmp_path / "wisdom"))
    args = ["run", str(CONFIGS / "smoke.toml"), "--set", "benchmark.threads=1", "--no-cache"]
    assert cli.main([*args, "-o", str(tmp_path / "run")]) == 0
    record = load_record(tmp_path / "run")
    assert record.roofs["cpu"].by == RUN_PROBE and record.roofs["cpu"].gemm_gflops["float32"] > 0
    learned = wisdom.load(tmp_path / "wisdom", MACHINE).observations
    timed = {(a.op, t.strategy) for a in record.analyses for t in a.timings}
    assert {(o.op, o.strategy) for o in learned} == timed
    assert all(o.source == "smoke" and o.threads == 1 for o in learned)
    timing = next(t for a in record.analyses for t in a.timings if t.strategy == "numpy")
    group = timing.groups[0]
    assert group.flops == cost.svd_flops((48, 32), False) and group.gflops_per_s is not None
    assert math.isclose(group.gflops_per_s, group.flops / group.seconds_per_matrix / 1e9)
    plan = dense_plan(wisdom.load(tmp_path / "wisdom", MACHINE))
    numpy = next(c for c in plan.steps[0].candidates if c.strategy == "numpy")
    assert all(b.startswith("measured on this machine") for b in numpy.basis.values())
    auto = [s for s in record.plan.steps if s.pick is not None]  # each `auto` pick kept for the next plan
    assert len(auto) == 3 and all(wisdom.load(tmp_path / "wisdom", MACHINE).picked(s.pick.key) == s.pick.label
                                  for s in auto if s.pick is not None)


def test_a_problems_pick_replaces_its_last_and_only_the_latest_are_kept(tmp_path: Path) -> None:
    wisdom.learn(tmp_path, MACHINE, picks=[Pick(key="a", label="torch"), Pick(key="b", label="numpy")])
    stored = wisdom.learn(tmp_path, MACHINE, picks=[Pick(key="a", label="gram_eigh")])
    assert stored is not None and [(p.key, p.label) for p in stored.picks] == [("b", "numpy"), ("a", "gram_eigh")]
    assert wisdom.load(tmp_path, MACHINE).picked("a") == "gram_eigh"
    stored = wisdom.learn(tmp_path, MACHINE, picks=[Pick(key=str(i), label="numpy") for i in range(KEPT)])
    assert stored is not None and len(stored.picks) == KEPT and stored.picked("a") is None


def test_unsteady_measurements_are_learned_flagged_and_the_plan_uses_them(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 48: nine busy runs kept nothing, and the plan went on choosing a modelled strategy
    that measured 10x slower. Busy or unsteady measurements are kept, flagged, and used."""
    monkeypatch.setenv(wisdom.ENV, str(tmp_path / "wisdom"))
    monkeypatch.setattr(measure_module, "judge", lambda samples, conditions, earlier=(), per=1: ["a noisy neighbour"])
    assert cli.main(["run", str(CONFIGS / "smoke.toml"), "--no-cache", "-o", str(tmp_path / "run"),
                     "--set", "benchmark.threads=1"]) == 0
    learned = wisdom.load(tmp_path / "wisdom", MACHINE)
    numpy = [o for o in learned.observations if (o.strategy, o.op) == ("numpy", "svdvals")]
    assert len(numpy) == 2 and all(o.busy is not None for o in numpy)  # smoke's two shape groups
    spec = load_spec(CONFIGS / "smoke.toml", ["benchmark.threads=1"])  # as run: its errors met the tolerance
    plan = compile_plan(spec, Workload.from_source(build_source(spec.data, spec.experiment.seed, Path("."))),
                        MACHINE, learned)
    basis = next(c for c in plan.steps[0].candidates if c.strategy == "numpy").basis
    assert all(b.startswith(f"{wisdom.BUSY} (") and b.endswith(" samples)") for b in basis.values()), basis


def test_a_plan_from_busy_measurements_alone_picks_the_measured_faster_strategy() -> None:
    """The walk-through's wisdom: process_pool measured at 1 ms and numpy at 80 us, all while the
    machine was busy; the model alone favours process_pool on smoke's small matrices."""
    width = min(MACHINE.cores, 6)
    for fast, slow in (("numpy", "process_pool"), ("process_pool", "numpy")):
        w = wisdom.Wisdom(machine=wisdom.identity(MACHINE))
        for shape in ((48, 32), (32, 48)):
            w.add([observation(fast, shape, 8e-5, busy=0.73, width=width if fast == "process_pool" else 1),
                   observation(slow, shape, 1e-3, busy=0.73, width=width if slow == "process_pool" else 1),
                   observation("torch", shape, 1e-3, busy=0.73, device="cpu")])
        step = dense_plan(w, ["numpy", "process_pool"]).steps[0]
        assert step.strategy == fast, step.reason
        assert ", measured while busy)" in step.reason
        chosen = next(c for c in step.candidates if c.strategy == fast)
        assert set(chosen.basis.values()) == {f"{wisdom.BUSY} (2026-11-23, 7 samples)"} and chosen.busy == 0.73


def test_a_quiet_measurement_beats_and_replaces_busy_ones(tmp_path: Path) -> None:
    w = wisdom.Wisdom(machine=wisdom.identity(MACHINE))
    busy, quiet = observation("numpy", (64, 64), 1e-5, busy=0.5), observation("numpy", (100, 100), 1e-3)
    w.add([busy, quiet])  # two sizes: each estimate the quiet one's, wherever it covers the size
    found = w.estimate("numpy", "svdvals", "numpy", "float32", 1, busy.flops, busy.shape)
    assert found is not None and found.basis.startswith("measured on this machine")
    assert math.isclose(found.seconds, 1e-3 * busy.flops / quiet.flops)
    wisdom.learn(tmp_path, MACHINE, [busy, observation("numpy", (64, 64), 3e-5, busy=0.9)])
    kept = wisdom.learn(tmp_path, MACHINE, [observation("numpy", (64, 64), 2e-3)])  # the same key, quiet
    assert kept is not None and [(o.seconds, o.busy, o.recent) for o in kept.observations] == [(2e-3, None, [2e-3])]
    again = wisdom.learn(tmp_path, MACHINE, [busy])  # a busy one never displaces a quiet one
    assert again is not None and [(o.seconds, o.busy) for o in again.observations] == [(2e-3, None)]


def test_a_run_says_what_it_taught_when_the_machine_was_busy() -> None:
    quiet = observation("numpy", (64, 64), 1e-3)
    assert wisdom.taught([quiet]) is None  # quiet measurements are simply used
    line = wisdom.taught([quiet, observation("numpy", (32, 48), 1e-3, busy=0.7),
                          observation("process_pool", (32, 48), 1e-3, busy=0.7), observation("torch", (9, 9), 1.0,
                                                                                             op="svd", busy=0.7)])
    assert line == ("wisdom: 3 measurements taken while busy (svdvals: numpy, process_pool; svd: torch) inform "
                    "the next plan until quiet ones replace them")


def test_a_wisdom_file_of_before_busy_measurements_still_loads(tmp_path: Path) -> None:
    """Files written while busy measurements were only counted ("unkept") load, the count ignored."""
    wisdom.learn(tmp_path, MACHINE, [observation("numpy", (64, 64), 1.0)])
    path = wisdom.path_for(tmp_path, MACHINE)
    raw = json.loads(path.read_text())
    path.write_text(json.dumps(raw | {"unkept": [{"strategy": "numpy", "op": "svdvals", "device": "numpy",
                                                  "dtype": "float32", "threads": 1, "count": 20}]}))
    assert [o.busy for o in wisdom.load(tmp_path, MACHINE).observations] == [None]
    path.write_text(json.dumps(raw | {"observations": [raw["observations"][0] | {"busy": 7.0}]}))
    assert wisdom.load(tmp_path, MACHINE, say=lambda line: None).observations == []  # a share above 1: not data


def test_calibration_on_a_tiny_setting(tmp_path: Path, steady: None) -> None:
    tiny = [_spec("values", {"form": "dense", "modules": {"w": [24, 16]}}, values_ops(quick=True), 2.0),
            _spec("lora", {"form": "lora", "rank": 4, "modules": {"w": [24, 16]}}, lora_ops(), 2.0)]
    with Display(Console(file=open(tmp_path / "log", "w"))) as display:  # noqa: SIM115
        stored, notes, kept = calibrate(tmp_path, MACHINE, display, quick=True, chosen=tiny)
    assert notes == [] and kept == len(stored.observations) > 0
    assert "timing every strategy: 2/2" in (tmp_path / "log").read_text()  # not a minute in silence
    assert stored.roofs["cpu"].by == "harness calibrate --quick" and stored.roofs["cpu"].gemm_gflops["float64"] > 0
    assert stored.reads is not None and stored.reads.cached_gbs > 0 and stored.reads.file_bytes == 128 << 20
    assert not list(tmp_path.glob("read-probe-*"))  # the read probe's file is gone
    timed = {(a.op, s) for spec in tiny for a in spec.analysis for s in a.compare}
    from harness.linalg.device import torch_missing_reason
    if torch_missing_reason() is not None:
        timed = {(op, s) for op, s in timed if not s.startswith("torch")}
    assert {(o.op, o.strategy) for o in stored.observations} == timed
    assert wisdom.load(tmp_path, MACHINE) == stored
    assert all(o.source == "calibrate" for o in stored.observations)


def test_calibrate_show_and_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(wisdom.ENV, str(tmp_path))
    wisdom.learn(tmp_path, MACHINE, [observation("numpy", (64, 64), 1e-3)],
                 [Roof(device="cpu", gemm_gflops={"float32": 50.0}, bandwidth_gbs=10.0, measured="2026-11-23T00:00",
                       by="harness calibrate")])
    assert cli.main(["calibrate", "--show"]) == 0
    shown = capsys.readouterr().out
    assert "GEMM peak GFLOP/s float32 50" in shown and "1 measurements" in shown and "64x64" in shown
    monkeypatch.setenv(wisdom.ENV, "off")
    assert cli.main(["calibrate"]) == 2
    assert "wisdom is off" in capsys.readouterr().err


def test_a_calibration_says_what_it_kept_and_what_it_dropped() -> None:
    """On a busy machine `calibrate --quick` measured for 53 s, kept nothing and said nothing."""
    from harness.run.calibrate import kept_note

    assert kept_note(5, []) is None
    note = kept_note(0, ["load 3.2 on 2 cores", "load 4.1 on 2 cores", "IQR 40% of median"])
    assert note is not None and "kept none of 3 measurements" in note
    assert "2x load 4.1 on 2 cores; IQR 40% of median" in note and "cost model" in note
    # what the plan then reads first: earlier runs' busy measurements (walk 23: `harness plan` said
    # `measured while busy` beside "`auto` plans from the cost model")
    assert "`auto` plans from what earlier runs measured (`measured while busy`), else from the cost model" in note
