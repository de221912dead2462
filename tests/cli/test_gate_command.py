"""`harness gate` runs the asv-based gate (benchmarks/continuous.py) like every other command
(issue 48: it was `python -m benchmarks.continuous`, unlike every other), and outside a checkout
says in one line that it needs the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.commands import gate
from harness.cli.main import main


def test_outside_a_checkout_it_says_it_needs_the_repository(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(gate, "checkout", lambda: None)
    assert main(["gate", "main", "HEAD"]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "needs the spectral-harness repository" in said[0]


def test_it_runs_the_engine_in_the_checkout_with_the_arguments_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in engine records its arguments and answers 4 (inconclusive), which the command returns."""
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "__init__.py").touch()
    (tmp_path / "benchmarks" / "continuous.py").write_text(
        "import pathlib, sys\npathlib.Path('argv.txt').write_text(' '.join(sys.argv[1:]))\nsys.exit(4)\n")
    monkeypatch.setattr(gate, "checkout", lambda: tmp_path)
    monkeypatch.chdir(tmp_path.parent)
    assert main(["gate", "v1", "HEAD", "--json", "verdicts.json", "--bench", "^speedups"]) == 4
    assert (tmp_path / "argv.txt").read_text() == f"v1 HEAD --json {tmp_path.parent / 'verdicts.json'} --bench ^speedups"
    assert main(["gate", "v1", "--allow-inconclusive"]) == 0  # as compare's: README promised it, argparse refused it
    assert (tmp_path / "argv.txt").read_text() == "v1"


def test_this_checkout_is_found() -> None:
    assert gate.checkout() == Path(gate.harness.__file__).resolve().parent.parent


def test_its_help_says_what_it_needs_how_long_it_takes_and_its_exit_codes(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`harness gate --help` had the usage line and options only; then it said exit 4 meant
    "nothing could be judged" (it means a point could not be), in lines past a pipe's COLUMNS=100."""
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps at the terminal's width: a fixed one here
    with pytest.raises(SystemExit) as done:
        main(["gate", "--help"])
    printed = capsys.readouterr().out
    shown = " ".join(printed.split())
    assert done.value.code == 0
    assert "the regression gate" in shown and "needs: a git checkout" in shown and "107-110 s measured at load 1.7-1.9" in shown
    assert "exit codes: 0 no regression, every point judged; 1 a regression" in shown
    assert "4 no regression, but at least one point could not be judged" in shown
    assert max(map(len, printed.splitlines())) <= 100
