"""Are pooled intervals honest across runs? Six `--fresh --no-cache` runs of a spec (the main job by
default), each followed by a default run that pools the fresh runs so far (and its own rounds, if
it still wants any); the pooled interval after fresh run k should cover fresh run k+1's own
estimate. Prints, per speedup and k, the pooled interval, the next run's estimate and whether it
was covered, the coverage over all (speedup, k) pairs, and after how many runs each speedup
resolved. The pool is a folder of its own (HARNESS_WISDOM), empty at the start.

    python -m benchmarks.field_check [SPEC] [--runs 6] [--budget 4s] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import load_average

ROOT = Path(__file__).resolve().parent.parent
MAIN_JOB = ROOT / "configs" / "task_geometry.toml"


def run(spec: Path, folder: Path, wisdom: Path, budget: str, fresh: bool) -> dict[str, dict[str, Any]]:
    """One `harness run`; its speedups by "analysis/strategy"."""
    from harness.record.run_record import load_record

    command = [sys.executable, "-m", "harness", "run", str(spec), "-o", str(folder), "--budget", budget]
    command += ["--fresh", "--no-cache"] if fresh else []
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "HARNESS_WISDOM": str(wisdom)})
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    record = load_record(folder)
    return {f"{a.name}/{t.label}": {"speedup": t.speedup, "ci": t.speedup_ci, "runs": t.runs, "rounds": t.rounds,
                                   "resolved": not t.unresolved}
            for a in record.analyses for t in a.timings if t.role != "baseline" and t.speedup is not None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", type=Path, default=MAIN_JOB)
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--budget", default="4s")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    fresh: list[dict[str, dict[str, Any]]] = []
    pooled: list[dict[str, dict[str, Any]]] = []
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        wisdom = Path(tmp) / "wisdom"
        for k in range(args.runs):
            loads.append(load_average(1))
            fresh.append(run(args.spec, Path(tmp) / f"fresh{k}", wisdom, args.budget, fresh=True))
            pooled.append(run(args.spec, Path(tmp) / f"pooled{k}", wisdom, args.budget, fresh=False))
            print(f"run {k + 1}: load {loads[-1]}", flush=True)
    pairs, covered, lines = 0, 0, []
    for k in range(args.runs - 1):
        for name, p in pooled[k].items():
            nxt = fresh[k + 1].get(name)
            if nxt is None or p["ci"] is None:
                continue
            hit = p["ci"][0] <= nxt["speedup"] <= p["ci"][1]
            pairs, covered = pairs + 1, covered + hit
            lines.append(f"after run {k + 1}: {name} pooled {p['speedup']:.4g} ({p['ci'][0]:.4g}-{p['ci'][1]:.4g}) "
                         f"over {p['runs']} runs; run {k + 2} measured {nxt['speedup']:.4g}: "
                         f"{'covered' if hit else 'OUTSIDE'}")
    print("\n".join(lines))
    print(f"\ncoverage: {covered} of {pairs} (speedup, k) pairs = {100 * covered / max(pairs, 1):.0f}% "
          f"(target >= 90%); load averages {', '.join(loads)}")
    for name in pooled[-1]:
        first = next((k + 1 for k, p in enumerate(pooled) if p.get(name, {}).get("resolved")), None)
        print(f"{name}: resolved after {first} fresh runs" if first else f"{name}: not resolved in {args.runs} runs")
    if args.json:
        args.json.write_text(json.dumps({"fresh": fresh, "pooled": pooled, "loads": loads}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
