"""The harness from Python, for notebooks: `run(spec, **overrides)` runs a spec as `harness run`
does, `open_run(folder)` opens a run folder; both give the RunRecord and its results as tidy rows
(a pandas DataFrame when pandas is installed, else a list of dicts: pandas is not a dependency).

Above the CLI in the stages (it drives `harness run` itself, so a notebook's run is recorded,
cached and verified exactly as a terminal's is)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cli.commands.run import default_folder
from harness.cli.main import main
from harness.record.exports import timing_rows
from harness.record.run_record import RunRecord, load_record
from harness.report.exports import result_rows
from harness.spec import load_spec


class RunFailed(RuntimeError):
    """`harness run` ended with a non-zero exit code (its lines on stderr say why)."""


def _table(rows: list[dict[str, Any]]) -> Any:
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)


@dataclass(frozen=True)
class Run:
    """A run folder opened: its record, one row per analysis x strategy (`rows`: the results
    table), and one per timed sample (`samples`: timings.csv's rows)."""

    folder: Path
    record: RunRecord

    @property
    def rows(self) -> Any:
        return _table(result_rows(self.record))

    @property
    def samples(self) -> Any:
        return _table(list(timing_rows(self.record)))


def open_run(folder: str | Path) -> Run:
    """The run in `folder` (RecordError when it holds no readable record)."""
    return Run(Path(folder), load_record(Path(folder)))


def override(key: str, value: Any) -> str:
    """`--set` of one keyword: `data__adapters=4` or `**{"analysis[2].components": 3}`; the value
    as TOML (JSON's strings, numbers, booleans and lists are TOML too)."""
    return f"{key.replace('__', '.')}={json.dumps(value)}"


def run(spec: str | Path, output: str | Path | None = None, *, report: bool = False, **overrides: Any) -> Run:
    """Run `spec` with `overrides` into `output` (default results/<experiment>/<time>-<hash>)."""
    sets = [override(key, value) for key, value in overrides.items()]
    folder = Path(output) if output is not None else default_folder(load_spec(spec, sets))
    code = main(["run", str(spec), *(f"--set={s}" for s in sets), "-o", str(folder)] + ["--report"] * report)
    if code != 0:
        raise RunFailed(f"harness run {spec} exited {code}")
    return open_run(folder)
