"""The same spec run locally and on a Dask cluster of this machine: each analysis' wall time (the
record's `wall_s`: loading and computing every matrix, the cache off) side by side, the tasks it
was split into and where they ran, with the load average before and after every run.

    python benchmarks/cluster_vs_local.py [SPEC] [--workers 2] [--rounds 2] [--limit 1.3]

The cluster is started as a user starts one: `dask scheduler` and `dask worker` processes on
127.0.0.1 (single-thread workers, with their nannies), joined through `execution.dask_address`.
Local and cluster runs alternate, so drift in the machine's load hits both. Not an asv suite (it
times whole runs, seconds each); it exits 1 when an analysis' median ratio exceeds `--limit`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_S = 120.0


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages."""
    path = Path("/proc/loadavg")
    return " ".join(path.read_text().split()[:3]) if path.exists() else "?"


def start_cluster(folder: Path, workers: int) -> tuple[str, list[subprocess.Popen[bytes]]]:
    """A scheduler and `workers` single-thread workers; the scheduler's address once all joined."""
    file = folder / "scheduler.json"
    logs = open(folder / "dask.log", "wb")  # noqa: SIM115  (kept open as long as the processes)
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(file)], stdout=logs, stderr=logs)]
    deadline = time.monotonic() + START_S
    while not file.exists() or not file.read_text().strip().endswith("}"):
        if time.monotonic() > deadline or procs[0].poll() is not None:
            raise SystemExit(f"the scheduler did not start: see {folder / 'dask.log'}")
        time.sleep(0.05)
    address = json.loads(file.read_text())["address"]
    procs.append(subprocess.Popen([sys.executable, "-m", "dask", "worker", address, "--nworkers", str(workers),
                                   "--nthreads", "1", "--no-dashboard"], stdout=logs, stderr=logs))
    from distributed import Client

    with Client(address, timeout=START_S) as client:
        client.wait_for_workers(workers, timeout=START_S)
    return address, procs


def run(spec: Path, out: Path, sets: list[str]) -> dict:
    """One `harness run`, the cache off; its record, with the load average around it."""
    before = loadavg()
    cmd = [sys.executable, "-m", "harness", "run", str(spec), "-o", str(out), "--no-cache", *[f"--set={s}" for s in sets]]
    done = subprocess.run(cmd, cwd=out.parent, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    record = json.loads((out / "record.json").read_text())
    record["_load"] = (before, loadavg())
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default=str(ROOT / "configs" / "task_geometry.toml"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="local and cluster runs each (alternating)")
    parser.add_argument("--limit", type=float, default=1.3, help="the cluster's analysis time over the local one")
    args = parser.parse_args()
    walls: dict[str, dict[str, list[float]]] = {"local": {}, "cluster": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        address, procs = start_cluster(folder, args.workers)
        try:
            for i in range(args.rounds):
                for where, sets in [("local", []), ("cluster", ["execution.executor='dask'",
                                                                f"execution.dask_address='{address}'"])]:
                    record = run(Path(args.spec).resolve(), folder / f"{where}-{i}", sets)
                    print(f"{where} run {i + 1}: load {record['_load'][0]} -> {record['_load'][1]}")
                    for a in record["analyses"]:
                        walls[where].setdefault(a["name"], []).append(a["wall_s"])
                        if where == "cluster":
                            spread = Counter(p["worker"] for p in a["placements"])
                            print(f"  {a['name']}: {a['wall_s']:.2f} s, {len(a['placements'])} tasks: "
                                  + ", ".join(f"{w} {n}" for w, n in sorted(spread.items())))
                        else:
                            print(f"  {a['name']}: {a['wall_s']:.2f} s, in the client")
        finally:
            for proc in reversed(procs):
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=60)
    worst = 0.0
    print(f"{'analysis':<12} {'local s':>9} {'cluster s':>10} {'ratio':>6}  (medians of {args.rounds})")
    for name, local in walls["local"].items():
        a, b = statistics.median(local), statistics.median(walls["cluster"][name])
        worst = max(worst, b / a)
        print(f"{name:<12} {a:>9.2f} {b:>10.2f} {b / a:>6.2f}")
    print(f"worst ratio {worst:.2f} (limit {args.limit}); load now {loadavg()}")
    return 0 if worst <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
