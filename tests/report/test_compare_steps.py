"""What `harness compare` tells a user to do next, from walk 22: a sweep's folder given for a run names
two of its points to compare, a missing folder says it is missing, the next step is the command to
type (each run's own spec, overrides and folder), and the page never breaks a command inside a flag."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.record.run_record import RECORD, RunRecord, save_record

from .test_compare import synthetic
from .test_run_screen import RECORDS, real

# main_job's own command (its spec and --set overrides) less its `-o runs/main1`: the next step a compare of it gives
MAIN_RUN = "harness run configs/task_geometry.toml --set=data.adapters=4 '--set=analysis[2].components=3'"


def _sweep(folder: Path, points: list[str]) -> Path:
    """A sweep's folder as `harness run` of a sweep spec leaves it: sweep.json and one run folder per point."""
    folder.mkdir(parents=True)
    (folder / "sweep.json").write_text("{}")
    for point in points:
        (folder / point).mkdir()
        shutil.copy(RECORDS / "first_smoke.json", folder / point / RECORD)
    return folder


def test_two_sweeps_folders_name_two_points_to_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`harness compare SWEEP_A SWEEP_B` read "no record.json here; is this a run folder from `harness run`?"."""
    a = _sweep(tmp_path / "sweep_rank" / "first", ["rank-256", "rank-64"])
    b = _sweep(tmp_path / "sweep_rank" / "second", ["rank-256", "rank-64"])
    assert cli.main(["compare", str(a), str(b)]) == 2
    said = capsys.readouterr().err.strip()
    assert said == (f"{a}: a sweep's folder; compare two of its points, e.g. harness compare {a / 'rank-256'} "
                    f"{b / 'rank-256'}"), said
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(RECORDS / "first_smoke.json", run / RECORD)
    assert cli.main(["compare", str(run), str(b)]) == 2  # a run against a sweep: the run as given, a real point
    assert capsys.readouterr().err.strip() == (f"{b}: a sweep's folder; compare two of its points, e.g. harness "
                                               f"compare {run} {b / 'rank-256'}")


def test_a_missing_folder_says_it_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "runs" / "nonexist"
    for command in (["compare", str(missing), str(tmp_path)], ["report", str(missing)],
                    ["report", str(missing), "--format", "csv"]):
        assert cli.main(command) == 2
        said = capsys.readouterr().err.strip()
        assert said == f"{missing}: does not exist; expected a run folder from `harness run`", said
    sweep = _sweep(tmp_path / "sweep", ["rank-8"])
    (sweep / "sweep.json").unlink()  # a folder of neither: as before
    assert cli.main(["report", str(sweep), "--format", "csv"]) == 2
    assert "no record.json here" in capsys.readouterr().err


def _few(record: RunRecord, seed: int, folder: Path) -> str:
    """A run folder of `record` with 1 round a group: too few for a test."""
    folder.mkdir(parents=True)
    save_record(synthetic(record, seed=seed, n=1), folder)
    return str(folder)


def test_the_next_step_is_each_runs_own_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`harness run SPEC -o FOLDER --force --fresh --budget 30s` where both runs' specs and folders were known;
    the page draws each command's words whole (Chromium broke `--force` at its dashes at 1280 px)."""
    record = real("main_job", tmp_path)  # recorded with --set overrides and -o runs/main1
    a, b = _few(record, 1, tmp_path / "runs" / "first"), _few(record, 2, tmp_path / "runs" / "second")
    page = tmp_path / "compare.html"
    assert cli.main(["compare", a, b, "--html", str(page)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    commands = [f"{MAIN_RUN} -o {f} --force --fresh --budget 30s" for f in (a, b)]
    assert f"for a verdict give each run more time: `{commands[0]}` and `{commands[1]}`" in out, out
    assert "SPEC" not in out and "FOLDER" not in out
    html = page.read_text()
    code = re.findall(r'<code class="cmd">(.*?)</code>', html)
    drawn = [re.findall(r'<span class="word">([^<]*)</span>', c) for c in code]
    assert [" ".join(words) for words in drawn if "--force" in words] == [c.replace("'", "&#39;") for c in commands]
    assert all(" " not in word for words in drawn for word in words)
    assert "code.cmd .word { white-space: nowrap; }" in html  # each word whole: a break only between them
