"""What `harness compare` tells a user to do next, from walk 22: a sweep's folder given for a run names
two of its points to compare, a missing folder says it is missing, the next step is the command to
type (each run's own spec, overrides and folder), and the page never breaks a command inside a flag."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.record.run_record import RECORD, RunRecord, save_record

from tests.conftest import CONFIGS

from .test_compare import synthetic
from .test_run_screen import RECORDS, real

# main_job's own command (its spec and --set overrides) less its `-o runs/main1`: the next step a compare of it gives
MAIN_RUN = "harness run configs/task_geometry.toml --set=data.adapters=4 '--set=analysis[2].components=3'"


def _sweep(folder: Path, points: list[str], seed: int = 0) -> Path:
    """A sweep's folder as `harness run` of a sweep spec leaves it: sweep.json and one run folder per point, each a
    run of its own (the seed's), all of one spec."""
    folder.mkdir(parents=True)
    (folder / "sweep.json").write_text("{}")
    record = RunRecord.model_validate_json((RECORDS / "first_smoke.json").read_text())
    for k, point in enumerate(points):
        (folder / point).mkdir()
        save_record(synthetic(record, seed=10 * seed + k), folder / point)
    return folder


def _suggested(said: str) -> list[list[str]]:
    """The commands a line suggests, each as cli.main takes it: `e.g. harness compare ...` and each in backticks."""
    found = re.findall(r"`(harness [^`]*)`", said) or [said.split("e.g. ", 1)[1]]
    return [shlex.split(command)[1:] for command in found]


def test_two_sweeps_folders_name_the_same_point_of_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`harness compare SWEEP_A SWEEP_B` read "no record.json here; is this a run folder from `harness run`?";
    what it says instead is accepted when pasted."""
    a = _sweep(tmp_path / "sweep_rank" / "first", ["rank-256", "rank-64"], seed=1)
    b = _sweep(tmp_path / "sweep_rank" / "second", ["rank-256", "rank-64"], seed=2)
    assert cli.main(["compare", str(a), str(b)]) == 2
    said = capsys.readouterr().err.strip()
    assert said == (f"{a}: a sweep's folder; compare a point of it with the same point of the other sweep, e.g. "
                    f"harness compare {a / 'rank-256'} {b / 'rank-256'}"), said
    [suggested] = _suggested(said)
    assert cli.main(suggested) == 0, capsys.readouterr().err
    capsys.readouterr()
    run = b / "rank-64"  # a run of the sweep's spec: its point of that spec, the run as given, in its place
    assert cli.main(["compare", str(run), str(a)]) == 2
    said = capsys.readouterr().err.strip()
    assert said == f"{a}: a sweep's folder; compare a point of it with the run of its spec, e.g. harness compare " \
                   f"{run} {a / 'rank-256'}", said
    assert cli.main(_suggested(said)[0]) == 0, capsys.readouterr().err


@pytest.mark.slow
def test_a_sweep_against_a_run_of_another_spec_says_how_to_make_a_second(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 24: `compare RUN SWEEP` suggested `compare RUN SWEEP/rank-128`, which exits 2 (another spec), as two
    points of one sweep do; it names the command that makes a second sweep and the compare of a point of the two,
    both accepted when pasted."""
    sweep = tmp_path / "sweep_rank" / "first"
    tiny = ["--set", "data.modules.w=[40, 32]", "--set", "sweep.data.rank=[2, 4]", "--set", "benchmark.warmup=0",
            "--set", "benchmark.budget=0.5"]
    assert cli.main(["run", str(CONFIGS / "sweep_rank.toml"), *tiny, "-o", str(sweep)]) == 0
    assert cli.main(["compare", str(sweep / "rank-2"), str(sweep / "rank-4")]) == 2  # two points: two specs
    assert "compare only runs of the same spec" in capsys.readouterr().err
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(RECORDS / "first_smoke.json", run / RECORD)
    assert cli.main(["compare", str(run), str(sweep)]) == 2
    said = " ".join(capsys.readouterr().err.split())
    second = tmp_path / "sweep_rank" / "first-2"
    assert said.startswith(f"{sweep}: a sweep's folder; {run} is no run of any of its points' specs, and compare "
                           "takes two runs of one spec"), said
    assert said.endswith(f"then `harness compare {sweep / 'rank-4'} {second / 'rank-4'}`"), said
    make, compare = _suggested(said)
    assert make[-2:] == ["-o", str(second)] and "data.modules.w=[40, 32]" in " ".join(make)
    assert cli.main(make) == 0
    capsys.readouterr()
    assert cli.main(compare) == 0, capsys.readouterr().err


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
    # walk 24: `-o runs/first --force` replaced the runs compared; each into a new folder beside its own, then theirs
    commands = [f"{MAIN_RUN} -o {f}-30s --fresh --budget 30s" for f in (a, b)]
    assert (f"for a verdict give each run more time: `{commands[0]}` and `{commands[1]}`, then `harness compare "
            f"{a}-30s {b}-30s`") in out, out
    assert "--force" not in out
    assert "SPEC" not in out and "FOLDER" not in out
    html = page.read_text()
    code = re.findall(r'<code class="cmd">(.*?)</code>', html)
    drawn = [re.findall(r'<span class="word">([^<]*)</span>', c) for c in code]
    assert [" ".join(words) for words in drawn if "--budget" in words] == [c.replace("'", "&#39;") for c in commands]
    assert all(" " not in word for words in drawn for word in words)
    assert "code.cmd .word { white-space: nowrap; }" in html  # each word whole: a break only between them


def test_runs_of_two_harness_versions_are_each_re_run_at_its_own(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 24: re-running both from this checkout compares one code with itself; a record holds its harness
    version (not its git commit), and each step says its own where they differ."""
    record = real("main_job", tmp_path)
    a = _few(record, 1, tmp_path / "runs" / "first")
    b_record = synthetic(record, seed=2, n=1).model_copy(update={"harness_version": "0.0.1"})
    save_record(b_record, tmp_path / "runs" / "second")
    b = str(tmp_path / "runs" / "second")
    assert cli.main(["compare", a, b]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (f"`{MAIN_RUN} -o {a}-30s --fresh --budget 30s` (at its harness {record.harness_version}, 0.0.1 the "
            f"other's) and `{MAIN_RUN} -o {b}-30s --fresh --budget 30s` (at its harness 0.0.1, "
            f"{record.harness_version} the other's)") in out, out
