"""The asv suites import, parameterise from the bench specs, and run: a broken suite fails pytest,
not only `asv run`. One case per suite, and the machine name for `harness asv-machine`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks import SPECS, case_params
from benchmarks.memory import SvdMemory
from harness.run.asv_cases import case_keys, machine_name
from harness.cli.main import main
from harness.machine.info import probe
from harness.specs.reading import SpecError

ROOT = Path(__file__).resolve().parents[1]


def test_strategy_that_cannot_run_is_skipped_and_torn_down() -> None:
    bench = SvdMemory()
    with pytest.raises(NotImplementedError, match="needs LoRA or LoKr factors"):
        bench.setup("factored", "256x256")
    bench.teardown("factored", "256x256")


def test_memory_suite_streams_a_group() -> None:
    bench = SvdMemory()
    bench.setup("numpy", "128x512r8")
    try:
        assert bench.peakmem_full_group("numpy", "128x512r8") is None
    finally:
        bench.teardown("numpy", "128x512r8")


def test_params_cover_every_registered_strategy_of_the_op() -> None:
    strategies, _cases = case_params("svd_topk")
    assert strategies == ["cupy", "factored", "gram_eigh", "scipy_svds", "torch", "torch_lowrank"]


def test_named_analyses_label_cases_and_collisions_are_spec_errors(tmp_path: Path) -> None:
    named = tmp_path / "named.toml"
    named.write_text(
        SPECS[1].read_text().replace('op = "svdvals"', 'name = "vals"\nop = "svdvals"')
    )
    assert list(case_keys([named], "svdvals")) == ["vals:256x256"]
    with pytest.raises(SpecError, match="give this analysis a unique `name`"):
        case_keys([SPECS[1], SPECS[1]], "svdvals")


def test_machine_name_keeps_gpu_and_cpu_apart(capsys: pytest.CaptureFixture[str]) -> None:
    info = probe()
    gpu = info.model_copy(update={"hostname": "Node_7", "cuda_device": "NVIDIA H100 80GB HBM3"})
    cpu = info.model_copy(update={"hostname": "Node_7", "cuda_device": None})
    assert machine_name(gpu) == "node-7-nvidia-h100-80gb-hbm3"
    assert machine_name(cpu) == "node-7-cpu"
    assert main(["asv-machine"]) == 0
    assert capsys.readouterr().out.strip() == machine_name(info)


def test_asv_conf_points_at_the_suites_and_results() -> None:
    text = (ROOT / "asv.conf.json").read_text()
    conf = json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))
    assert (conf["benchmark_dir"], conf["results_dir"], conf["html_dir"]) == (
        "benchmarks", "results/asv", "results/html"
    )
    assert any("torch==2.13.0" in c for c in conf["install_command"])


def test_gram_memmap_script_runs_and_reports_every_figure() -> None:
    """The standalone Gram benchmark on a tiny file: every line it reports, and a sane check."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gram_memmap.py"), "--n", "4", "--d", "200000",
         "--repeats", "1", "--cold", "--skip-factored", "--budget-mib", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    for text in ("sequential read, 1 MiB buffer", "dual_gram / fastest read", "kernel ceiling",
                 "cold (dropped", "principal axes (3 x 200,000 float32", "gram_pairwise"):
        assert text in proc.stdout
    error = float(proc.stdout.split("max |A A^T - I| = ")[1].split()[0])
    assert error < 1e-5


@pytest.mark.parametrize("route", ["compiled", "torch", "numpy"])
def test_gram_routes_suite_times_and_tracks_error(route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import benchmarks.gram as suite

    monkeypatch.setattr(suite, "VALUES", 1 << 21)
    bench = suite.GramRoutes()
    try:
        bench.setup(route, 18)
    except NotImplementedError:
        pytest.skip(f"{route} cannot run here")
    bench.time_gram(route, 18)
    assert 0.0 < bench.track_error(route, 18) < 1e-5


def test_pca_full_script_reports_every_figure_and_checks_the_answer(tmp_path: Path) -> None:
    """The full-size PCA benchmark at a tiny size, both dtypes, two rounds and the CLI runs:
    every figure, the float64 check, and nothing left on disk."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.pca_full", "--params", "2e6", "--adapters", "4", "--folder",
         str(tmp_path), "--fadvise", "--budget-mib", "1", "--repeats", "2", "--cli"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    for text in ("float32: 4 fine-tunes + base", "bf16: 4 fine-tunes + base", "cold (posix_fadvise", "1 MiB buffer", "64 MiB buffer",
                 "plain sequential read of the same 5 files", "GB/s of input", "of the faster plain read",
                 "peak RssAnon", "load average", "published pipeline: 15 min, 2.7 GB"):
        assert text in proc.stdout
    assert proc.stdout.count("[2] global PCA") == 2 and proc.stdout.count("median of 2") == 2
    from benchmarks.pca_full import reported_kib

    assert proc.stdout.count("handed back to its host during the PCA") == (4 if reported_kib() is not None else 0)
    first, again = proc.stdout.split("`harness run` (run)")[1].split("`harness run` (again)")[:2]
    words = " ".join(first.split())  # the phrases, wherever a line of the run's output happens to end
    assert "fingerprinting the input files (hashed 5 files" in words
    assert re.search(r"float64 references: [1-9]\d* computed", words)  # one per position the rounds visited
    assert "1 of 1 chunks from the cache" in again.split("bf16:")[0]
    error = float(proc.stdout.split("over 3 deltas = ")[1].split()[0])
    assert error < 1e-6
    assert proc.stdout.count("check:") == 1 and not list(tmp_path.iterdir())


def test_pca_full_refuses_what_the_disk_cannot_hold(tmp_path: Path) -> None:
    from benchmarks.pca_full import main as pca_full

    assert pca_full(["--params", "1e14", "--folder", str(tmp_path)]) == 2
    assert not list(tmp_path.iterdir())


def test_warm_pca_suite_times_both_routes_and_tracks_their_share(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    """The warm checkpoint PCA at a tiny size: the suite's cases, and the script's figures."""
    import benchmarks.pca_warm as suite

    monkeypatch.setattr(suite, "SHAPE", (64, 48))
    monkeypatch.setattr(suite, "TENSORS", 2)
    monkeypatch.setattr(suite, "ROUNDS", 2)
    import harness.strategies.gram as gram
    from harness.linalg.compiled import load_kernel

    real, pieces = gram.piece_grams, []
    monkeypatch.setattr(gram, "piece_grams", lambda stored, threads: pieces.append(1) or real(stored, threads))
    bench = suite.WarmCheckpointPCA()
    suite.write_set(tmp_path)
    folder = str(tmp_path)
    for route in ("pieces", "ring"):
        pieces.clear()
        bench.setup(folder, route)
        bench.time_grams(folder, route)
        assert bench.track_share_of_plain_read(folder, route) > 0
        compiled = load_kernel("gram_kernel") is not None
        assert len(pieces) == (2 + suite.ROUNDS if route == "pieces" and compiled else 0)  # setup, time, rounds
    assert suite.main(["--repeats", "2", "--folder", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for route in ("pieces", "ring"):
        assert re.search(rf"^{route}: 0\.00 GB warm, 2 rounds; plain read .* GB/s .* share of the plain read min "
                         r"\d+%, median \d+%; load average", out, re.M)


def test_the_report_suite_renders_the_main_jobs_run() -> None:
    import benchmarks.report as suite

    bench = suite.Report()
    folder = bench.setup_cache()
    bench.time_harness_report(folder)
    page = (Path(folder).parent / "report.html").read_text()
    assert "task_geometry" in page and page.count("<svg") >= 5


def test_a_swept_value_at_a_crossing_keeps_the_swept_values_form() -> None:
    from benchmarks.sweep_crossover import at_size

    assert at_size([8, 16, 32], 31.4) == 31 and at_size([0.5, 1.0], 0.731) == 0.731
    assert at_size([[1024, 256], [2048, 256]], 3000.2) == [3000, 256] and at_size([[64, 64], [96, 96]], 80) == [80, 80]


def test_the_crossover_check_runs_once_at_the_crossing_and_judges_its_intervals(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A known sweep (numpy and factored cross at rank ~31) checked by one tiny run at rank 31 (on
    a machine taken as quiet: a busy one may leave a strategy untimed): its verdict is the overlap
    of the two strategies' intervals in that run's own record."""
    from benchmarks.sweep_crossover import QUICK, main
    from harness.record.run_record import load_record
    from harness.record.sweep_record import point_timings, write_sweep
    from harness.run import rounds as rounding
    from tests.report.test_sweep_views import known_sweep

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    write_sweep(known_sweep(), sweep)
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: [])
    code = main(["--quick", "--sweep", str(sweep), "--output", str(tmp_path / "out"), "--budget", "1s"])
    [line] = [line for line in capsys.readouterr().out.splitlines() if " overtakes " in line]
    record = load_record(tmp_path / "out" / "check-1")
    assert record.spec["data"]["rank"] == 31 and record.spec["sweep"] == {} and record.passed
    assert record.spec["data"]["modules"]["w"] == [40, 32] and "data.modules.w=[40, 32]" in QUICK
    a, b = (next(t for t in point_timings(record) if t.strategy == s) for s in ("numpy", "factored"))
    holds = a.low <= b.high and b.low <= a.high
    assert code == (0 if holds else 1)
    assert line.startswith("spectrum: numpy overtakes factored above rank 31.4 (") and ". At rank=31: numpy " in line
    assert line.endswith("the crossover holds") if holds else "apart beyond their intervals" in line


def test_a_sweep_without_a_crossover_has_nothing_to_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.sweep_crossover import main
    from harness.record.sweep_record import write_sweep
    from tests.report.test_sweep_views import known_sweep

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    write_sweep(known_sweep().model_copy(update={"crossovers": []}), sweep)
    assert main(["--sweep", str(sweep), "--output", str(tmp_path / "out")]) == 2
    assert "predicts no crossover" in capsys.readouterr().out
    assert main(["--sweep", str(tmp_path / "none"), "--output", str(tmp_path / "out2")]) == 2
    assert "cannot read a sweep record" in capsys.readouterr().err
