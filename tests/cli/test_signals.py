"""SIGTERM and Ctrl-C before a run folder exists, even while importing: one line, exit 143 / 130
(during a run: tests/cli/test_cli.py)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from harness.cli import entry, exit_codes
from harness.cli import main as cli
from harness.run import session
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")


@pytest.mark.parametrize(("raised", "code", "word"), [(KeyboardInterrupt, 130, "interrupted"),
                                                      (exit_codes.Terminated, 143, "terminated")])
def test_a_signal_while_importing_is_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], raised: type, code: int, word: str) -> None:
    def importing(name: str) -> None:
        raise raised

    monkeypatch.setattr(entry.importlib, "import_module", importing)
    assert entry.main(["--version"]) == code
    assert capsys.readouterr().err == f"harness: {word}\n"


@pytest.mark.parametrize(("raised", "code", "word"), [(KeyboardInterrupt, 130, "interrupted"),
                                                      (exit_codes.Terminated, 143, "terminated")])
def test_a_signal_before_the_run_folder_exists_is_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        raised: type, code: int, word: str) -> None:
    def planning(*args: object) -> None:
        raise raised

    monkeypatch.setattr(session, "validate", planning)
    assert cli.main(["run", SMOKE, "-o", str(tmp_path / "r")]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"{word}: nothing was written" and not any("Traceback" in line for line in err)
    assert not (tmp_path / "r").exists()


def test_sigterm_becomes_terminated() -> None:
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, exit_codes.terminate)
        with pytest.raises(exit_codes.Terminated):
            signal.raise_signal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_the_launcher_leaves_the_users_environment_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness times the program the user runs: OMP_WAIT_POLICY=PASSIVE, once set by the
    launcher, made torch's svdvals 2.4x slower than in the user's own process."""
    import os

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "28")
    before = dict(os.environ)
    monkeypatch.setattr(entry.importlib, "import_module", lambda name: type("cli", (), {"main": lambda argv: 0}))
    assert entry.main(["--version"]) == 0
    assert dict(os.environ) == before
