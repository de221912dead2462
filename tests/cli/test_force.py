"""`--force` replaces a run of this harness, its files alone, and nothing else (issue 50): `-o .
--force` deleted the spec, notes, an earlier run and the cache beside a run's record; `-o ~
--force` deleted ~/.bashrc and ~/.ssh; another tool's record.json was enough to empty a folder."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.record.run_record import RECORD, RunRecord, load_record
from tests.cli.test_bad_inputs import one_line
from tests.cli.test_outputs import digests
from tests.conftest import CONFIGS

SMALL = ["--set", "data.layers=1", "--budget", "0s", "--no-cache"]


def user_files(folder: Path) -> None:
    """What a person keeps beside a run: a spec, notes, an earlier run, photos."""
    (folder / "projects").mkdir(parents=True)
    (folder / "projects" / "thesis.tex").write_text("keep me")
    (folder / "NOTES.md").write_text("my notes")
    shutil.copy(CONFIGS / "smoke.toml", folder / "spec.toml")


def a_run_in(smoke: Path, folder: Path) -> None:
    """An earlier run of this harness written into `folder` (-o FOLDER), beside what is there."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in smoke.iterdir():
        shutil.copy(path, folder / path.name)


# (case, what the test makes of its folder -> (the run's argv, the folder that must stay as it was),
#  what the one line says)
Setup = Callable[[Path, Path, pytest.MonkeyPatch], tuple[list[str], Path]]


def _cwd(t: Path, smoke: Path, mp: pytest.MonkeyPatch) -> tuple[list[str], Path]:
    user_files(t)
    a_run_in(smoke, t)  # an earlier `-o .`
    a_run_in(smoke, t / "runs" / "old")
    (t / ".harness-cache").mkdir()
    (t / ".harness-cache" / "entry").write_text("cached")
    mp.chdir(t)
    return ["run", "spec.toml", "-o", "."], t


def _link_to_cwd(t: Path, smoke: Path, mp: pytest.MonkeyPatch) -> tuple[list[str], Path]:
    argv, kept = _cwd(t / "work", smoke, mp)
    (t / "link").symlink_to(t / "work")
    return argv[:-1] + [str(t / "link")], kept


def _home(t: Path, smoke: Path, mp: pytest.MonkeyPatch) -> tuple[list[str], Path]:
    home = t / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("secret")
    (home / ".bashrc").write_text("export PATH")
    user_files(home)
    a_run_in(smoke, home)
    mp.setenv("HOME", str(home))
    mp.chdir(t)
    return ["run", str(CONFIGS / "smoke.toml"), "-o", str(home)], home  # the shell expands `~`


def _another_tools_record(t: Path, smoke: Path, mp: pytest.MonkeyPatch) -> tuple[list[str], Path]:
    album = t / "album"
    (album / "photos").mkdir(parents=True)
    (album / "photos" / "1.jpg").write_bytes(b"\xff\xd8")
    (album / "notes.txt").write_text("mine")
    (album / RECORD).write_text(json.dumps({"tool": "camera", "shots": 2}))
    return ["run", str(CONFIGS / "smoke.toml"), "-o", str(album)], album


def _a_record_of_another_producer(t: Path, smoke: Path, mp: pytest.MonkeyPatch) -> tuple[list[str], Path]:
    """A record this harness could read, marked as another tool's: not ours to replace."""
    a_run_in(smoke, t / "theirs")
    raw = json.loads((t / "theirs" / RECORD).read_text())
    (t / "theirs" / RECORD).write_text(json.dumps(raw | {"producer": "another-harness"}))
    (t / "theirs" / "notes.txt").write_text("mine")
    return ["run", str(CONFIGS / "smoke.toml"), "-o", str(t / "theirs")], t / "theirs"


def _above_the_spec(t: Path, smoke: Path, mp: pytest.MonkeyPatch) -> tuple[list[str], Path]:
    project = t / "project"
    (project / "configs").mkdir(parents=True)
    shutil.copy(CONFIGS / "smoke.toml", project / "configs" / "spec.toml")
    a_run_in(smoke, project)
    return ["run", str(project / "configs" / "spec.toml"), "-o", str(project)], project


def _the_cache(t: Path, smoke: Path, mp: pytest.MonkeyPatch) -> tuple[list[str], Path]:
    shutil.copy(CONFIGS / "smoke.toml", t / "spec.toml")
    a_run_in(smoke, t / "cache")
    (t / "cache" / "entry").write_text("cached")
    return ["run", str(t / "spec.toml"), "--set", "execution.cache_dir='cache'", "-o", str(t / "cache")], t


def _the_wisdom(t: Path, smoke: Path, mp: pytest.MonkeyPatch) -> tuple[list[str], Path]:
    a_run_in(smoke, t / "wisdom")
    (t / "wisdom" / "machine.json").write_text("{}")
    mp.setenv("HARNESS_WISDOM", str(t / "wisdom"))
    return ["run", str(CONFIGS / "smoke.toml"), "-o", str(t / "wisdom")], t


REFUSED: list[tuple[str, Setup, str]] = [
    ("-o . beside the spec, notes, a run and the cache", _cwd, "is the current folder"),
    ("a link to the current folder", _link_to_cwd, "is the current folder"),
    ("-o ~", _home, "is the home folder"),
    ("another tool's record.json", _another_tools_record, f"holds no {RECORD} of one"),
    ("a record of another producer", _a_record_of_another_producer, f"holds no {RECORD} of one"),
    ("a folder above the spec", _above_the_spec, "holds the spec"),
    ("the result cache", _the_cache, "is the result cache"),
    ("the wisdom folder", _the_wisdom, "is the wisdom folder"),
]


@pytest.mark.parametrize("case, setup, said", REFUSED, ids=[c[0] for c in REFUSED])
def test_force_replaces_nothing_but_a_run(smoke_run: tuple[Path, RunRecord], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                          case: str, setup: Setup, said: str) -> None:
    argv, kept = setup(tmp_path, smoke_run[0], monkeypatch)
    before = digests(kept)
    capsys.readouterr()
    assert main([*argv, "--force", *SMALL]) == 2, case
    line = one_line(capsys.readouterr().err)
    assert said in line and "choose another with -o" in line, line
    assert digests(kept) == before, case


def test_force_replaces_an_earlier_runs_files_and_keeps_the_users(smoke_run: tuple[Path, RunRecord],
                                                                   tmp_path: Path) -> None:
    """A record from before the producer marker is still this harness's run; the notes beside it stay."""
    folder = tmp_path / "run"
    a_run_in(smoke_run[0], folder)
    raw = json.loads((folder / RECORD).read_text())
    raw.pop("producer", None)
    (folder / RECORD).write_text(json.dumps(raw))
    (folder / "NOTES.md").write_text("what I saw")
    (folder / ".spectra.npz.a1b2c3d4.tmp").write_bytes(b"half")  # a killed write's leftover
    assert "report.html" in {p.name for p in folder.iterdir()}
    assert main(["run", str(CONFIGS / "smoke.toml"), "-o", str(folder), "--force", *SMALL]) == 0
    assert (folder / "NOTES.md").read_text() == "what I saw"
    record = load_record(folder)
    assert record.started != smoke_run[1].started and record.producer == "spectral-harness"
    assert not (folder / "report.html").exists() and not list(folder.glob(".*.tmp"))  # the earlier run's, gone


def test_the_recorded_command_runs_again_as_shown_into_a_fresh_folder() -> None:
    """The report's "Reproduce" command had `-o runs/first` without `--force`: pasted, it was refused
    (the folder holds the run), and with --force it would have replaced the run it reproduces."""
    import shlex

    from harness.run.session import RunOptions, command_line

    options = RunOptions(output=Path("runs/first"), force=True, fresh=True)
    words = shlex.split(command_line("configs/smoke.toml", ["data.adapters=2", 'benchmark.budget="30s"'], options))
    assert words == ["harness", "run", "configs/smoke.toml", "--set=data.adapters=2", '--set=benchmark.budget="30s"',
                     "--fresh"]


def test_ctrl_c_names_the_command_that_resumes_a_forced_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A newcomer's walk-through: Ctrl-C of `run SPEC -o runs/c3 --force` said "the same command again
    resumes it", and the same command started the run over (--force replaces the run in the folder).
    The line names the command that does resume (no --force), and that command resumes; a run
    without -o is resumed only with the -o of its folder."""
    import shlex

    from harness.run.runner import Runner
    from tests.cli.test_cache_cli import write_spec

    def ctrl_c(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    spec, folder = write_spec(tmp_path, tmp_path / "cache"), tmp_path / "runs" / "c3"
    forced = ["run", str(spec), "--set=data.adapters=2", "-o", str(folder), "--force"]
    monkeypatch.setattr(Runner, "_step", ctrl_c)
    said = []
    for _ in range(2):  # stopped, then the same forced command: it starts over and is stopped again
        capsys.readouterr()
        assert main(forced) == 130
        err = capsys.readouterr().err
        said.append(next(line for line in err.splitlines() if line.startswith("interrupted: ")))
    assert "resuming into" not in err and said[0] == said[1]
    command = said[0].split("`")[1]
    assert shlex.split(command) == ["harness", "run", str(spec), "-o", str(folder), "--set=data.adapters=2"]
    assert said[0].startswith(f"interrupted: {folder} holds a record marked incomplete after 0 of 1 analysis; "
                              f"`{command}` resumes it (with --force it starts over): ")
    monkeypatch.chdir(tmp_path)
    assert main(forced[:3]) == 130  # no -o: a fresh folder under results/, which only its -o resumes
    line = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("interrupted: "))
    stopped, fresh = line.split()[1], shlex.split(line.split("`")[1])
    assert fresh[3:5] == ["-o", stopped] and "(without -o a run starts in a fresh folder)" in line
    monkeypatch.undo()
    assert main(shlex.split(command)[1:]) == 0
    assert f"resuming into {folder}: a run of this spec stopped there" in capsys.readouterr().err
    assert load_record(folder).complete
