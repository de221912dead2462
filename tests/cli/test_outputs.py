"""Outputs never overwrite inputs, and an output name the file system cannot hold is one line
(issue 43): `report RUN --format json -o RUN/record.json` exited 0 and left the run unreadable;
`report` on a run still being written left a report of its half-done record; names over 255
bytes or past PATH_MAX were tracebacks; a SIGKILLed run could not resume into its own folder."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.base.atomic import exclusive_folder
from harness.cli.main import main
from harness.record.run_record import RECORD, RunRecord, load_record
from tests.cli.test_bad_inputs import one_line
from tests.cli.test_cache_cli import write_spec
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")  # a spec that loads: the output folder is what is wrong
LONG_NAME = "a" * 300
DEEP = "/".join(["b" * 200] * 25) + "/x.html"


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def runs(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> Path:
    """A copy of the smoke run as `run`, another as `other`, and a record under another name."""
    for name in ("run", "other"):
        shutil.copytree(smoke_run[0], tmp_path / name)
    shutil.copy(smoke_run[0] / RECORD, tmp_path / "kept.json")
    return tmp_path


Target = Callable[[Path], list[str]]
# (case, the command line given the folder holding the runs, what the one line says)
REFUSED: list[tuple[str, Target, str]] = [
    ("the record it reads", lambda t: ["report", f"{t}/run", "--format", "json", "-o", f"{t}/run/{RECORD}"],
     "the record.json of run folder"),
    ("the record given as RUN", lambda t: ["report", f"{t}/run/{RECORD}", "--format", "md", "-o",
                                           f"{t}/run/../run/{RECORD}"], "a file this command reads"),
    ("its spectra", lambda t: ["report", f"{t}/run", "-o", f"{t}/run/spectra.npz"], "the spectra.npz of run folder"),
    ("its timings", lambda t: ["report", f"{t}/run", "--format", "md", "-o", f"{t}/run/timings.csv"],
     "the timings.csv of run folder"),
    ("another run's record", lambda t: ["report", f"{t}/run", "--format", "json", "-o", f"{t}/other/{RECORD}"],
     "the record.json of run folder"),
    ("a record under another name", lambda t: ["report", f"{t}/run", "--format", "json", "-o", f"{t}/kept.json"],
     "a run record"),
    ("the run folder", lambda t: ["report", f"{t}/run", "-o", f"{t}/run"], "is a folder"),
    ("compare's page onto a record", lambda t: ["compare", f"{t}/run", f"{t}/other", "--html", f"{t}/other/{RECORD}"],
     "the record.json of run folder"),
    ("a name over 255 bytes", lambda t: ["report", f"{t}/run", "--format", "md", "-o", f"{t}/{LONG_NAME}"],
     "is 300 bytes, more than the 255"),
    ("a path past PATH_MAX", lambda t: ["report", f"{t}/run", "-o", f"{t}/{DEEP}"], "past the longest path"),
    ("compare's page, a long name", lambda t: ["compare", f"{t}/run", f"{t}/other", "--html", f"{t}/{LONG_NAME}"],
     "more than the 255"),
    ("history's page, a long name", lambda t: ["history", "--results", f"{t}/asv", "-o", f"{t}/{LONG_NAME}"],
     "more than the 255"),
    ("a run folder, a long name", lambda t: ["run", SMOKE, "-o", f"{t}/{LONG_NAME}/run"],
     "more than the 255"),
    ("a run folder past PATH_MAX", lambda t: ["run", SMOKE, "-o", f"{t}/{DEEP}"],
     "past the longest path"),
]


@pytest.mark.parametrize("case, command, said", REFUSED, ids=[c[0] for c in REFUSED])
def test_an_output_that_would_replace_an_input_or_cannot_be_named_is_one_line(
        runs: Path, capsys: pytest.CaptureFixture[str], case: str, command: Target, said: str) -> None:
    before = digests(runs)
    capsys.readouterr()
    assert main(command(runs)) == 2, case
    assert said in one_line(capsys.readouterr().err)
    assert digests(runs) == before


def test_a_report_of_a_run_still_being_written_is_refused(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = digests(runs)
    capsys.readouterr()
    with exclusive_folder(runs / "run"):  # as the run writing into it holds it
        for extra in (["--format", "md"], []):
            assert main(["report", str(runs / "run"), *extra]) == 2
            assert "a run is still writing into this folder" in one_line(capsys.readouterr().err)
    assert digests(runs) == before
    assert main(["report", str(runs / "run"), "--format", "md", "-o", str(runs / "run" / "speedups.md")]) == 0


def _stopped(folder: Path) -> None:
    """The folder as a run stopped outright leaves it: a record not marked complete."""
    raw = json.loads((folder / RECORD).read_text())
    (folder / RECORD).write_text(json.dumps(raw | {"complete": False, "analyses": []}))


# (case, what is done to a stopped run's folder, extra arguments, what the one line says; None: resumed)
RESUMES: list[tuple[str, Callable[[Path], object], list[str], str | None]] = [
    ("a stopped run of the same spec", _stopped, [], None),
    ("its leftover temporary file", lambda f: (_stopped(f), (f / ".record.json.x1.tmp").write_text("{")), [], None),
    ("a finished run", lambda f: None, [], "output folder exists and is not empty"),
    ("a stopped run of another spec", _stopped, ["--set=experiment.seed=12"], "a stopped run of another spec"),
    ("a stopped run beside a file of the user's", lambda f: (_stopped(f), (f / "notes.txt").write_text("mine")), [],
     "output folder exists and is not empty"),
]


def test_a_stopped_run_resumes_into_its_own_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path, tmp_path / "cache")
    argv = ["run", str(spec), "--set=data.adapters=2"]
    assert main([*argv, "-o", str(tmp_path / "first")]) == 0
    for case, damage, extra, said in RESUMES:
        folder = tmp_path / case.replace(" ", "-")
        shutil.copytree(tmp_path / "first", folder)
        damage(folder)
        capsys.readouterr()
        code = main([*argv, *extra, "-o", str(folder)])
        err = capsys.readouterr().err
        if said is None:
            assert code == 0 and f"resuming into {folder}: a run of this spec stopped there" in err, case
            assert load_record(folder).complete and not list(folder.glob(".*.tmp")), case
        else:
            last = err.strip().splitlines()[-1]
            assert code == 2 and said in last and "Traceback" not in err, case
            assert "--force" in last or said != "output folder exists and is not empty", (case, last)  # it holds a run


def test_a_taken_folder_does_not_hide_a_wrong_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`run SPEC --set data.adapters=two -o TAKEN` said only that the folder was taken; the
    wrong value showed on the next try."""
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    assert main(["run", SMOKE, "--set", "data.adapters=two", "-o", str(tmp_path / "taken")]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert any("data.adapters: 'two'" in line for line in said), said
    assert any("output folder exists and is not empty" in line for line in said), said
    # it holds no run: --force is not offered (walk 25: offered, then refused as the folder holds no record)
    assert not any("--force" in line for line in said), said
    assert (tmp_path / "taken" / "notes.txt").read_text() == "mine" and len(list((tmp_path / "taken").iterdir())) == 1
