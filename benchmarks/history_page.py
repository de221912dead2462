"""How long `harness history` takes to draw its page from asv results shaped as the suites write
them: every point of benchmarks/speedups.py (time ratio, interval, busy share, seconds, roof gap,
error) and the kernel suites' time series, at 3 commits on 2 machines (a CPU box and a GPU box),
with a 1.5x slowdown of one strategy at the last commit. An asv suite, and a script that prints
the time with the load average:

    python -m benchmarks.history_page [--commits 3] [--repeats 3]

`write_results` is also the tests' fixture (tests/report/test_history.py).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
           "stats_q_25", "stats_q_75", "stats_number", "stats_repeat"]
MACHINES = ("box-cpu", "box-nvidia-h100-80gb-hbm3")
SLOW = "task_geometry:spectrum/torch"  # 1.5x slower at the last commit, on the first machine
SPEEDUPS = {"track_time_ratio": "x", "track_interval": "x", "track_busy": "share"}
PER_STRATEGY = {"track_seconds": "seconds", "track_roof_gap": "x", "track_error": "relative error"}
KERNELS = {"precision.PcaGram.time_gram": [["'dual_gram'", "'factored_gram'"], ["'float32'", "'bfloat16'"]],
           "gram.GramRoutes.time_gram": [["'compiled'", "'torch'", "'numpy'"], ["18", "38"]],
           "roof.DenseValues.time_svdvals": [["'gram_eigh'", "'numpy'"], ["'3072x768'", "'768x3072'"]],
           "roof.FactoredGroup.time_svdvals": [["'batched'", "'per_delta'"], ["64", "512"]]}


def _suites() -> dict[str, list[str]]:
    """The speedups suite's classes and their points, each analysis' baseline first."""
    from benchmarks.speedups import Dense, MainJob

    return {"MainJob": MainJob.params, "Dense": Dense.params}


def _value(name: str, point: str, machine: int, commit: int, commits: int, busy: float) -> float:
    """A plausible, deterministic value: speedups from 1x to 12x, a GPU's strategies 5x faster."""
    base = 1.0 + (sum(map(ord, point)) % 37) * 0.3
    noise = 1.0 + 0.03 * math.sin(7 * commit + len(point))
    slow = 1.5 if point == SLOW and machine == 0 and commit == commits - 1 else 1.0
    return {"track_time_ratio": noise * slow / (base * (5 if machine else 1)),
            "track_interval": 1.15 + 0.05 * (commit % 2), "track_busy": busy,
            "track_seconds": 0.01 * base * noise, "track_roof_gap": 20 * base,
            "track_error": 1e-7 * base}[name]


def write_results(root: Path, commits: int = 3, machines: tuple[str, ...] = MACHINES, busy: float = 0.0) -> list[str]:
    """asv results (format 2) under `root`: one file per machine and commit, `busy` the share of
    every speedup's rounds timed on a busy machine; the commit hashes."""
    suites = _suites()
    baselines = {next(p for p in points if p.partition("/")[0] == analysis)
                 for points in suites.values() for analysis in {p.partition("/")[0] for p in points}}
    meta: dict[str, object] = {"version": 2}
    series: dict[str, list[str]] = {}
    for suite, points in suites.items():
        for name, unit in {**SPEEDUPS, **PER_STRATEGY}.items():
            full = f"speedups.{suite}.{name}"
            series[full] = points
            meta[full] = {"name": full, "type": "track", "unit": unit, "param_names": ["point"],
                          "params": [[repr(p) for p in points]], "version": "1"}
    for full, params in KERNELS.items():
        meta[full] = {"name": full, "type": "time", "unit": "seconds", "param_names": ["a", "b"], "params": params,
                      "version": "1"}
    (root).mkdir(parents=True, exist_ok=True)
    (root / "benchmarks.json").write_text(json.dumps(meta))
    hashes = [f"{i:02x}" + "c0ffee" * 6 + "00" for i in range(commits)]
    for m, machine in enumerate(machines):
        (root / machine).mkdir(exist_ok=True)
        (root / machine / "machine.json").write_text(json.dumps({"machine": machine, "version": 1}))
        for i, commit in enumerate(hashes):
            results: dict[str, list[object]] = {}
            for full, points in series.items():
                name = full.rsplit(".", 1)[1]
                values = [1.0 if p in baselines and name in ("track_time_ratio", "track_interval")
                          else _value(name, p, m, i, commits, busy) for p in points]
                results[full] = [values, [[repr(p) for p in points]], "1", 0, 1.0] + [None] * 6
            for full, params in KERNELS.items():
                n = len(params[0]) * len(params[1])
                values = [0.01 * (k + 1) * (1 + 0.02 * math.sin(i + k)) for k in range(n)]
                results[full] = [values, params, "1", 0, 1.0, values, values, values, values, [1] * n, [5] * n]
            (root / machine / f"{commit[:8]}-existing-py.json").write_text(json.dumps({
                "commit_hash": commit, "env_name": "existing-py", "date": 1_700_000_000_000 + 86_400_000 * i,
                "params": {"machine": machine}, "python": "3.11", "requirements": {}, "env_vars": {},
                "result_columns": COLUMNS, "results": results, "durations": {}, "version": 2}))
    return hashes


def render(root: Path, out: Path) -> float:
    """Seconds to read the results and write the page, as `harness history` does."""
    from harness.report.history import load
    from harness.report.history_page import write_history

    began = time.perf_counter()
    write_history(load(root), root, out)
    return time.perf_counter() - began


class HistoryPage:
    """The page over 3 commits x 2 machines."""

    timeout = 120
    number = 1
    repeat = 3

    def setup(self) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="harness-history-")
        self.root = Path(self.folder.name) / "asv"
        write_results(self.root)

    def teardown(self) -> None:
        self.folder.cleanup()

    def time_render(self) -> None:
        render(self.root, Path(self.folder.name) / "history.html")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.history_page")
    parser.add_argument("--commits", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="harness-history-") as tmp:
        root = Path(tmp) / "asv"
        write_results(root, args.commits)
        times = [render(root, Path(tmp) / "history.html") for _ in range(args.repeats)]
        size = (Path(tmp) / "history.html").stat().st_size
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    print(f"harness history, {args.commits} commits x {len(MACHINES)} machines: median {statistics.median(times):.2f} s "
          f"of {args.repeats} ({', '.join(f'{t:.2f}' for t in times)}), page {size / 1e6:.2f} MB; "
          f"load average {' '.join(load)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
