"""The command that times a compared run anew into its own folder, as a next step says it: the run's
own command from its record (its spec and --set overrides, so the spec hash stays and the runs still
compare), less the flags the step sets again (walk 22 read the template `harness run SPEC -o FOLDER
--force --fresh --budget 30s` where both runs' specs and folders were known)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Protocol

from harness.record.folders import RECORD

VALUED = ("-o", "--output")  # flags the step sets anew, each with its value
BUDGET = ("--budget",)
BUDGET_SET = "--set=benchmark.budget="  # how a record's command writes --budget


def rerun(folder: str, command: str, spec_path: str, flags: tuple[str, ...]) -> str:
    """`harness run configs/smoke.toml -o runs/second --force --fresh --budget 30s`: the recorded command with
    `-o folder --force` and `flags`; a recorded budget leaves only where `flags` set one. `harness run SPEC`
    stands for the spec only where the record holds neither its command nor its spec's path."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    if words[:2] != ["harness", "run"] or len(words) < 3:
        words = ["harness", "run", spec_path or "SPEC"]
    budget = "--budget" in flags
    dropped = VALUED + (BUDGET if budget else ())
    named = ("--force", *(f for f in flags if f.startswith("-")))
    kept: list[str] = []
    words_left = iter(words)
    for word in words_left:
        if word in dropped:
            next(words_left, None)  # its value
        elif not (word in named or word.startswith(tuple(f"{d}=" for d in dropped))
                  or (budget and word.startswith(BUDGET_SET))):
            kept.append(word)
    where = str(Path(folder).parent) if Path(folder).name == RECORD else folder
    return shlex.join([*kept, "-o", where, "--force", *flags])


class Ran(Protocol):
    """A compared run as its summary holds it (compare.RunSummary)."""

    folder: str
    command: str
    spec_path: str


def rerun_step(run: Ran, *flags: str) -> str:
    """`` `harness run configs/smoke.toml -o runs/second --force --fresh` ``: the command that times `run` anew
    into its folder, with --fresh and `flags`, in backticks (a page draws it as code, whole)."""
    return f"`{rerun(run.folder, run.command, run.spec_path, ('--fresh', *flags))}`"
