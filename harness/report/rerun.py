"""The commands that time compared runs anew, each into a new folder beside its own, and the compare of
the two new runs, as a next step says them: each run's own command from its record (its spec and --set
overrides, so the spec hash stays and the runs still compare), less the flags the step sets again (walk
22 read the template `harness run SPEC -o FOLDER --force --fresh --budget 30s`). Never into the compared
run's folder with --force: walk 24 pasted the step and it would have replaced both recorded runs."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Protocol

from harness.record.folders import RECORD

VALUED = ("-o", "--output")  # flags the step sets anew, each with its value
BUDGET = ("--budget",)
BUDGET_SET = "--set=benchmark.budget="  # how a record's command writes --budget
DROPPED = ("--force",)  # the step writes a new folder: nothing to replace


def rerun(folder: str, command: str, spec_path: str, flags: tuple[str, ...]) -> str:
    """`harness run configs/smoke.toml -o runs/second-30s --fresh --budget 30s`: the recorded command with `-o` its
    new folder (new_folder) and `flags`; a recorded budget leaves only where `flags` set one. `harness run SPEC`
    stands for the spec only where the record holds neither its command nor its spec's path."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    if words[:2] != ["harness", "run"] or len(words) < 3:
        words = ["harness", "run", spec_path or "SPEC"]
    budget = "--budget" in flags
    dropped = VALUED + (BUDGET if budget else ())
    named = (*DROPPED, *(f for f in flags if f.startswith("-")))
    kept: list[str] = []
    words_left = iter(words)
    for word in words_left:
        if word in dropped:
            next(words_left, None)  # its value
        elif not (word in named or word.startswith(tuple(f"{d}=" for d in dropped))
                  or (budget and word.startswith(BUDGET_SET))):
            kept.append(word)
    return shlex.join([*kept, "-o", new_folder(folder, flags), *flags])


def run_folder(folder: str) -> str:
    """The run's folder as given to compare: a record's path stands for its folder."""
    return str(Path(folder).parent) if Path(folder).name == RECORD else folder


def new_folder(folder: str, flags: tuple[str, ...]) -> str:
    """`runs/second-30s` beside `runs/second`, named from it and the budget the step gives (`-anew` without one)."""
    budget = next((flags[i + 1] for i, f in enumerate(flags[:-1]) if f == "--budget"), "anew")
    return f"{run_folder(folder).rstrip('/')}-{budget}"


class Ran(Protocol):
    """A compared run as its summary holds it (compare.RunSummary)."""

    folder: str
    command: str
    spec_path: str
    harness_version: str


def rerun_step(run: Ran, *flags: str, other: Ran | None = None) -> str:
    """`` `harness run configs/smoke.toml -o runs/second-30s --fresh` ``: the command that times `run` anew into a
    new folder, with --fresh and `flags`, in backticks (a page draws it as code, whole); where `other` (the
    other compared run) ran another harness version, with `(at its version X)`: re-running both from this
    checkout would compare one code with itself. A record holds its harness version, not its git commit."""
    at = (f" (at its harness {run.harness_version}, {other.harness_version} the other's)"
          if other is not None and run.harness_version != other.harness_version else "")
    return f"`{rerun(run.folder, run.command, run.spec_path, ('--fresh', *flags))}`{at}"


def compare_step(a: Ran, b: Ran, flags: tuple[str, ...], anew: str = "AB") -> str:
    """`` `harness compare runs/a-30s runs/b-30s` ``: the compare of the runs the steps make (`anew`: which)."""
    folders = [new_folder(r.folder, ("--fresh", *flags)) if side in anew else run_folder(r.folder)
               for side, r in (("A", a), ("B", b))]
    return f"`{shlex.join(['harness', 'compare', *folders])}`"
