"""Running a spec and opening a run folder from Python: `run(spec, **overrides)` through the same
engine as `harness run` (harness.run.session: recorded, cached and verified alike), `open_run(folder)`;
both give a Run, its record and its results as tidy rows."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.api.errors import DataError, FolderProblem, RecordError, SpecProblem, our_words
from harness.api.rows import columns, table
from harness.base.lines import print_shown, wrapped
from harness.base.progress import Display
from harness.base.units import plural
from harness.plan.model import PlanError
from harness.record.exports import timing_rows
from harness.data import workload
from harness.record import run_record
from harness.record.run_record import RunRecord, load_record
from harness.report.exports import result_rows
from harness.report.labels import verdict_lines
from harness.report.terminal import run_screen, unstable_head
from harness.report.unstable import unstable_measurements
from harness.run.session import RunOptions, check_run_folder, command_line, places, prepare_session
from harness.specs.reading import SpecError


@dataclass(frozen=True, repr=False)
class Run:
    """A run folder opened: its record, one row per analysis x strategy (`rows`: the results
    table), and one per timed round (`samples`: timings.csv's rows, those pooled from earlier runs
    included, `pooled` True; `samples_here`: this run's alone)."""

    folder: Path
    record: RunRecord

    @property
    def rows(self) -> Any:
        return table(result_rows(self.record))

    @property
    def samples(self) -> Any:
        rows = list(timing_rows(self.record))
        pooled = sum(bool(r["pooled"]) for r in rows)
        return table(rows, f" ({len(rows) - pooled} this run's, {pooled} pooled from earlier runs: "
                            ".samples_here has this run's alone)" if pooled else "")

    @property
    def samples_here(self) -> Any:
        """The samples this run measured (`samples` less those pooled from earlier runs)."""
        return table([r for r in timing_rows(self.record) if not r["pooled"]])

    def __repr__(self) -> str:
        """One screen: where, what, and the verdicts; the rest is in .rows, .samples, .record;
        wrapped between words at the REPL's width."""
        r = self.record
        state = ("passed" if r.passed else "verification FAILED") + ("" if r.complete else ", interrupted")
        unstable = unstable_measurements(r)  # the screen's caveat on the verdicts (walk 15: none said)
        caveat = [f"  {unstable_head(r, unstable)}: read the verdicts with care; "
                  f"`harness report {self.folder}` says why"] if unstable else []
        lines = [f"Run({str(self.folder)!r}: {r.experiment}, {r.plan.n_matrices} matrices, "
                 f"{plural(len(r.analyses), 'analysis', 'analyses')}, {state})", *(f"  {line}" for line in verdict_lines(r)), *caveat,
                 f"  .rows: {len(result_rows(r))} results, .samples: timed samples (.samples_here: this run's "
                 "alone), .record: the RunRecord"]
        return wrapped("\n".join(lines), columns())


def open_run(folder: str | Path) -> Run:
    """The run in `folder`; RecordError, one line, when it holds no readable record."""
    try:
        return Run(Path(folder), load_record(Path(folder)))
    except run_record.RecordError as exc:
        # its traceback ends here, not in the record's internals; this comment not on the raise, which a
        # user's traceback shows (walk 22 read the comment there)
        raise RecordError(str(exc)) from None


def override(key: str, value: Any) -> str:
    """`--set` of one keyword: `data__adapters=4` or `**{"analysis[2].components": 3}`; the value
    as TOML (JSON's strings, numbers, booleans and lists are TOML too)."""
    return f"{key.replace('__', '.')}={json.dumps(value)}"


def run(spec: str | Path, output: str | Path | None = None, *, quiet: bool = False, report: bool = False,
        budget: str | None = None, force: bool = False, fresh: bool = False, no_cache: bool = False,
        **overrides: Any) -> Run:
    """Run `spec` with `overrides` into `output` (default: a fresh results/<experiment>/<time>-<hash>;
    `force` replaces an earlier run's files there, as `harness run --force`). Prints the progress on stderr, then the verdicts, the
    results table and the warnings, as `harness run` does; `quiet`, nothing."""
    given = {override(key, value): f"{key}={value!r}" for key, value in overrides.items()}  # as the problem says it
    sets = list(given)
    if budget is not None:
        sets.append(f"benchmark.budget={json.dumps(budget)}")
        given[sets[-1]] = f"budget={budget!r}"
    options = RunOptions(output=Path(output) if output is not None else None, force=force, no_cache=no_cache,
                         fresh=fresh)
    console = Console(file=io.StringIO()) if quiet else Console(stderr=True)
    try:
        if options.output is not None:  # as prepare_session checks it first, but said in the API's words
            check_run_folder(options.output, force, places(spec))
    except PlanError as exc:
        raise FolderProblem(our_words(exc.lines[0])) from None
    try:
        with Display(console, live=False if quiet else None) as display:
            session = prepare_session(spec, sets, options, display, command_line(spec, sets, options, report))
            record = session.run()
    except (SpecError, PlanError) as exc:
        raise SpecProblem(spec, exc.lines, {repr(set_): name for set_, name in given.items()}) from None
    except workload.DataError as exc:
        raise DataError(str(exc)) from None
    except run_record.RecordError as exc:  # the folder to resume holds a record this harness cannot read
        raise RecordError(str(exc)) from None
    if report:
        from harness.report.html import write_report  # matplotlib: only when a report is asked for

        write_report(session.folder)
    if not quiet:
        show(record, session.folder, Console())
    return Run(session.folder, record)


def show(record: RunRecord, folder: Path, console: Console) -> None:
    """What `harness run` prints on stdout, through its line printer: in a REPL each line wrapped
    between words and its continuations hung under it, as the CLI's are."""
    for item in run_screen(record):
        print_shown(console, item)
    console.print(f"results: {folder}", markup=False, highlight=False, soft_wrap=True)  # as the CLI ends
