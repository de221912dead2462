"""The harness on a real Dask cluster, started as a user starts one: `dask scheduler` and `dask
worker` processes on 127.0.0.1 (a LocalCluster is the harness's own and proves less). A lost worker
is counted and said, a dead address or a lost scheduler is one line, a worker without the harness is
refused up front, and nothing waits without a bound."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from tests.conftest import CONFIGS

distributed = pytest.importorskip("distributed")

SMOKE = str(CONFIGS / "smoke.toml")
START_S = 120.0  # a scheduler or a worker started by then, on a busy CI machine
# 40 one-matrix chunks of dense 600 x 500 svdvals (~1 s on two workers): long enough to lose a
# worker or the scheduler midway; process_pool is timed too (here, never through the cluster)
SPEC = """
[experiment]
name = "cluster"
seed = 0
[data]
source = "synthetic"
form = "dense"
adapters = 40
layers = 1
[data.modules]
w = [600, 500]
[[analysis]]
op = "svdvals"
strategy = "numpy"
compare = ["process_pool"]
[execution]
memory_budget = "5MiB"
[benchmark]
warmup = 0
sample = 2
budget = "1s"
"""
# a worker for which `import harness` fails, as on a host where it is not installed
NO_HARNESS = "import sys\nsys.modules['harness'] = None\n"


class Dask:
    """A scheduler and its workers as processes of their own; all are ended on close."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: list[subprocess.Popen[bytes]] = []
        file = folder / "scheduler.json"
        self._start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(file))
        deadline = time.monotonic() + START_S
        while not file.exists() or not file.read_text().strip().endswith("}"):  # written once it listens
            assert time.monotonic() < deadline and self.procs[0].poll() is None, "the scheduler did not start"
            time.sleep(0.05)
        self.address: str = json.loads(file.read_text())["address"]

    def _start(self, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.folder / f"{args[0]}-{len(self.procs)}.log", "wb")  # noqa: SIM115  (closed with the process)
        proc = subprocess.Popen([sys.executable, "-m", "dask", *args],  # `dask scheduler`, `dask worker`
                                stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def worker(self, *extra: str) -> subprocess.Popen[bytes]:
        """One single-thread worker without a nanny: a SIGKILL ends it for good."""
        return self._start("worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard", *extra)

    def wait_for(self, workers: int) -> None:
        with distributed.Client(self.address, timeout=START_S) as client:
            client.wait_for_workers(workers, timeout=START_S)

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextmanager
def dask_processes(folder: Path, workers: int = 2) -> Iterator[Dask]:
    dask = Dask(folder)
    try:
        for _ in range(workers):
            dask.worker()
        if workers:
            dask.wait_for(workers)
        yield dask
    finally:
        dask.close()


def harness_run(out: Path, cache: Path, *sets: str) -> subprocess.Popen[str]:
    """`harness run` of SPEC in its own process, as a user starts it."""
    spec = out.parent / "cluster.toml"
    spec.write_text(SPEC)
    cmd = [sys.executable, "-m", "harness", "run", str(spec), "-o", str(out), f"--set=execution.cache_dir='{cache}'",
           *[f"--set={s}" for s in sets]]
    return subprocess.Popen(cmd, cwd=out.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def after_entries(proc: subprocess.Popen[str], cache: Path, count: int) -> bool:
    """Wait until the run has cached `count` entries (chunks done) while it still runs."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list(cache.glob("??/*.entry"))) >= count:
            return True
        time.sleep(0.02)
    return False


def worker_address(dask: Dask, pid: int) -> str:
    with distributed.Client(dask.address, timeout=START_S) as client:
        return next(a for a, p in client.run(os.getpid).items() if p == pid)


def test_a_dead_address_is_one_line_at_once(capsys: pytest.CaptureFixture[str], free_port: int) -> None:
    start = time.monotonic()
    code = main(["plan", SMOKE, "--set=execution.executor='dask'", f"--set=execution.dask_address='tcp://127.0.0.1:{free_port}'"])
    elapsed = time.monotonic() - start
    said = capsys.readouterr()
    assert code == 2 and elapsed < 15
    assert said.err.count("\n") == 1 and "execution.dask_address" in said.err and "nothing listens" in said.err


@pytest.fixture
def free_port() -> int:
    import socket

    with socket.socket() as s:  # bound, then closed: nothing listens there afterwards
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_a_lost_worker_is_counted_and_the_run_ends_right(tmp_path: Path) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    with dask_processes(tmp_path) as dask:
        victim = dask.procs[1]
        address = worker_address(dask, victim.pid)
        # a budget a busy machine does not exhaust: every compared strategy gets its round
        proc = harness_run(out, cache, "execution.executor='dask'", f"execution.dask_address='{dask.address}'",
                           "benchmark.budget='2m'")
        killed = after_entries(proc, cache, 6)  # its 40 chunks are under way
        if killed:
            victim.send_signal(signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=600)
    assert killed, "the run ended before a worker could be killed"
    assert proc.returncode == 0, stderr
    record = json.loads((out / "record.json").read_text())
    assert [w["address"] for w in record["lost_workers"]] == [address]
    assert f"lost dask worker {address}" in stderr
    # every task the lost worker held counts once more in its chunk's attempts, and only those
    placements = [p for a in record["analyses"] for p in a["placements"]]
    assert sum(p["attempts"] - 1 for p in placements) == sum(w["tasks"] for w in record["lost_workers"])
    # the record knows every worker's machine; the plan spread the work over both threads
    assert {w["address"] for w in record["cluster"]["workers"]} >= {address}
    assert all(w["machine"]["cores"] >= 1 for w in record["cluster"]["workers"])
    assert f"dask scheduler {dask.address}: 2 workers, 2 threads" in stderr
    spectrum = record["plan"]["steps"][0]
    assert spectrum["tasks"] >= 2 * 2 and len(record["analyses"][0]["placements"]) == spectrum["tasks"]
    assert "svdvals: 40 tasks on " in stderr  # and on which worker, how many and how long
    # timings are taken here, never through the cluster: process_pool's on a local pool
    pool = [t for t in record["analyses"][0]["timings"] if t["strategy"] == "process_pool"]
    assert pool and "Sending large graph" not in stderr
    # the same numbers as a local run (one BLAS thread per task in both)
    local = tmp_path / "local"
    assert main(["run", str(tmp_path / "cluster.toml"), "-o", str(local), "--no-cache",
                 "--set=execution.executor='process_pool'", "--set=execution.workers=2"]) == 0
    ours, theirs = np.load(out / "spectra.npz"), np.load(local / "spectra.npz")
    assert sorted(ours.files) == sorted(theirs.files)
    for key in ours.files:
        np.testing.assert_array_equal(ours[key], theirs[key])


@pytest.mark.slow
def test_workers_without_the_harness_are_refused_and_a_lost_scheduler_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "no_harness.py").write_text(NO_HARNESS)
    sets = ["--set=execution.executor='dask'"]
    with dask_processes(tmp_path, workers=0) as dask:
        dask.worker("--preload", str(tmp_path / "no_harness.py"), "--name", "bare")
        dask.wait_for(1)
        sets.append(f"--set=execution.dask_address='{dask.address}'")
        start = time.monotonic()
        assert main(["plan", SMOKE, *sets]) == 2  # its only worker refused: no wait for work that never runs
        err = capsys.readouterr().err
        assert time.monotonic() - start < 60
        assert err.count("\n") == 1 and "no worker can run this harness's tasks" in err and "cannot import" in err

        good = dask.worker()
        dask.wait_for(2)
        assert main(["run", SMOKE, "-o", str(tmp_path / "run"), "--no-cache", *sets]) == 0
        err = capsys.readouterr().err
        record = json.loads((tmp_path / "run" / "record.json").read_text())
        bare = next(w for w in record["cluster"]["workers"] if w["name"] == "bare")
        assert "cannot import this harness" in bare["refused"] and bare["machine"] is None
        assert f"dask worker {bare['address']}: refused, it cannot import this harness" in err
        assert {p["worker"] for a in record["analyses"] for p in a["placements"]} == {worker_address(dask, good.pid)}

        # a scheduler lost midway: one line naming it, the chunks done kept in the cache
        cache = tmp_path / "cache"
        proc = harness_run(tmp_path / "lost", cache, "execution.executor='dask'",
                           f"execution.dask_address='{dask.address}'")
        lost = after_entries(proc, cache, 4)
        if lost:
            dask.procs[0].send_signal(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=300)
    assert lost, "the run ended before the scheduler could be killed"
    assert proc.returncode == 2 and "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"execution.dask_address {dask.address}: lost the dask scheduler"), stderr
    assert json.loads((tmp_path / "lost" / "record.json").read_text())["complete"] is False
    assert main(["cache", "verify", "--dir", str(cache)]) == 0


def test_dask_without_distributed_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as where the `dask` extra is not installed
    assert main(["plan", SMOKE, "--set=execution.executor='dask'"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'spectral-harness[dask]'" in err
