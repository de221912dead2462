"""A run over precisions end to end: every point timed and verified, its precision on the record,
the terminal table, timings.csv and the HTML report, the frontier printed and drawn; a compiled
point compiled outside every timed call (torch.compile faked: inductor's C++ build takes ~20 s
here); tf32 on a CPU-only machine refused in one line."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.machine.wisdom import Wisdom
from harness.record.run_record import load_record
from tests.conftest import CONFIGS, forkserver_run
from tests.run.worker_patches import COMPILE_LOG, QUIET

SPEC = str(CONFIGS / "precision.toml")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("precision") / "run"
    env = {"COLUMNS": "100", "HARNESS_WISDOM": str(folder.parent / "wisdom"), QUIET: "1"}
    # every point gets its round whatever else runs here (QUIET: the limit never cuts a first round)
    proc = forkserver_run(["run", SPEC, "-o", str(folder), "--report", "--budget", "1s",
                           "--set", "benchmark.target='100%'"], env)
    assert proc.returncode == 0, proc.stderr
    return folder, proc.stdout


def test_the_wisdom_keeps_each_points_error_for_the_next_plan(run: tuple[Path, str]) -> None:
    """Every verified point's error, however loaded the machine was while it was timed."""
    folder, _ = run
    (stored,) = (folder.parent / "wisdom").glob("[0-9a-f]*.json")
    w = Wisdom.model_validate_json(stored.read_bytes())
    checks = {v.strategy: v for a in load_record(folder).analyses for v in a.verification}
    assert w.error("factored", "svdvals", "numpy", "bfloat16") == pytest.approx(checks["factored@bfloat16"].values_error)
    assert w.error("dual_gram", "pca", "cpu", "bfloat16") == pytest.approx(checks["dual_gram@bfloat16"].values_error)
    assert w.error("factored", "svdvals", "numpy", "float16") is None


def test_every_point_carries_its_precision(run: tuple[Path, str]) -> None:
    folder, _ = run
    record = load_record(folder)
    spectrum = next(a for a in record.analyses if a.name == "spectrum")
    points = {(t.strategy, t.precision) for t in spectrum.timings}
    assert {("numpy", "float32"), ("factored", "float32"), ("factored", "bfloat16"),
            ("gram_eigh", "float32")} <= points
    checks = {v.strategy: v for v in spectrum.verification}
    assert checks["factored@bfloat16"].values_error > 10 * checks["factored@float32"].values_error
    assert all(v.passed for v in spectrum.verification)
    skipped = {s.strategy: s.reason for s in spectrum.skipped}
    assert "not offered" in skipped["numpy@bfloat16"] and "error bound at bfloat16" in skipped["gram_eigh@bfloat16"]
    rows = list(csv.DictReader((folder / "timings.csv").open()))
    assert {r["precision"] for r in rows} == {"float32", "bfloat16"}
    assert {(r["analysis"], r["strategy"], r["precision"]) for r in rows} >= {("geometry", "dual_gram", "bfloat16")}


def test_the_frontier_is_printed_within_100_columns_and_drawn(run: tuple[Path, str]) -> None:
    folder, stdout = run
    lines = stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("spectrum frontier"))
    assert "tolerance 5e-02" in lines[head] and lines[head + 1].startswith("  ")
    assert all(len(line) <= 100 for line in lines[head:head + 4])
    assert any(line.split()[-1:] == ["passed"] and "@bfloat16" in line for line in lines)  # a row of the table
    page = (folder / "report.html").read_text()
    assert "Accuracy/time frontier</h3>" in page and "<svg" in page and "tolerance 5e-02" in page


def test_a_compiled_point_compiles_outside_every_timed_call(tmp_path: Path) -> None:
    """The fake compile runs in the point's worker process: each call of a compiled function says
    in a file whether a timed block was under way. The compiled point is timed however busy the
    machine (QUIET): at load 3 a 1 s budget cut it, and the test failed."""
    pytest.importorskip("torch")
    calls = tmp_path / "calls"
    folder = tmp_path / "run"
    one = "analysis=[{op='svdvals',compare=['numpy','torch'],compile=true}]"
    said = forkserver_run(["run", SPEC, "-o", str(folder), "--set", one, "--budget", "1s"], {COMPILE_LOG: str(calls), QUIET: "1"})
    assert said.returncode == 0, said.stderr[-2000:]
    (analysis,) = load_record(folder).analyses
    compiled = next(t for t in analysis.timings if t.compiled)
    eager = next(t for t in analysis.timings if t.strategy == "torch" and not t.compiled)
    assert compiled.label == "torch@float32+compiled" and eager.label == "torch@float32"
    assert compiled.compile_s is not None and compiled.compile_s > 0
    assert compiled.kept is (eager.estimate_total_s / compiled.estimate_total_s > 1)
    assert "x eager" in (compiled.compile_note or "")
    # the first call of each compiled function (its compilation) came before any timed call
    first_calls = calls.read_text().split()
    assert first_calls and first_calls[0] == "untimed"


def test_tf32_on_a_cpu_only_machine_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "harness", "run", SPEC, "-o", str(tmp_path / "r"), "--set",
                           "analysis.0.precisions=['float32','tf32']"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith("--set \"analysis.0.precisions=['float32','tf32']\": analysis[0].precisions: tf32 is a "
                               "mode of NVIDIA tensor cores")  # the value is the override's, and it is named


def test_the_precision_axis_is_not_the_benchmarks_target(tmp_path: Path) -> None:
    """[benchmark] target (once `precision`) is the intervals' target; a numeric precision there is refused."""
    proc = subprocess.run([sys.executable, "-m", "harness", "plan", SPEC, "--json"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert plan["bench"]["target"] == pytest.approx(0.10)
    assert {t["precision"] for s in plan["steps"] for t in s["timed"]} == {"float32", "bfloat16"}
    bad = subprocess.run([sys.executable, "-m", "harness", "validate", SPEC, "--set", "benchmark.precision='bfloat16'"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "benchmark" in bad.stderr and "precision" in bad.stderr
