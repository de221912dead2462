"""Timing workers (bench.worker): each point in a process of its own, timed on request, its errors
and its death reported to the parent; the parent waits for the others to go quiet (bench.quiet)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.base.processes import ORPHAN_CHECK_S, alive, gone
from harness.bench.quiet import settle
from harness.bench.environment import CannotStart
from harness.bench.worker import Request, TimingWorker, WorkerDied, _forkserver_pid
from tests.bench.timing_work import Told

ASK = Request(part=1, r=0, warmups=1, calls=3, min_time_s=0.0, keep=True)


def test_a_worker_times_blocks_in_a_process_of_its_own() -> None:
    worker = TimingWorker(Told(), threads=1)
    try:
        reply = worker.block(ASK)
        assert len(reply.block.calls_s) == 3 and reply.block.warmups == 1 and reply.block.seconds > 0
        pid, part, r, _env, warmed, _ = reply.result  # type: ignore[misc]
        assert pid != os.getpid() and pid == worker.process.pid == reply.notes["pid"] and (part, r) == (1, 0)
        assert warmed  # imports and compilation before any timed call
        assert worker.block(Request(part=0, r=2, warmups=0, calls=1, min_time_s=0.0, keep=False)).result is None
    finally:
        worker.close()
    assert not worker.process.is_alive()


def test_a_failed_block_is_the_strategys_error_and_the_worker_goes_on() -> None:
    worker = TimingWorker(Told(fail="block"), threads=1)
    try:
        with pytest.raises(ZeroDivisionError, match="round 1 of part 0"):
            worker.block(Request(part=0, r=1, warmups=0, calls=1, min_time_s=0.0, keep=False))
        assert worker.block(ASK).block.calls_s
    finally:
        worker.close()


def test_a_worker_that_cannot_build_says_why_when_waited_for() -> None:
    worker = TimingWorker(Told(fail="build"), threads=1)
    with pytest.raises(ValueError, match="cannot build its inputs"):
        worker.wait_ready()
    worker.close()


def test_a_point_with_an_environment_of_its_own_gets_it_and_the_parent_keeps_its_own() -> None:
    assert "HARNESS_TEST_ENV" not in os.environ
    worker = TimingWorker(Told(), threads=1, env={"HARNESS_TEST_ENV": "18"})
    try:
        assert worker.block(ASK).result[3] == "18"  # type: ignore[index]
    finally:
        worker.close()
    assert "HARNESS_TEST_ENV" not in os.environ


@pytest.mark.parametrize(("env", "said"), [
    ({"HARNESS_TEST_ENV": "x" * 200_000}, "a variable of its environment is 200,018 bytes, more than the 131,072"),
    ({f"HARNESS_TEST_{i}": "x" * 100_000 for i in range(os.sysconf("SC_ARG_MAX") // 100_000 + 1)},
     "this system starts a process with (`ulimit -s` sets it)"),
])
def test_a_worker_whose_environment_exec_refuses_says_so_at_once(env: dict[str, str], said: str) -> None:
    """exec fails with E2BIG, which multiprocessing never sees: it said "exit code 255", and with a
    large label waited for good to hand the dead child its work."""
    before = dict(os.environ)
    with pytest.raises(CannotStart, match=re.escape(said)):
        TimingWorker(Told(), threads=1, env=env)
    assert dict(os.environ) == before


def test_settle_waits_until_a_spinning_process_stops(tmp_path: Path) -> None:
    """The spinner burns a core, then writes a file and sleeps: settle returns after the file."""
    done = tmp_path / "stopped"
    code = ("import time, sys, pathlib\nend = time.perf_counter() + 0.3\nwhile time.perf_counter() < end: pass\n"
            "pathlib.Path(sys.argv[1]).write_text('x')\ntime.sleep(30)\n")
    spinner = subprocess.Popen([sys.executable, "-c", code, str(done)])
    try:
        waited = settle([spinner.pid], most_s=30.0)
        assert waited is not None and done.exists()
    finally:
        spinner.kill()
        spinner.wait()


def test_settle_gives_up_on_a_process_that_never_stops() -> None:
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert settle([spinner.pid], most_s=0.2) is None
    finally:
        spinner.kill()
        spinner.wait()


def _killed_while_idle(worker: TimingWorker) -> None:
    worker.block(ASK)
    os.kill(worker.process.pid, signal.SIGKILL)  # type: ignore[arg-type]
    assert gone(worker.process.pid, 60)  # type: ignore[arg-type]


def _stopped(worker: TimingWorker) -> None:
    pass  # its next block stops it (SIGSTOP) before answering


@pytest.mark.parametrize(("fail", "before", "said"), [
    ("", _killed_while_idle, "worker died"),  # not BrokenPipeError: its pipe was written to after it died
    ("exit", _stopped, "worker died (exit code 3)"),
    ("stop", _stopped, "worker stopped answering: no reply within 2 s"),
])
def test_a_lost_worker_is_said_to_have_died_or_stopped_and_ends_with_close(
        fail: str, before: Callable[[TimingWorker], None], said: str) -> None:
    worker = TimingWorker(Told(fail=fail), threads=1)
    try:
        before(worker)
        with pytest.raises(WorkerDied, match=re.escape(said)):
            worker.block(ASK, deadline_s=2.0)
        assert worker.lost
    finally:
        worker.close()
    assert not alive(worker.process.pid)  # type: ignore[arg-type]  (a stopped one too: killed)


ENDED_MID_BLOCK = """
import sys, time
from pathlib import Path
from harness.bench.worker import TimingWorker
from tests.bench.timing_work import Told
from tests.bench.test_worker import ASK
flag = Path(sys.argv[1])
worker = TimingWorker(Told(call_s=60.0, holds=str(flag)), threads=1)
worker.wait_ready()
worker._asked = True  # as a block under way leaves it: close() ends it (SIGTERM) at once
worker._conn.send(ASK)
while not flag.exists():
    time.sleep(0.01)
worker.close()
print("closed", worker.process.exitcode)
"""


def test_a_worker_ended_in_its_block_unlinks_what_its_target_holds(tmp_path: Path) -> None:
    """Ctrl-C in a block ends the worker with SIGTERM: killed outright, the process pool its target
    had started left nine semaphores to the resource tracker, which warned of them on the user's
    terminal after the one line the run had printed."""
    done = subprocess.run([sys.executable, "-c", ENDED_MID_BLOCK, str(tmp_path / "flag")], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0 and done.stdout.split() == ["closed", "0"], done.stderr  # unwound, not killed (-15)
    assert "leaked" not in done.stderr, done.stderr


def test_workers_outlive_a_killed_forkserver_and_the_next_starts_a_new_one() -> None:
    """Workers watch the run, not the forkserver they were forked from; a block longer than the
    watch's period finishes after the forkserver died."""
    worker = TimingWorker(Told(call_s=3 * ORPHAN_CHECK_S), threads=1)
    try:
        worker.wait_ready()
        server = _forkserver_pid()
        assert server is not None
        os.kill(server, signal.SIGKILL)
        assert gone(server, 60)
        reply = worker.block(Request(part=0, r=0, warmups=0, calls=1, min_time_s=0.0, keep=False))
        assert reply.block.seconds > 0
        other = TimingWorker(Told(), threads=1)
        try:
            assert other.block(ASK).block.calls_s and _forkserver_pid() != server
        finally:
            other.close()
    finally:
        worker.close()
    assert not alive(worker.process.pid)  # type: ignore[arg-type]
