"""Values accepted that meant nothing, and the smaller slips of issue 43: each is now one line
(exit 2) or a plan that says what it does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from harness.cli.main import main
from harness.machine.info import usable_cores
from harness.report.plan_view import bench_plan_line
from harness.plan.model import Plan
from tests.cli.test_bad_inputs import one_line
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")

# (case, the command line, what its one line says)
ONE_LINE: list[tuple[str, list[str], str]] = [
    ("threads = true ran as 1 thread", ["validate", SMOKE, "--set", "benchmark.threads=true"],
     "--set 'benchmark.threads=true': benchmark.threads: true is a boolean; expected a whole number"),
    ("a boolean alpha", ["validate", SMOKE, "--set", "data.alpha=false"], "data.alpha: false is a boolean"),
    ("a boolean side", ["validate", SMOKE, "--set", "data.modules.up=[true, 3]"], "data.modules.up[0]: true is a"),
    ("precision = 1e-300 planned ±0%", ["validate", SMOKE, "--set", "benchmark.precision=1e-300"],
     "benchmark.precision: 1e-300: expected at least 1%"),
    ("a cache_dir that is a file", ["plan", SMOKE, "--set", "execution.cache_dir='spec.toml'"],
     "execution.cache_dir: "),
]


@pytest.mark.parametrize("case, argv, said", ONE_LINE, ids=[c[0] for c in ONE_LINE])
def test_a_value_that_means_nothing_is_one_line(case: str, argv: list[str], said: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "spec.toml").write_text((CONFIGS / "smoke.toml").read_text())
    monkeypatch.chdir(tmp_path)
    assert main([word.replace(SMOKE, "spec.toml") for word in argv]) == 2, case
    line = one_line(capsys.readouterr().err)
    assert said in line and line.startswith("--set ") and "spec.toml:" not in line, line  # the override, not the file


@pytest.mark.parametrize("argv, said", [
    (["compare", "a", "b", "--fail-on-regression", "inf"], "'inf': expected a finite ratio above 1"),
    (["cache", "clear", "--older-than", "30 d"], "'30 d': expected an age like 30d"),
    (["cache", "clear", "--older-than", "1_0d"], "'1_0d': expected an age like 30d"),
    (["cache", "clear", "--older-than", "infd"], "'infd': expected an age like 30d"),
])
def test_a_command_line_threshold_that_means_nothing_is_refused(argv: list[str], said: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err and said in err.strip().splitlines()[-1]


@pytest.mark.parametrize("asked", [1, 1024])
def test_threads_per_timing_are_what_blas_runs_and_say_why(asked: int, capsys: pytest.CaptureFixture[str]) -> None:
    """1024 on 2 cores was recorded as 1024 threads per timing while BLAS ran on 2; the plan said
    "1 thread per timing ( threads)", rich having read "[benchmark]" as markup."""
    assert main(["plan", SMOKE, "--json", "--set", f"benchmark.threads={asked}"]) == 0
    plan = Plan.model_validate(json.loads(capsys.readouterr().out))
    assert plan.bench is not None and plan.bench.threads == min(asked, usable_cores())
    capped = asked > usable_cores()
    assert ("capped at the machine's" in plan.bench.threads_reason) == capped
    shown = Console(width=400, record=True)
    for reason in (plan.bench.threads_reason, "[benchmark] threads"):  # and a record written before
        shown.print(bench_plan_line(plan.model_copy(update={"bench": plan.bench.model_copy(
            update={"threads_reason": reason})})))
    text = shown.export_text()
    assert f"per timing ({plan.bench.threads_reason})" in text and "per timing ([benchmark] threads)" in text
