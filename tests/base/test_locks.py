"""Every lock has a bound (issue 43): with the wisdom's lock held by another process a run finished
its work, then blocked forever without a word, and when stopped left a record marked incomplete."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.base import locks
from harness.cli.main import main
from harness.machine import wisdom
from harness.record.run_record import load_record
from tests.cli.test_cache_cli import write_spec


@contextmanager
def held_elsewhere(path: Path, pid: str = "") -> Iterator[None]:
    """`path` flocked through a descriptor of its own, as another process would hold it (flock
    locks belong to the open file, so this process's next open waits on it too)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, pid.encode())
        yield
    finally:
        os.close(fd)


@pytest.fixture
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locks, "SAY_AFTER_S", 0.05)
    monkeypatch.setattr(locks, "TIMEOUT_S", 0.3)


@pytest.mark.parametrize("holder, pid, named", [
    (False, "", None),  # free: taken at once, nothing said
    (True, "", "another process"),
    (True, str(os.getpid()), f"process {os.getpid()}"),  # the holder's pid, as a harness holder writes it
    (True, "999999999", "another process"),  # a pid left by a holder killed outright is not named
])
def test_a_held_lock_is_said_then_given_up(tmp_path: Path, short_waits: None, holder: bool, pid: str,
                                           named: str | None) -> None:
    path, lines = tmp_path / ".lock", []
    if not holder:
        with locks.held(path, say=lines.append):
            assert path.read_text() == str(os.getpid())
        assert lines == [] and path.read_text() == ""
        return
    with held_elsewhere(path, pid), pytest.raises(locks.LockTimeout, match=f"held by {named} for"):
        with locks.held(path, say=lines.append):
            pytest.fail("the lock was taken while held")
    assert len(lines) == 1 and lines[0].startswith(f"waiting for {path}, held by {named} (giving up after")


def test_a_run_whose_wisdom_lock_is_held_keeps_its_results(tmp_path: Path, short_waits: None,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(wisdom.ENV, str(tmp_path / "wisdom"))
    spec = write_spec(tmp_path, tmp_path / "cache")
    with held_elsewhere(tmp_path / "wisdom" / ".lock"):
        assert main(["run", str(spec), "-o", str(tmp_path / "run"), "--set=data.adapters=2"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("waiting for ") >= 1
    assert "wisdom not updated: " in err and "gave up waiting" in err
    assert load_record(tmp_path / "run").complete


def test_a_run_stopped_while_it_keeps_its_measurements_has_its_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Stopped while waiting on the lock, the run had left "a record marked incomplete"."""
    learn = wisdom.learn

    def stopped_waiting(*args: object, **kwargs: object) -> object:
        if not (tmp_path / "run" / "record.json").exists():  # the roofs, learned before the run has a record
            return learn(*args, **kwargs)  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setenv(wisdom.ENV, str(tmp_path / "wisdom"))  # on: a run with wisdom off never waits for its lock
    monkeypatch.setattr("harness.run.runner.wisdom.learn", stopped_waiting)
    spec = write_spec(tmp_path, tmp_path / "cache")
    assert main(["run", str(spec), "-o", str(tmp_path / "run"), "--set=data.adapters=2"]) == 130
    assert "holds its finished record" in capsys.readouterr().err.strip().splitlines()[-1]
    assert load_record(tmp_path / "run").complete
