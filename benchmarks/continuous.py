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

BASE and HEAD must be two commits; when HEAD is the checked-out commit, `harness/` must have no
uncommitted changes (they would not be timed). asv runs in a session of its own, and everything in
it (asv's forkserver and benchmarks, each in a process group of its own, and the `harness run`s
they start) is ended when asv returns, and on Ctrl-C or SIGTERM, which also remove the temporary
folder and answer in one line.

Exit codes: 0 no regression, and every point judged no change (or an improvement); 1 a regression
(a speedup fell by more than x1.1, at a significance that keeps identical code's chance of failing
under 5% over all points); 4 inconclusive: no regression seen, but a point could not be judged
(its runs too far apart to rule out a x1.5 change, as on a busy machine, or a run did not time it);
2 it could not run (a commit that is not one, BASE and HEAD one commit, uncommitted changes to
`harness/`, asv missing or failing); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks import load_average
from harness.cli.exit_codes import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_USER_ERROR,
)

if TYPE_CHECKING:  # imported when judging: asv imports this module with the commit's harness, maybe older
    from harness.report.regressions import Judged, Side

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results" / "asv"  # asv.conf.json's results_dir
RUNS = 3  # of each commit, interleaved: the spread of three and three runs, t with 4 degrees of freedom
BENCH = r"^speedups\.MainJob\."  # the main job; `--bench '^speedups\.'` adds the dense case
ASV = [sys.executable, "-m", "asv"]
PROG = "harness gate"  # what the user ran, which starts this engine: its errors' prefix
GRACE = 5.0  # seconds asv's processes have to end after SIGTERM, before SIGKILL


class CannotRun(Exception):
    """A commit, a tool or a run that failed: the gate judged nothing."""


def git(*args: str, binary: bool = False) -> str | bytes:
    proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=not binary)
    if proc.returncode != 0:
        err = proc.stderr if not binary else proc.stderr.decode(errors="replace")
        raise CannotRun(f"git {' '.join(args)}: {err.strip().splitlines()[-1] if err.strip() else 'failed'}")
    return proc.stdout


def commit(ref: str) -> str:
    """`ref`'s hash; a ref that names no commit is said in the user's words, not git's command."""
    try:
        return str(git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")).strip()
    except CannotRun:
        raise CannotRun(f"no commit {ref!r} in this repository (a branch, tag or hash that `git log` lists)") from None


def uncommitted(folder: str) -> str | None:
    """The files under `folder` that differ from the checked-out commit (untracked ones too), named
    in a few words; None when there are none."""
    changed = [line[3:] for line in str(git("status", "--porcelain", "--untracked-files=all", "--", folder)).splitlines()]
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    return ", ".join(changed[:3]) + more if changed else None


def commits(base_ref: str, head_ref: str) -> tuple[str, str]:
    """BASE's and HEAD's hashes: two commits, HEAD's `harness/` as committed where it is the
    checked-out one (the gate times commits: `git archive` leaves uncommitted changes out)."""
    base, head = commit(base_ref), commit(head_ref)
    if base == head:
        named = (f"BASE and HEAD are both {base_ref}" if base_ref == head_ref
                 else f"{base_ref} and {head_ref} are the same commit")
        raise CannotRun(f"{named} ({base[:12]}): nothing to compare; compare with an earlier commit, "
                        f"e.g. {PROG} HEAD~1 HEAD")
    if head == commit("HEAD") and (changed := uncommitted("harness")):
        raise CannotRun(f"harness/ has uncommitted changes ({changed}), which the gate would not time: it times "
                        f"commits; commit them (or stash them to time {head[:8]} as it is), then run it again")
    if changed := uncommitted("benchmarks"):
        print(f"note: benchmarks/ has uncommitted changes ({changed}): both commits are timed with this "
              "checkout's suites, these changes included", flush=True)
    return base, head


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


def session_of(sid: int) -> set[int]:
    """The live processes of session `sid`: asv's, where asv puts its forkserver and each
    benchmark in a process group of its own, and they start `harness run`; off Linux (no /proc),
    asv alone, whose group is then signalled."""
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        pids = [sid]
    found = set()
    for pid in pids:
        try:
            if os.getsid(pid) == sid:
                found.add(pid)
        except OSError:  # gone since listed
            continue
    return found


def _signal_groups(pids: set[int], signum: int) -> None:
    """`signum` to the process group of each of `pids`, once each."""
    groups = set()
    for pid in pids:
        try:
            groups.add(os.getpgid(pid))
        except OSError:  # gone since listed
            continue
    for group in groups:
        try:
            os.killpg(group, signum)
        except OSError:
            continue


def end_session(proc: subprocess.Popen[str]) -> None:
    """Every process of asv's session ended: SIGTERM to each of its groups, SIGKILL to what is
    left after GRACE seconds; Ctrl-C and SIGTERM wait until it is done (they are held meanwhile)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        _signal_groups(session_of(proc.pid), signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        while True:
            proc.poll()  # asv reaped once it has ended, so that it leaves the listing
            left = session_of(proc.pid)
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        _signal_groups(left, signal.SIGKILL)
        proc.wait()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def asv(*args: str, env: dict[str, str] | None = None) -> None:
    """`asv args` in a session of its own, ended with everything it started (end_session) when it
    returns, fails or this process is interrupted."""
    with subprocess.Popen([*ASV, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, start_new_session=True) as proc:
        try:
            output = proc.communicate()[0]
        finally:
            end_session(proc)
    if proc.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-80:])
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


def timed(machine: str, sha: str, skipped: list[str], bench: str = BENCH) -> dict[str, Side]:
    """Point -> the speedup asv recorded for `sha` on `machine` (its latest run) by a benchmark
    `bench` selects (as asv's --bench does: re.search on its name), so that what an earlier `asv
    run` left of other suites under the commit is not judged; what asv's results hold that is not
    usable goes to `skipped`."""
    from harness.report.history import load
    from harness.report.regressions import sides

    chosen = [s for s in load(RESULTS, skipped) if re.search(bench, s.benchmark)]
    return {point: by_commit[sha] for (line, point), by_commit in sides(chosen).items()
            if line.split(" (")[0] == machine and sha in by_commit}


def gate(args: argparse.Namespace) -> int:
    phases: list[tuple[str, float]] = []
    start = time.monotonic()
    from harness.report.gate import judge_runs
    from harness.report.history import HistoryError, skipped_line

    try:
        base, head = commits(args.base, args.head)  # refused before a line says anything was started
        print(f"load average at the start {load_average()}", flush=True)
        machine = args.machine or machine_name()
        asv("machine", "--yes", "--machine", machine)
        runs: dict[str, tuple[list[Side], list[Side]]] = {}
        skipped: list[str] = []
        with tempfile.TemporaryDirectory(prefix="harness-continuous-") as tmp:
            trees = {sha: unpack(sha, Path(tmp)) for sha in {base, head}}
            phases.append(("setup", time.monotonic() - start))
            for n, (side, sha) in enumerate([("base", base), ("head", head)] * RUNS):
                began = time.monotonic()
                measure_commit(sha, trees[sha], machine, args.bench)
                for point, found in timed(machine, sha, skipped, args.bench).items():
                    runs.setdefault(point, ([], []))[side == "head"].append(found)
                phases.append((f"{side} {sha[:8]} run {n // 2 + 1}", time.monotonic() - began))
                print(f"{phases[-1][0]}: {phases[-1][1]:.0f} s, load average {load_average()}", flush=True)
        judged = judge_runs(machine, runs, base, head)
    except (CannotRun, HistoryError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    if skipped:  # every run reads every file again
        print(skipped_line(list(dict.fromkeys(skipped))), file=sys.stderr)
    report(judged, base, head, machine, phases)
    code = verdict_code(judged)
    if args.json:
        args.json.write_text(json.dumps({"base": base, "head": head, "machine": machine, "exit": code,
                                         "load_average": load_average(),
                                         "seconds": dict(phases), "points": [j.model_dump() for j in judged]}, indent=1))
    return code


def main(argv: list[str] | None = None) -> int:
    """The gate, answering Ctrl-C and SIGTERM in one line once asv's processes have ended and the
    temporary folder is removed (both unwind it as exceptions)."""
    from harness.cli.exit_codes import (  # here: see TYPE_CHECKING above
        exit_code,
        stopped,
        terminate,
    )

    args = arguments().parse_args(argv)
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        return gate(args)
    except KeyboardInterrupt as exc:
        print(f"{PROG}: {stopped(exc)}; asv's processes ended, the temporary folder removed", file=sys.stderr)
        return exit_code(exc)
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
