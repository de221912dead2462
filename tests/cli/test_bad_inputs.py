"""Bad inputs a hostile user tried (issue 15): each ends in one line naming the file, folder or key
and what was expected, exit 2, no traceback, and nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")
SPEC = """
[experiment]
name = "{name}"

[data]
source = "synthetic"

[[analysis]]
op = "{op}"
"""


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def one_line(stderr: str) -> str:
    """The single line stderr holds; fails on a traceback or anything more."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def spec(folder: Path, name: str = "t", op: str = "svdvals") -> Path:
    path = folder / "spec.toml"
    path.write_text(SPEC.format(name=name, op=op))
    return path


def garbage(folder: Path) -> Path:
    path = folder / "garbage.toml"
    path.write_bytes(bytes(range(256)) * 4)  # 0x80.. are not UTF-8
    return path


def test_run_on_binary_garbage(tmp_path: Path) -> None:
    path = garbage(tmp_path)
    proc = harness("run", str(path), cwd=tmp_path)
    assert proc.returncode == 2
    line = one_line(proc.stderr)
    assert line.startswith(f"{path}: not UTF-8 text") and "expected a spec file" in line
    assert tree(tmp_path) == {"garbage.toml"}


def test_run_on_a_folder_as_the_spec(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    proc = harness("run", "specs", cwd=tmp_path)
    assert proc.returncode == 2
    assert one_line(proc.stderr) == "specs: is a folder; expected a spec file (TOML)"
    assert tree(tmp_path) == {"specs"}


@pytest.mark.parametrize("which", ["garbage", "folder"])
def test_cache_ls_on_a_bad_spec(tmp_path: Path, which: str) -> None:
    if which == "garbage":
        target, expected = str(garbage(tmp_path)), "not UTF-8 text"
    else:
        (tmp_path / "specs").mkdir()
        target, expected = "specs", "is a folder; expected a spec file"
    before = tree(tmp_path)
    proc = harness("cache", "ls", target, cwd=tmp_path)
    assert proc.returncode == 2
    line = one_line(proc.stderr)
    assert line.startswith(f"{target}: ") and expected in line
    assert tree(tmp_path) == before


def test_output_is_an_existing_file(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("mine")
    proc = harness("run", SMOKE, "-o", "out", cwd=tmp_path)
    assert proc.returncode == 2
    assert one_line(proc.stderr) == "out: is a file; expected a new or empty run folder"
    assert tree(tmp_path) == {"out"} and (tmp_path / "out").read_text() == "mine"


def test_output_under_an_existing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").write_text("mine")
    assert main(["run", SMOKE, "-o", "out/run"]) == 2
    line = one_line(capsys.readouterr().err)
    assert line == "out: is a file; expected a new or empty run folder to hold out/run"
    assert tree(tmp_path) == {"out"}


@pytest.mark.parametrize("name", ["..", ".", "a/b", "a\\\\b", "", ".hidden", "tab\\there", "x" * 129])
def test_experiment_name_must_be_one_safe_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    monkeypatch.chdir(tmp_path)
    path = spec(tmp_path, name=name)
    assert main(["run", str(path)]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"{path}: experiment.name: ") and "is not a safe folder name" in line
    assert "letters, digits, _ . -" in line
    assert tree(tmp_path) == {"spec.toml"}  # no results/, nothing beside it


def test_experiment_name_set_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    path = spec(tmp_path)
    assert main(["run", str(path), "--set", 'experiment.name=".."']) == 2
    assert "experiment.name: '..' is not a safe folder name" in one_line(capsys.readouterr().err)
    assert tree(tmp_path) == {"spec.toml"}


@pytest.mark.parametrize("action", ["ls", "verify", "clear"])
def test_cache_on_a_missing_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["cache", action, "--dir", "does-not-exist"]) == 2
    captured = capsys.readouterr()
    assert one_line(captured.err) == "does-not-exist: no cache folder here"
    assert "check out" not in captured.out and "removed" not in captured.out
    assert tree(tmp_path) == set()


def test_cache_on_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "store").write_text("")
    assert main(["cache", "verify", "--dir", "store"]) == 2
    assert one_line(capsys.readouterr().err) == "store: is a file, not a cache folder"


def test_an_unknown_op_names_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, op="svdvalz")
    assert main(["validate", str(path)]) == 2
    assert one_line(capsys.readouterr().err) == (
        f"{path}: analysis[0].op: unknown value 'svdvalz'; expected one of 'svdvals', 'svd', 'svd_topk', 'pca'"
    )
    assert tree(tmp_path) == {"spec.toml"}


@pytest.mark.parametrize("command", ["validate", "plan", "run"])
def test_an_unknown_key_from_set_names_the_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """`--set nonsense.key=1` was said as `configs/smoke.toml: nonsense: unknown key`; the file has no such key."""
    monkeypatch.chdir(tmp_path)
    assert main([command, SMOKE, "--set", "nonsense.key=1"]) == 2
    assert one_line(capsys.readouterr().err) == "--set 'nonsense.key=1': nonsense: unknown key"
    assert tree(tmp_path) == set()


@pytest.mark.parametrize("command", ["run", "plan", "validate"])
def test_a_bad_budget_is_named_as_the_flag_typed(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 21: `harness run SPEC --budget 5x` read `--set 'benchmark.budget="5x"': benchmark.budget: '5x'
    is not a duration ...`, an override the user never typed; one typed as --set stays as typed."""
    argv = [command, SMOKE, "--budget", "5x"] if command != "validate" else [command, SMOKE, "--set", 'benchmark.budget="5x"']
    assert main(argv) == 2
    said = one_line(capsys.readouterr().err)
    expected = "--budget 5x: " if command != "validate" else """--set 'benchmark.budget="5x"': benchmark.budget: """
    assert said == f"""{expected}'5x' is not a duration; expected e.g. "20s", "500ms", "2m\"""", said
