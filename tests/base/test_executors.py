"""Full analyses fanned out chunk by chunk: a process pool and a real Dask LocalCluster on
loopback give the same numbers as a local run, and a killed worker costs a resubmission only."""

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from harness.base.executors import SerialExecutor
from tests.conftest import CONFIGS, ctrl_c_delivered

SMOKE = str(CONFIGS / "smoke.toml")


def run(out: Path, *sets: str) -> dict:
    assert main(["run", SMOKE, "-o", str(out), "--no-cache", *[f"--set={s}" for s in sets]]) == 0
    return json.loads((out / "record.json").read_text())


def same_spectra(a: Path, b: Path) -> None:
    x, y = np.load(a / "spectra.npz"), np.load(b / "spectra.npz")
    assert sorted(x.files) == sorted(y.files)
    for key in x.files:
        np.testing.assert_array_equal(x[key], y[key])


def test_serial_executor_delivers_results_and_errors() -> None:
    ex = SerialExecutor()
    assert ex.submit(pow, 2, 5).result() == 32
    with pytest.raises(ZeroDivisionError):
        ex.submit(lambda: 1 / 0).result()


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["process_pool", "dask"])
def test_fanned_out_runs_match_a_local_run(tmp_path: Path, executor: str) -> None:
    local = run(tmp_path / "local")
    fanned = run(tmp_path / executor, f"execution.executor='{executor}'", "execution.workers=2")
    same_spectra(tmp_path / "local", tmp_path / executor)
    assert fanned["plan"]["executor"] == executor
    svd = next(a for a in fanned["analyses"] if a["name"] == "svd")
    planned = next(s for s in fanned["plan"]["steps"] if s["analysis"] == "svd")
    # sized to the workers: 2-4 tasks per worker thread (3 of 6 matrices per shape group), not 2 chunks
    assert svd["computed_chunks"] == len(svd["placements"]) == planned["tasks"] == 6
    assert all(p["attempts"] == 1 and p["seconds"] > 0 for p in svd["placements"])
    if executor == "dask":
        assert all(p["worker"].startswith("tcp://127.0.0.1:") for p in svd["placements"])
    # the PCA's Grams, split over position ranges on the workers and summed in order
    geometry = next(a for a in fanned["analyses"] if a["name"] == "geometry")
    assert len(geometry["placements"]) == 4 and {p["group"] for p in geometry["placements"]} == {"positions"}
    local_pca, fanned_pca = np.load(tmp_path / "local" / "pca.npz"), np.load(tmp_path / executor / "pca.npz")
    for key in local_pca.files:
        np.testing.assert_array_equal(local_pca[key], fanned_pca[key])
    assert local["plan"]["executor"] == "local"


def worker_pids(parent: int) -> list[int]:
    """Child processes of `parent` that run a spawned Python (the LocalCluster's workers)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"spawn_main" in cmdline:
            pids.append(int(entry.name))
    return pids


DENSE = [  # 12 x 3 analyses of one-matrix chunks, long enough to kill a worker mid-run
    "data.form='dense'", "data.modules={w=[400,300]}", "data.adapters=12",
    "execution.memory_budget='3MiB'", "analysis.1.strategy='numpy'", "analysis.2.compare=['torch']",
]


@pytest.mark.slow
def test_a_killed_dask_worker_costs_a_resubmission(tmp_path: Path) -> None:
    out, cache = tmp_path / "killed", tmp_path / "cache"
    sets = [*DENSE, "execution.executor='dask'", "execution.workers=2", f"execution.cache_dir='{cache}'"]
    cmd = [sys.executable, "-m", "harness", "run", SMOKE, "-o", str(out), *[f"--set={s}" for s in sets]]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline, killed = time.monotonic() + 120, False
    while time.monotonic() < deadline and proc.poll() is None:
        entries = list(cache.glob("??/*.entry")) if cache.exists() else []
        pids = worker_pids(proc.pid)
        if len(entries) >= 30 and pids:  # inside the svd analysis: svdvals wrote 24 chunks
            os.kill(pids[0], signal.SIGKILL)
            killed = True
            break
        time.sleep(0.02)
    stdout, stderr = proc.communicate(timeout=300)
    assert killed, "the run ended before a worker could be killed"
    assert proc.returncode == 0, stderr
    # the same one BLAS thread per worker, so the same bits, without losing a worker
    run(tmp_path / "reference", *DENSE, "execution.executor='process_pool'", "execution.workers=2")
    same_spectra(tmp_path / "reference", out)
    record = json.loads((out / "record.json").read_text())
    attempts = [p["attempts"] for a in record["analyses"] for p in a["placements"]]
    assert max(attempts) >= 2, "the record must note the resubmitted chunk"
    assert "resubmitted after losing their worker" in stdout


POOL_HOLDER = """
import os, sys
from harness.base.executors import process_pool
pool = process_pool(2)
try:  # from the line on: the test may press Ctrl-C the moment it reads it
    print(" ".join(str(p) for p in pool._processes), flush=True)
    sys.stdin.read()  # until the test acts
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr, flush=True)
    pool.shutdown(wait=True, cancel_futures=True)
    sys.exit(130)
"""


def _holder(**popen: object) -> tuple[subprocess.Popen[str], list[int]]:
    """A process holding a started two-worker pool; its workers' pids, once they all started."""
    proc = subprocess.Popen([sys.executable, "-c", POOL_HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2], **popen)
    assert proc.stdout is not None
    return proc, [int(p) for p in proc.stdout.readline().split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_pool_workers_die_with_a_killed_run() -> None:
    proc, workers = _holder()
    assert len(workers) == 2 and all(_alive(w) for w in workers)
    exits = [os.pidfd_open(w) for w in workers]  # readable when that worker exits: the event awaited
    proc.kill()
    proc.wait()
    try:
        for fd in exits:
            select.select([fd], [], [], 60)  # bounded, so a worker that never dies fails, not hangs
    finally:
        for fd in exits:
            os.close(fd)
    survivors = [w for w in workers if _alive(w)]
    for w in survivors:
        os.kill(w, signal.SIGKILL)
    assert survivors == []


def test_ctrl_c_to_the_process_group_prints_one_line() -> None:
    proc, workers = _holder(start_new_session=True,
                            preexec_fn=ctrl_c_delivered)
    os.killpg(proc.pid, signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert err == "interrupted\n"
