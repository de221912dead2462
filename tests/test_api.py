"""harness.api for notebooks: run a spec through the engine with overrides, quietly or not, open a
run folder, tidy rows, a repr of one screen, and errors that name the key."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from rich.text import Text

from harness import api
from harness.api import runs
from harness.record.run_record import RECORD, RunRecord
from harness.report.labels import verdict_lines
from harness.report.terminal import run_screen
from tests.conftest import CONFIGS
from tests.report.test_run_screen import RECORDS


def test_run_with_overrides_and_open_it_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = api.run(CONFIGS / "smoke.toml", tmp_path / "run", quiet=True, data__layers=1,
                   **{"analysis[0].strategy": "numpy"})
    assert capsys.readouterr() == ("", "")  # quiet: nothing at all, progress included
    assert done.record.plan.n_matrices == 6 and done.record.analyses[0].strategy == "numpy"
    assert done.record.command.startswith(f"harness run {CONFIGS / 'smoke.toml'} --set=data.layers=1")
    again = api.open_run(tmp_path / "run")
    assert again.record == done.record
    rows = again.rows
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert {r["analysis"] for r in rows} == {a.name for a in done.record.analyses}
    assert all({"strategy", "device", "library", "speedup", "passed"} <= set(r) for r in rows)
    assert len(again.samples) >= len(rows)
    shown = repr(again)
    assert len(shown.splitlines()) <= 20 and len(shown) < 2000, shown  # one screen, not the record's 45,000 characters
    assert " ".join(shown.split()).startswith(f"Run('{tmp_path / 'run'}': smoke, 6 matrices, 4 analyses, passed)")


def test_a_run_that_is_not_quiet_prints_the_verdicts_and_the_table(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    api.run(CONFIGS / "smoke.toml", tmp_path / "run", data__layers=1, budget="0s")
    shown = capsys.readouterr()
    assert "speedup (95% CI)" in shown.out and "faster than" in shown.out or "not significantly" in shown.out
    assert "loading the spec" in shown.err  # the progress, on stderr
    assert shown.out.splitlines()[-1] == f"results: {tmp_path / 'run'}"  # where it wrote, as the CLI ends
    with pytest.raises(api.FolderProblem, match="output folder exists"):  # not the spec's problem
        api.run(CONFIGS / "smoke.toml", tmp_path / "run", quiet=True, data__layers=1)
    again = api.run(CONFIGS / "smoke.toml", tmp_path / "run", quiet=True, force=True, data__layers=1)
    assert (again.folder / RECORD).is_file() and again.record.complete


def test_the_api_calls_the_engine_not_the_cli() -> None:
    code = ("import sys, harness.api; cli = [m for m in sys.modules if m.startswith('harness.cli')]; "
            "assert not cli, cli")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-1000:]


def test_a_bad_override_raises_with_its_key_and_one_line(tmp_path: Path) -> None:
    with pytest.raises(api.SpecProblem) as raised:
        api.run(CONFIGS / "smoke.toml", tmp_path / "run", quiet=True, data__adapters=0)
    problem = raised.value
    assert isinstance(problem, ValueError) and problem.key == "data.adapters"
    assert "\n" not in str(problem) and problem.message == "should be >= 1, got 0"
    assert str(problem) == "data__adapters=0: data.adapters: should be >= 1, got 0"  # walk 21: it named the spec file
    assert not (tmp_path / "run").exists()
    with pytest.raises(api.SpecProblem) as raised:
        api.run(CONFIGS / "smoke.toml", tmp_path / "run", quiet=True, budget="5x")
    assert str(raised.value).startswith("budget='5x': benchmark.budget: '5x' is not a duration")
    with pytest.raises(api.SpecProblem) as raised:  # what the plan refuses carries its key too
        api.run(CONFIGS / "smoke.toml", tmp_path / "run", quiet=True, **{"analysis[2].k": 100})
    assert raised.value.key == "analysis[2].k" and "100 exceeds min(m, n)" in raised.value.message  # k's fault


def test_a_misspelt_keyword_is_offered_the_keyword_to_type(tmp_path: Path) -> None:
    """Walk 22: `data__adaptrs=2` got `did you mean 'adapters'?`, the spec's form; the keyword to type is
    `data__adapters` (a dotted keyword, its dotted key). --set's own line keeps the spec's form."""
    with pytest.raises(api.SpecProblem) as raised:
        api.run(CONFIGS / "smoke.toml", tmp_path / "run", quiet=True, data__adaptrs=2)
    assert str(raised.value) == "data__adaptrs=2: data.adaptrs: unknown key; did you mean data__adapters?"
    assert raised.value.message == "unknown key; did you mean data__adapters?"
    assert raised.value.problems == ["--set 'data.adaptrs=2': data.adaptrs: unknown key; did you mean 'adapters'?"]
    with pytest.raises(api.SpecProblem) as raised:
        api.run(CONFIGS / "smoke.toml", tmp_path / "run", quiet=True, **{"data.adaptrs": 2})
    assert raised.value.message == "unknown key; did you mean data.adapters?"


def test_reprs_wrap_between_words_and_samples_say_which_are_pooled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain REPL at 100 columns (issue 48, API 2 and 3): the reprs were cut mid-word ("spe" /
    "edups"), and `.samples` held earlier runs' rows without a word."""
    monkeypatch.setenv("COLUMNS", "100")
    record = RunRecord.model_validate_json((RECORDS / "main_job.json").read_text())
    group = record.analyses[0].timings[0].groups[0]
    group.pooled = len(group.measurement.samples_s) - 1  # all but its last sample from earlier runs
    run = api.Run(Path("results/task_geometry/20261125T093901-9fb154b2410c"), record)
    everything = [r for r in run.samples]
    here = run.samples_here
    assert len(everything) - len(here) == group.pooled and not any(r["pooled"] for r in here)
    samples = repr(run.samples)
    assert samples.startswith(f"{len(everything)} rows ({len(here)} this run's, {group.pooled} pooled from earlier "
                              "runs: .samples_here has this run's alone) x ")
    for shown, texts in ((repr(run), verdict_lines(record)), (samples, [", ".join(everything[0])]),
                         (repr(run.rows), [", ".join(run.rows[0])])):
        lines = shown.splitlines()
        assert all(len(line) <= 100 for line in lines), shown
        words = " ".join(" ".join(lines).split())
        assert all(" ".join(text.split()) in words for text in texts), shown  # every word whole, in order
        # a continuation hangs under its line, never at column 0
        assert all(line.startswith("  ") for line in lines[1:]), shown


def test_the_repr_says_when_its_verdicts_stand_on_unstable_measurements(monkeypatch: pytest.MonkeyPatch) -> None:
    """Walk 15: every measurement of a busy run was `!`, and the repr, one screen, said nothing of it."""
    monkeypatch.setenv("COLUMNS", "160")
    record = RunRecord.model_validate_json((RECORDS / "busy_run.json").read_text())
    flagged = sum(g.measurement.unstable for a in record.analyses for t in a.timings for g in t.groups)
    assert flagged > 0
    shown = " ".join(repr(api.Run(Path("runs/busy"), record)).split())
    assert f"{flagged} of " in shown and "unstable (!): read the verdicts with care; `harness report runs/busy` says why" in shown
    for a in record.analyses:
        for t in a.timings:
            for g in t.groups:
                g.measurement.unstable = False
    assert "unstable" not in repr(api.Run(Path("runs/busy"), record))


def test_a_bad_input_file_raises_the_apis_data_error(tmp_path: Path) -> None:
    """It came through as `harness.data.workload.DataError`, the engine's module (walk-through 7,
    API 2): now the API's own, which `except DataError` of the engine's class still catches."""
    from harness.data.workload import DataError

    np.save(tmp_path / "bad.npy", np.zeros((4, 3), np.int64))
    (tmp_path / "spec.toml").write_text('[experiment]\nname = "bad"\n[data]\nsource = "arrays"\npaths = ["bad.npy"]\n'
                                        '[[analysis]]\nop = "svdvals"\ncompare = ["numpy"]\n')
    with pytest.raises(api.DataError) as bad:
        api.run(tmp_path / "spec.toml", output=tmp_path / "out", quiet=True)
    assert type(bad.value).__module__ == "harness.api.errors" and isinstance(bad.value, DataError)
    assert str(bad.value) == f"{tmp_path / 'bad.npy'}: array 'bad' has dtype int64; expected a float dtype"


def test_its_errors_are_its_own_and_speak_its_words(tmp_path: Path) -> None:
    """`except api.DataError` failed (not exported); open_run's RecordError came through the
    record's internals, and printed as `harness.record.run_record.RecordError` where the others print
    as `harness.api.errors.…` (walk-through 7, API 2); a folder clash quoted `-o` and `--force`, the
    command line's flags."""
    import traceback

    from harness.data.workload import DataError
    from harness.record.run_record import RecordError

    assert issubclass(api.DataError, DataError) and issubclass(api.RecordError, RecordError)  # old catches hold
    assert {e.__module__ for e in (api.DataError, api.RecordError, api.SpecProblem)} == {"harness.api.errors"}
    with pytest.raises(api.RecordError) as missing:
        api.open_run(tmp_path / "nothing-o")
    assert type(missing.value).__module__ == "harness.api.errors" and isinstance(missing.value, RecordError)
    assert str(missing.value) == f"{tmp_path / 'nothing-o'}: does not exist; expected a run folder from `harness run`"
    assert traceback.extract_tb(missing.tb)[-1].name == "open_run"
    # walk 22: the line a user's traceback shows is the raise alone, no comment of ours beside it
    assert traceback.extract_tb(missing.tb)[-1].line == "raise RecordError(str(exc)) from None"
    taken = tmp_path / "taken-o"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    with pytest.raises(api.FolderProblem) as clash:
        api.run(CONFIGS / "smoke.toml", output=taken, quiet=True)
    said = str(clash.value)
    # no run in it: no force=True to offer (walk 25: offered, then refused)
    assert said.startswith(f"{taken}: output folder exists and is not empty; choose another with output= or leave "
                           "output out") and "force" not in said
    assert " -o" not in said and "--force" not in said and (taken / "notes.txt").read_text() == "mine"


def test_a_run_shown_in_a_repl_hangs_its_continuations_as_the_cli_does() -> None:
    """Walk-through 8 (API 1): `api.run` without quiet wrapped its lines at column 0 in a 100-column
    REPL ("... 0 of 2" / "speedups resolved") where `harness run` hangs them two spaces in."""
    record = RunRecord.model_validate_json((RECORDS / "main_job.json").read_text())
    repl = Console(file=io.StringIO(), width=100, force_terminal=True, color_system=None)
    runs.show(record, Path("runs/nb"), repl)
    drawn = repl.file.getvalue().splitlines()  # type: ignore[attr-defined]
    texts = [Text.from_markup(item).plain for item in run_screen(record) if isinstance(item, str)]
    spans = [_lines_of(drawn, text) for text in texts]
    assert max(spans) > 1 and all(len(line) <= 100 for line in drawn)  # some line wrapped, none past the width
    assert drawn[-1] == "results: runs/nb"


def _lines_of(drawn: list[str], text: str) -> int:
    """How many drawn lines `text` took, each after its first hung two spaces in."""
    start = next(i for i, line in enumerate(drawn) if line and text.startswith(line))
    got, end = drawn[start], start + 1
    while " ".join(got.split()) != " ".join(text.split()):
        assert end < len(drawn) and drawn[end].startswith("  "), (text[:60], drawn[start:end + 1])
        got, end = f"{got} {drawn[end].strip()}", end + 1
    return end - start


UNGUARDED = """from harness import api
run = api.run({spec!r}, output={out!r}, quiet=True, budget="0s", data__layers=1)
rows = run.rows
print("ran:", sorted({{r["timing"] for r in (rows.to_dict("records") if hasattr(rows, "to_dict") else rows)}}))
"""


@pytest.mark.parametrize("how", ["script", "module"])
def test_a_script_without_a_main_guard_runs_once_and_times(how: str, tmp_path: Path) -> None:
    """Walk 19 pasted the README's example into a script: each timing worker ran the script again and
    failed on the folder its parent was writing, and the run timed nothing. Workers are told of no
    main module now, so the script runs once (as a file and as `python -m package.module`)."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "job.py").write_text(UNGUARDED.format(spec=str(CONFIGS / "smoke.toml"), out=str(tmp_path / "run")))
    how_args = [str(package / "job.py")] if how == "script" else ["-m", "pkg.job"]
    done = subprocess.run([sys.executable, *how_args], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "HOME": str(tmp_path / "home")})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    ran = done.stdout.splitlines()
    assert len(ran) == 1 and "'timed'" in ran[0], done.stdout  # once, and it timed (a busy machine may leave some not timed)


def test_a_run_of_one_analysis_is_counted_in_the_singular(tmp_path: Path) -> None:
    """Walk 23: `1/1 (1 analyses)` in a sweep point's progress; the run's repr counted its analyses the same way."""
    from tests.report.test_run_screen import real

    record = real("main_job", tmp_path)
    record.analyses = record.analyses[:1]
    shown = " ".join(repr(runs.Run(tmp_path / "main_job", record)).split())
    assert ", 1 analysis, " in shown and "analyses" not in shown.split(")")[0], shown
