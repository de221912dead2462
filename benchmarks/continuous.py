"""A regression gate over asv that a 2-core CI can afford: BASE's and HEAD's code timed in this
environment by the speedups suite (benchmarks/speedups.py), three runs each, interleaved (BASE,
HEAD, BASE, HEAD, ...), the results recorded by asv under each commit, and every tracked speedup
judged with the run as the unit (harness.report.gate: runs of one commit tell how far apart runs
fall right now, which no single run's interval can):

    python -m benchmarks.continuous [BASE] [HEAD] [--machine M] [--bench REGEX]

`asv continuous` builds a virtualenv per commit (torch and numba installed into each: minutes) and
times every suite on a machine whose load moves raw times by 2x. This times the speedups only
(paired rounds: load slows both sides of a ratio), with each commit's `harness/` unpacked by `git
archive` into a temporary folder and put first on the path (PYTHONPATH) of `asv run --python=same
--set-commit-hash`. The suites and specs are this checkout's for both commits, as
in `asv continuous`; a commit that changes dependencies still needs `asv continuous`.

Exit codes: 0 no regression, and every point judged no change (or an improvement); 1 a regression
(a speedup fell by more than x1.1, at a significance that keeps identical code's chance of failing
under 5% over all points); 4 inconclusive: no regression seen, but a point could not be judged
(its runs too far apart to rule out a x1.5 change, as on a busy machine, or a run did not time it);
2 it could not run (a commit that is not one, asv missing or failing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks import load_average
from harness.cli.exit_codes import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, EXIT_USER_ERROR

if TYPE_CHECKING:  # imported when judging: asv imports this module with the commit's harness, maybe older
    from harness.report.regressions import Judged, Side

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results" / "asv"  # asv.conf.json's results_dir
RUNS = 3  # of each commit, interleaved: the spread of three and three runs, t with 4 degrees of freedom
BENCH = r"^speedups\.MainJob\."  # the main job; `--bench '^speedups\.'` adds the dense case


class CannotRun(Exception):
    """A commit, a tool or a run that failed: the gate judged nothing."""


def git(*args: str, binary: bool = False) -> str | bytes:
    proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=not binary)
    if proc.returncode != 0:
        err = proc.stderr if not binary else proc.stderr.decode(errors="replace")
        raise CannotRun(f"git {' '.join(args)}: {err.strip().splitlines()[-1] if err.strip() else 'failed'}")
    return proc.stdout


def commit(ref: str) -> str:
    return str(git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")).strip()


def unpack(sha: str, into: Path) -> Path:
    """The commit's `harness/` package, alone, in a folder of its own: what PYTHONPATH puts first."""
    folder = into / sha[:12]
    folder.mkdir()
    archive = folder / "harness.tar"
    archive.write_bytes(git("archive", "--format=tar", sha, "harness", binary=True))  # type: ignore[arg-type]
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    archive.unlink()
    return folder


def asv(*args: str, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run([sys.executable, "-m", "asv", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-80:])
        raise CannotRun(f"asv {' '.join(args)} exited {proc.returncode}:\n{tail}")


def machine_name() -> str:
    from harness.machine.info import probe
    from harness.run.asv_cases import machine_name as name

    return name(probe())


def measure_commit(sha: str, tree: Path, machine: str, bench: str = BENCH) -> None:
    """The speedups suite with `sha`'s harness first on the path, recorded by asv under `sha`:
    `--python=same` hands this environment to the benchmarks as it is, PYTHONPATH included (asv's
    ASV_PYTHONPATH is read only in the environments it builds)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    asv("run", "--python=same", "--machine", machine, "--set-commit-hash", sha, "--bench", bench,
        "--show-stderr", env=env)


def verdict_code(judged: list[Judged]) -> int:
    verdicts = {j.verdict for j in judged}
    if "regression" in verdicts:
        return EXIT_REGRESSION
    return EXIT_INCONCLUSIVE if not judged or "inconclusive" in verdicts else EXIT_OK


def report(judged: list[Judged], base: str, head: str, machine: str, phases: list[tuple[str, float]]) -> None:
    counts = Counter(j.verdict for j in judged)
    for j in sorted(judged, key=lambda j: ("regression", "improvement", "inconclusive", "no change").index(j.verdict)):
        print(j.describe())
    print(f"{base[:8]} -> {head[:8]} on {machine}: " + (", ".join(f"{n} {v}" for v, n in counts.most_common())
                                                          or "no tracked speedup at either commit"))
    print("time: " + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in phases)
          + f", total {sum(s for _n, s in phases):.0f} s; load average {load_average()}")


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.continuous", description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", default="main", help="the commit compared against (default main)")
    parser.add_argument("head", nargs="?", default="HEAD", help="the commit judged (default HEAD)")
    parser.add_argument("--machine", help="asv machine name (default: `harness asv-machine`'s)")
    parser.add_argument("--json", type=Path, help="also write every point's verdict and runs here (a CI artifact)")
    parser.add_argument("--bench", default=BENCH, help=f"asv's --bench: the suites timed (default {BENCH}, the "
                        "main job; '^speedups\\.' adds the dense case, a minute more)")
    return parser


def timed(machine: str, sha: str) -> dict[str, Side]:
    """Point -> the speedup asv recorded for `sha` on `machine` (its latest run)."""
    from harness.report.history import load
    from harness.report.regressions import sides

    return {point: by_commit[sha] for (line, point), by_commit in sides(load(RESULTS)).items()
            if line.split(" (")[0] == machine and sha in by_commit}


def main(argv: list[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    phases: list[tuple[str, float]] = []
    start = time.monotonic()
    print(f"load average at the start {load_average()}", flush=True)
    from harness.report.gate import judge_runs
    from harness.report.history import HistoryError

    try:
        base, head = commit(args.base), commit(args.head)
        machine = args.machine or machine_name()
        asv("machine", "--yes", "--machine", machine)
        runs: dict[str, tuple[list[Side], list[Side]]] = {}
        with tempfile.TemporaryDirectory(prefix="harness-continuous-") as tmp:
            trees = {sha: unpack(sha, Path(tmp)) for sha in {base, head}}
            phases.append(("setup", time.monotonic() - start))
            for n, (side, sha) in enumerate([("base", base), ("head", head)] * RUNS):
                began = time.monotonic()
                measure_commit(sha, trees[sha], machine, args.bench)
                for point, found in timed(machine, sha).items():
                    runs.setdefault(point, ([], []))[side == "head"].append(found)
                phases.append((f"{side} {sha[:8]} run {n // 2 + 1}", time.monotonic() - began))
                print(f"{phases[-1][0]}: {phases[-1][1]:.0f} s, load average {load_average()}", flush=True)
        judged = judge_runs(machine, runs, base, head)
    except (CannotRun, HistoryError) as exc:
        print(f"continuous: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    report(judged, base, head, machine, phases)
    code = verdict_code(judged)
    if args.json:
        args.json.write_text(json.dumps({"base": base, "head": head, "machine": machine, "exit": code,
                                         "load_average": load_average(),
                                         "seconds": dict(phases), "points": [j.model_dump() for j in judged]}, indent=1))
    return code


if __name__ == "__main__":
    sys.exit(main())
