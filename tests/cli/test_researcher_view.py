"""What a researcher sees at the terminal (issue 33): fast starts, one line per cause, the
footnote behind --explain, data paths checked by validate, lines that a log keeps whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.cli.console import out
from harness.record.run_record import load_record
from tests.conftest import CONFIGS, ROOT

SMOKE = str(CONFIGS / "smoke.toml")


@pytest.mark.parametrize(("argv", "heavy"), [
    (["compare", "--help"], ("harness.run.runner", "harness.plan.compiler")),
    (["--help"], ("harness.run.runner", "harness.plan.compiler")),
    (["validate", SMOKE], ())])  # validate compiles the plan: it refuses what `plan` and `run` would
def test_light_commands_import_none_of_the_engines(argv: list[str], heavy: tuple[str, ...]) -> None:
    """`compare --help` and `validate` took 1.1 s to start, importing every command's engines: now
    a command imports its own module only. Checked by what is imported, not by a stopwatch."""
    probe = ("import sys; from harness.cli.main import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             f"heavy = [m for m in ('scipy.linalg', 'scipy.stats', 'torch', 'matplotlib', 'harness.report.html', {', '.join(map(repr, heavy))}) "
             "if m in sys.modules]\n"
             "print('HEAVY', heavy)")
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "HEAVY []" in done.stdout, done.stdout[-500:] + done.stderr[-2000:]


def test_validate_refuses_paths_that_match_nothing_as_plan_does(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('[experiment]\nname = "x"\n[data]\nsource = "kohya"\npaths = ["loras/*.safetensors"]\n'
                    '[[analysis]]\nop = "svdvals"\n')
    for command in ("validate", "plan"):
        assert cli.main([command, str(spec)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"{spec}: data.paths: 'loras/*.safetensors' matches nothing (relative to {tmp_path})"]


def test_the_readme_small_run_override_notation_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The error names `analysis[2].components`; the same words work as an override."""
    spec = str(CONFIGS / "task_geometry.toml")
    assert cli.main(["plan", spec, "--set", "data.adapters=4"]) == 2
    assert "analysis[2].components" in capsys.readouterr().err
    assert cli.main(["plan", spec, "--set", "data.adapters=4", "--set", "analysis[2].components=3"]) == 0


def test_run_lines_group_warnings_and_keep_the_footnote_for_explain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.bench import measure

    monkeypatch.setattr(measure, "judge", lambda samples, conditions, earlier=(), per=1: ["load 18.4 on 2 cores"])
    monkeypatch.setattr(out, "width", 40)  # a narrow terminal: a line is still one line
    assert cli.main(["run", SMOKE, "-o", str(tmp_path / "a"), "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    unstable = [line for line in lines if "load 18.4 on 2 cores" in line]
    record = load_record(tmp_path / "a")
    count = record.bench.unstable  # type: ignore[union-attr]
    measured = sum(len(t.groups) for a in record.analyses for t in a.timings)
    assert count > 1 and len(unstable) == 1  # one line for the cause, the record's count in it
    assert unstable[0].startswith(f"{count} of {measured} measurements (a strategy on one shape group) unstable (!): load 18.4 on 2 cores; ")
    assert not any("Role: baseline" in line or "float64 references:" in line for line in lines)  # --verbose
    monkeypatch.setattr(out, "width", 160)
    assert cli.main(["run", SMOKE, "-o", str(tmp_path / "b"), "--no-cache", "--explain", "--verbose"]) == 0
    shown = capsys.readouterr().out
    count = load_record(tmp_path / "b").bench.unstable  # type: ignore[union-attr]  # b's own: it may time another point
    assert "Role: baseline" in shown and shown.count("load 18.4 on 2 cores") == count
    assert any("float64 references:" in line and "computed" in line for line in shown.splitlines())


def test_validate_refuses_more_components_than_adapters_as_plan_does(capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(CONFIGS / "task_geometry.toml")
    """A centred PCA of n adapters has n - 1 components (walk-through 7: 4 at 4 adapters validated, and
    3 at 3 ran to an empty third, explained_variance_ratio [0.508, 0.492, 0.]); uncentred, n."""
    assert cli.main(["validate", spec, "--set", "data.adapters=4"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"{spec}: analysis[2].components: 5 exceeds the 3 a PCA of 4 adapters has (centred: one fewer than the adapters)")
    assert cli.main(["validate", spec, "--set", "data.adapters=4", "--set", "analysis[2].components=4"]) == 2
    assert capsys.readouterr().err.strip() == (  # the value is the override's, and it is named (walk 14)
        "--set 'analysis[2].components=4': analysis[2].components: 4 exceeds the 3 a PCA of 4 adapters has (centred: one fewer than the adapters)")
    assert cli.main(["validate", spec, "--set", "data.adapters=4", "--set", "analysis[2].components=3"]) == 0
    uncentred = ["--set", "analysis[2].center=false"]
    assert cli.main(["validate", spec, "--set", "data.adapters=4", *uncentred, "--set", "analysis[2].components=4"]) == 0
    assert cli.main(["validate", spec, "--set", "data.adapters=4", *uncentred]) == 2
    assert capsys.readouterr().err.strip().endswith("analysis[2].components: 5 exceeds the 4 adapters of the workload")
