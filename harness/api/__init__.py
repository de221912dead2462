"""The harness from Python, for notebooks: the top layer, beside the CLI (it drives run.session, as
the CLI does); it imports any stage below it, never the CLI, and nothing of harness imports it.
`run(spec, **overrides)` runs a spec through the same engine as `harness run`, `open_run(folder)`
opens a run folder; both give a Run, its record and its results as tidy rows (`runs`, `rows`).

A spec or an override the harness refuses raises SpecProblem, whose `key` names the spec key
(`data.adapters`); an output folder it refuses, FolderProblem; a bad input file, DataError; a folder
without a readable run, RecordError: each a ValueError of one line (`errors`)."""

from harness.api.errors import DataError, FolderProblem, RecordError, SpecProblem
from harness.api.runs import Run, open_run, run

__all__ = ["DataError", "FolderProblem", "RecordError", "Run", "SpecProblem", "open_run", "run"]
