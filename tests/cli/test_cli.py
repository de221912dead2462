"""The CLI end to end, as a user runs it: files written, exit codes, one-line errors."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from tests.conftest import CONFIGS, ctrl_c_delivered

SMOKE = str(CONFIGS / "smoke.toml")


def harness(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_run_smoke_writes_record_and_spectra(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = harness("run", SMOKE, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "speedup" in proc.stdout and "results:" in proc.stdout
    record = json.loads((out / "record.json").read_text())
    assert record["schema_version"] == 5 and record["complete"] is True
    assert record["experiment"] == "smoke" and len(record["spec_hash"]) == 64
    assert record["machine"]["cores"] >= 1
    names = [a["name"] for a in record["analyses"]]
    assert names[:3] == ["svdvals", "svd", "svd_topk"]
    for analysis in record["analyses"]:
        roles = {t["strategy"]: t["role"] for t in analysis["timings"]}
        assert "baseline" in roles.values()
        for t in analysis["timings"]:
            assert t["speedup"] > 0 and t["groups"][0]["measurement"]["samples_s"]
        assert all(v["passed"] for v in analysis["verification"])
    spectra = np.load(out / "spectra.npz")
    assert len([k for k in spectra.files if k.startswith("svdvals:")]) == 12
    s = spectra["svdvals:adapter0/layer0/up"]
    assert s.shape == (32,) and s[0] > 0 and np.all(s[4:] < 1e-5 * s[0])  # rank 4
    assert spectra["svd_topk:adapter2/layer1/down"].shape == (2,)
    assert not list(out.glob(".*.tmp"))


def test_validate_plan_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", SMOKE]) == 0
    assert main(["plan", SMOKE, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert plan["n_matrices"] == 12 and plan["steps"][0]["reason"]
    assert main(["schema"]) == 0
    assert "properties" in json.loads(capsys.readouterr().out)


def test_spec_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    proc = harness("validate", SMOKE, "--set", "data.adapters=0", "--set", "analysis.0.strategy='nmupy'")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        "--set 'data.adapters=0': data.adapters: should be >= 1, got 0",
        "--set \"analysis.0.strategy='nmupy'\": analysis[0].strategy: unknown strategy 'nmupy'; did you mean 'numpy'? "
        "svdvals strategies: cupy, factored, gram_eigh, numpy, process_pool, torch",
    ]


def test_failed_verification_exits_3(tmp_path: Path) -> None:
    proc = harness("run", SMOKE, "-o", str(tmp_path / "r"), "--set", "analysis.0.tolerance=1e-30")
    assert proc.returncode == 3, proc.stderr
    assert "verification failed" in proc.stderr
    record = json.loads((tmp_path / "r" / "record.json").read_text())
    assert record["complete"] and not all(v["passed"] for v in record["analyses"][0]["verification"])


def test_existing_output_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "x").write_text("keep me")
    proc = harness("run", SMOKE, "-o", str(tmp_path / "r"))
    assert proc.returncode == 2 and "not empty" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                      (signal.SIGTERM, 143, "terminated")])
def test_ctrl_c_or_sigterm_leaves_an_incomplete_record_and_no_partial_files(
        tmp_path: Path, signum: int, code: int, word: str) -> None:
    out = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", SMOKE, "-o", str(out),
         "--set", "data.modules={w=[1500,1200]}", "--set", "data.adapters=40",
         "--set", "analysis.0.strategy='numpy'"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=ctrl_c_delivered,
    )
    deadline = time.monotonic() + 120
    while not (out / "record.json").exists() and time.monotonic() < deadline:  # the runner has started
        time.sleep(0.1)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr
    said = " ".join(stderr.split())  # the line as wrapped to any width
    assert "Traceback" not in stderr and re.search(
        rf"{word}: {re.escape(str(out))} holds a record marked incomplete after \d of 4 analyses; the same command "
        "again resumes it", said), said
    record = json.loads((out / "record.json").read_text())
    assert record["complete"] is False and record["finished"]
    assert sorted(p.name for p in out.iterdir()) == ["record.json", "spectra.npz", "timings.csv", "verification.csv"]
    assert os.path.getsize(out / "spectra.npz") > 0


def test_version_and_system() -> None:
    proc = harness("--version")
    assert proc.returncode == 0 and proc.stdout.strip().startswith("harness ")
    proc = harness("system", "--seconds", "0.2")
    assert proc.returncode == 0, proc.stderr
    assert "load average" in proc.stdout and "CPU steal" in proc.stdout
    assert "timings taken now would be unreliable" in proc.stdout or "nothing now would make" in proc.stdout
    # never silent while it imports torch and watches (walk 21: 4-8 s without a word); stdout stays the answer
    # the whole phase's time beside what it did (walk 24: `for 1.00 s) in 3.91 s` read as a contradiction)
    assert "watching this machine (torch imported, then 200 ms of its CPUs, load and processes) in " in " ".join(
        proc.stderr.split())


def test_plan_shows_the_benchmark_estimate_and_the_budget_flag(tmp_path: Path) -> None:
    proc = harness("plan", SMOKE, "--budget", "7s")
    assert proc.returncode == 0, proc.stderr
    words = " ".join(proc.stdout.split())  # rich wraps the caption where the width ends
    assert "Benchmark: budget 7.00 s, floor " in words and "whole run est." in words
    proc = harness("plan", SMOKE, "--budget", "later")
    assert proc.returncode == 2 and "--budget later: 'later' is not a duration" in proc.stderr  # as typed (walk 21)


def test_run_without_a_terminal_prints_one_line_per_phase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each phase a line, named for what it does: the machine is measured on its first run only (walk
    17: every later run, and every point of a sweep, logged `measuring this machine (first run only)`)."""
    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))  # a machine with no roofs yet
    first, later = (harness("run", SMOKE, "-o", str(tmp_path / name), "--no-cache") for name in ("first", "later"))
    assert first.returncode == later.returncode == 0, first.stderr + later.stderr
    lines = first.stderr.splitlines()
    for phase in ("loading the spec", "measuring this machine (first run only)", "svdvals by ", "svdvals: round 1:",
                  "geometry: Grams by", "geometry: round 1:", "writing results"):
        assert any(line.startswith(phase) for line in lines), (phase, lines)
    assert [line for line in later.stderr.splitlines() if "measuring this machine" in line] == []
    assert any(line.startswith("geometry: round 1:") for line in later.stderr.splitlines())


def test_the_help_says_what_the_harness_is_and_shows_examples(capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`harness --help` was cut mid-list, a stray backtick at its end, and had no example."""
    from harness.cli.main import COMMANDS

    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps at the terminal's width: a fixed one here
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert "`harness validate |" not in shown and "Benchmark linear algebra over ML model weights" in shown
    examples = shown[shown.index("examples:"):].splitlines()[1:]
    commands = [line.split()[1] for line in examples if line.startswith("  harness ")]
    assert {"validate", "run", "report", "compare"} <= set(commands) and COMMANDS.keys() >= set(commands)
    assert max(map(len, shown.splitlines()[3:])) <= 100  # what we wrote ourselves fits 100 columns
