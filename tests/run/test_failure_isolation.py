"""A strategy that raises on some matrices costs its own verdict, never the run: the other
strategies and analyses go on and the run exits 3. The chosen strategy failing ends the run with
one line, exit 2, and a record marked incomplete."""

from pathlib import Path

import pytest

from harness.cli.exit_codes import EXIT_USER_ERROR, EXIT_VERIFICATION_FAILED
from harness.cli.main import main
from harness.record.run_record import RECORD, load_record
from harness.strategies.registry import STRATEGIES
from tests.conftest import CONFIGS, forkserver_run
from tests.run.worker_patches import QUIET, RAISE, raising

SMOKE = str(CONFIGS / "smoke.toml")


def test_a_compared_strategy_that_raises_is_failed_and_the_run_goes_on(tmp_path: Path) -> None:
    failing = "torch_lowrank"  # compared in svd_topk, never the chosen one there
    if STRATEGIES[failing].uses_torch:
        pytest.importorskip("torch")
    out = tmp_path / "run"
    # its workers too; every compared point timed however busy the machine: the failing one must be run
    said = forkserver_run(["run", SMOKE, "-o", str(out), "--no-cache"], {RAISE: failing, QUIET: "1"})
    assert said.returncode == EXIT_VERIFICATION_FAILED, said.stderr[-2000:]
    assert "Traceback" not in said.stdout + said.stderr
    assert "raised: RuntimeError: ARPACK did not converge" in " ".join((said.stdout + said.stderr).split())
    record = load_record(out)
    assert record.complete
    assert [a.name for a in record.analyses] == [s.analysis for s in record.plan.steps]
    topk = next(a for a in record.analyses if a.op == "svd_topk")
    assert topk.strategy != failing
    checks = {v.strategy: v for v in topk.verification}
    assert not checks[failing].passed
    assert checks[failing].reason is not None and "ARPACK did not converge" in checks[failing].reason
    assert failing not in {t.strategy for t in topk.timings}
    step = next(s for s in record.plan.steps if s.analysis == topk.name)
    others = {t.strategy for t in step.timed} - {failing}
    assert others and {t.strategy for t in topk.timings} == others
    assert all(checks[s].passed for s in others)
    for analysis in record.analyses:  # every other analysis timed and passed as usual
        if analysis is not topk:
            assert analysis.timings and all(v.passed for v in analysis.verification)


def test_the_chosen_strategy_raising_ends_the_run_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(type(STRATEGIES["scipy_svds"]), "compute", raising)
    out = tmp_path / "run"
    spec = ["--set", "analysis=[{op='svdvals', strategy='numpy'}, {op='svd_topk', k=2, strategy='scipy_svds'}]",
            "--set", "execution.executor='local'"]
    assert main(["run", SMOKE, "-o", str(out), "--no-cache", *spec]) == EXIT_USER_ERROR
    said = capsys.readouterr()
    assert "Traceback" not in said.out + said.err
    lines = [line for line in said.err.splitlines() if "the chosen strategy" in line]
    assert len(lines) == 1 and "svd_topk: the chosen strategy scipy_svds failed: RuntimeError" in lines[0]
    assert (out / RECORD).exists()
    record = load_record(out)
    assert not record.complete
    assert [a.name for a in record.analyses] == ["svdvals"]
