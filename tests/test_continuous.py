"""The regression gate (benchmarks/continuous.py) as a command: what it refuses before timing
anything, and what it leaves behind when it is stopped (nothing: asv's whole session ended, its
temporary folder removed, one line said). asv is a stand-in here: the gate's seam `ASV`, over a
git repository of two commits of its own (`ROOT`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import continuous
from tests.conftest import ctrl_c_delivered

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two commits of a `harness/` and a `benchmarks/`, the first tagged `first`."""
    root = tmp_path / "repo"
    (root / "harness").mkdir(parents=True)
    (root / "benchmarks").mkdir()
    git(root, "init", "-q")
    for n in (1, 2):
        (root / "harness" / "__init__.py").write_text(f"VERSION = {n}\n")
        (root / "benchmarks" / "__init__.py").write_text(f"VERSION = {n}\n")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"commit {n}")
    git(root, "tag", "first", "HEAD~1")
    return root


def _no_asv(*args: str, env: object = None) -> None:
    raise AssertionError(f"asv {args} ran: the gate should have refused first")


def _stop_at_asv(*args: str, env: object = None) -> None:
    raise continuous.CannotRun("asv stopped here")


@pytest.mark.parametrize("argv, edit, asv, said, note", [
    (["HEAD", "HEAD"], None, _no_asv, "BASE and HEAD are both HEAD (", None),
    (["first", "HEAD~1"], None, _no_asv, "first and HEAD~1 are the same commit (", None),
    (["first", "HEAD"], "harness/__init__.py", _no_asv, "harness/ has uncommitted changes (harness/__init__.py)", None),
    (["first", "HEAD"], "harness/new.py", _no_asv, "harness/ has uncommitted changes (harness/new.py)", None),
    (["first", "HEAD"], "benchmarks/__init__.py", _stop_at_asv, "asv stopped here",
     ("note: benchmarks/ has uncommitted changes (benchmarks/__init__.py): both commits are timed with this "
      "checkout's suites")),
], ids=["BASE is HEAD", "BASE is HEAD by two names", "harness/ changed", "harness/ has a new file",
        "benchmarks/ changed"])
def test_the_gate_refuses_what_it_would_not_measure_in_one_line(
        argv: list[str], edit: str | None, asv: Callable[..., None], said: str, note: str | None, repo: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """BASE and HEAD one commit, or HEAD's `harness/` not as committed (the gate times commits): exit 2
    before asv runs, and before the load line that starts a gate's work; uncommitted suites (used for
    both commits) are said, not refused."""
    if edit is not None:
        (repo / edit).write_text("CHANGED = True\n")
    monkeypatch.setattr(continuous, "ROOT", repo)
    monkeypatch.setattr(continuous, "asv", asv)
    assert continuous.main([*argv, "--machine", "m"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().count("\n") == 0 and captured.err.startswith(f"harness gate: {said}")
    assert (note in captured.out) if note else "note:" not in captured.out
    assert ("load average at the start" in captured.out) == (asv is _stop_at_asv)
    if "HEAD~1" in argv or argv == ["HEAD", "HEAD"]:  # one commit: the next step named
        assert captured.err.strip().endswith("nothing to compare; compare with an earlier commit, e.g. harness gate HEAD~1 HEAD")


FAKE_ASV = '''
import os, subprocess, sys, time
from pathlib import Path

if sys.argv[1] == "run":  # as asv does: its forkserver in a process group of its own
    subprocess.Popen([sys.executable, __file__, "server"], process_group=0)
    time.sleep(600)
elif sys.argv[1] == "server":  # the forkserver, and the `harness run` a benchmark's setup_cache starts
    run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    pids = Path(os.environ["FAKE_ASV_PIDS"])
    pids.with_suffix(".tmp").write_text(f"{os.getppid()} {os.getpid()} {run.pid}")
    pids.with_suffix(".tmp").rename(pids)
    time.sleep(600)
'''  # `asv machine` exits 0

DRIVER = """import sys
from pathlib import Path
from benchmarks import continuous
continuous.ROOT, continuous.ASV = Path(sys.argv[1]), [sys.executable, sys.argv[2]]
sys.exit(continuous.main(["first", "HEAD", "--machine", "m"]))
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes' states from /proc")
@pytest.mark.parametrize("signum, code, word", [(signal.SIGINT, 130, "interrupted"),
                                                (signal.SIGTERM, 143, "terminated")], ids=["Ctrl-C", "SIGTERM"])
def test_a_stopped_gate_ends_asvs_session_and_removes_its_folder(signum: int, code: int, word: str, repo: Path,
                                                                   tmp_path: Path) -> None:
    """Stopped while asv runs (as a CI timeout stops it): asv, its forkserver (a process group of its
    own) and the run under it all end, the unpacked commits are removed, and one line says so."""
    fake, pids_file, tmp = tmp_path / "fake_asv.py", tmp_path / "pids", tmp_path / "tmp"
    fake.write_text(FAKE_ASV)
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "FAKE_ASV_PIDS": str(pids_file)}
    gate = subprocess.Popen([sys.executable, "-c", DRIVER, str(repo), str(fake)], cwd=continuous.ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ctrl_c_delivered)
    pids: list[int] = []
    try:
        assert wait_for(lambda: pids_file.exists() or gate.poll() is not None, 300), "the stand-in asv never ran"
        pids = [int(p) for p in pids_file.read_text().split()]
        assert [p.name.startswith("harness-continuous-") for p in tmp.iterdir()] == [True]
        gate.send_signal(signum)
        _out, err = gate.communicate(timeout=120)
        assert gate.returncode == code and "Traceback" not in err, err
        assert err.strip().splitlines()[-1].startswith(f"harness gate: {word}")
        assert list(tmp.iterdir()) == []
        assert wait_for(lambda: not any(alive(p) for p in pids), 30), [p for p in pids if alive(p)]
    finally:
        for pid in [gate.pid, *pids]:  # what a failing gate left, by id
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
