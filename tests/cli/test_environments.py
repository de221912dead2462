"""A spec never runs code its author chose (issue 50): `environments` naming a variable that loads
code or a path is refused by `harness validate` and `harness run` alike, in one line naming the key,
exit 2, nothing written, and nothing of it run (PYTHONPATH's sitecustomize.py ran in two timing
workers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_bad_inputs import harness, one_line, tree

SPEC = """[experiment]
name = "t"

[data]
source = "synthetic"
form = "lora"
adapters = 2
layers = 1
rank = 2
alpha = 4

[data.modules]
up = [16, 8]

[[analysis]]
op = "svdvals"
strategy = "numpy"
environments = [{{{name} = "{value}"}}]

[benchmark]
warmup = 0
sample = 1
budget = "1s"
"""


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize(("name", "value"), [("PYTHONPATH", "evil"), ("PYTHONSTARTUP", "evil"),
                                             ("BASH_ENV", "evil"), ("OMP_TOOL_LIBRARIES", "evil")])
def test_a_variable_that_could_run_code_is_refused(tmp_path: Path, command: str, name: str, value: str) -> None:
    ran = tmp_path / "ran"
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "sitecustomize.py").write_text(f"open({str(ran)!r}, 'w').write('ran')\n")
    (tmp_path / "spec.toml").write_text(SPEC.format(name=name, value=value))
    before = tree(tmp_path)
    proc = harness(command, "spec.toml", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = one_line(proc.stderr)
    assert line.startswith(f"spec.toml: analysis[0].environments[0].{name}: not a setting of a thread runtime")
    assert tree(tmp_path) == before and not ran.exists() and not proc.stdout


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_value_that_is_markup_or_an_escape_sequence_is_refused(tmp_path: Path, command: str) -> None:
    """`[/bold]` ended a run in a MarkupError after the run, its results unprinted."""
    (tmp_path / "spec.toml").write_text(SPEC.format(name="OPENBLAS_THREAD_TIMEOUT", value="[/bold]\\u001b[31m"))
    proc = harness(command, "spec.toml", cwd=tmp_path)
    assert proc.returncode == 2
    line = one_line(proc.stderr)
    assert line.startswith("spec.toml: analysis[0].environments[0].OPENBLAS_THREAD_TIMEOUT: expected 1 to 64 of")
    assert tree(tmp_path) == {"spec.toml"} and "\x1b" not in line
