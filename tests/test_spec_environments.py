"""`environments` (issue 50): a spec is data a colleague mails you, so the axis takes only the
variables that tune thread runtimes and numeric libraries (harness.machine.tuning), values that are
words and numbers, and a few of each; every other one is a line naming its key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.machine.tuning import ALLOWED, MAX_VARIABLES
from harness.specs.sections import MAX_ENVIRONMENTS
from harness.specs.reading import load_spec
from tests.conftest import ROOT
from tests.test_spec import GOOD, problems

KEY = "analysis[0].environments[0]"
NOT_A_SETTING = "not a setting of a thread runtime or numeric library a spec may time"
NOT_A_VALUE = "expected 1 to 64 of letters, digits"


def _table(env: dict[str, str]) -> str:
    """A TOML inline table; JSON's string escapes are TOML's."""
    return "{" + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in env.items()) + "}"


def _spec(*environments: dict[str, str]) -> str:
    return GOOD + f"environments = [{', '.join(map(_table, environments))}]\n"


# each ran code or chose a path the spec's author picked (issue 50), or names a file or library to load
REFUSED = ["PYTHONPATH", "LD_PRELOAD", "PYTHONSTARTUP", "PYTHONINSPECT", "PATH", "PYTHONHOME", "PYTHONUSERBASE",
           "PYTHONWARNINGS", "PYTHONBREAKPOINT", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "PYTHONEXECUTABLE",
           "OMP_TOOL_LIBRARIES", "OMP_TOOL", "OMP_TOOL_VERBOSE_INIT", "OMP_DISPLAY_ENV", "KMP_CPUINFO_FILE",
           "MKL_VERBOSE_OUTPUT_FILE", "MKL_THREADING_LAYER", "TORCH_ADDR2LINE_BINARY", "TORCH_HOME",
           "TORCHINDUCTOR_CACHE_DIR", "NUMEXPR_NUM_THREADS", "openblas_num_threads", "HARNESS_WISDOM"]


@pytest.mark.parametrize("name", REFUSED)
def test_a_variable_that_tunes_nothing_is_one_line_naming_its_key(tmp_path: Path, name: str) -> None:
    (line,) = problems(tmp_path, _spec({name: "1"}))
    assert line.startswith(f"{KEY}.{name}: {NOT_A_SETTING}")


@pytest.mark.parametrize(("name", "shown"), [
    ("1X", ".1X"),  # not a name at all, but harmless to show
    ("A\x1b[31m", r"['A\x1b[31m']"),  # a control character never reaches the terminal raw
    ("X" * 200, f"['{'X' * 40}']"),
])
def test_a_hostile_key_is_shown_quoted_and_escaped(tmp_path: Path, name: str, shown: str) -> None:
    (line,) = problems(tmp_path, _spec({name: "1"}))
    assert line.startswith(f"{KEY}{shown}: {NOT_A_SETTING}") and line.isprintable()


@pytest.mark.parametrize("value", ["[/bold]", "\x1b[31m", "/tmp/evil", "../x", "a\nb", "$(id)", "`id`", "x;y|z", "",
                                   "1" * 65, "C:\\x", "~/x"])
def test_a_value_that_is_not_a_word_or_a_number_is_one_line(tmp_path: Path, value: str) -> None:
    (line,) = problems(tmp_path, _spec({"OMP_NUM_THREADS": value}))
    assert line.startswith(f"{KEY}.OMP_NUM_THREADS: {NOT_A_VALUE}") and line.isprintable()


@pytest.mark.parametrize(("environments", "expected"), [
    ([{f"OMP_{i}": "1" for i in range(2500)}], f"{KEY}: 2500 variables; expected 1 to {MAX_VARIABLES}"),
    ([dict.fromkeys(sorted(ALLOWED)[:MAX_VARIABLES + 1], "1")], f"{KEY}: {MAX_VARIABLES + 1} variables"),
    ([{}], f"{KEY}: 0 variables"),
    ([{"OMP_NUM_THREADS": str(i)} for i in range(MAX_ENVIRONMENTS + 1)],
     f"analysis[0].environments: list should have at most {MAX_ENVIRONMENTS} items"),
    ([{"OMP_NUM_THREADS": "1"}] * 2, "analysis[0].environments: each environment at most once"),
])
def test_few_environments_of_few_variables(tmp_path: Path, environments: list[dict[str, str]], expected: str) -> None:
    """2,500 variables were one line each, a 1.2 MB screen: counted before any is read."""
    (line,) = problems(tmp_path, _spec(*environments))
    assert line.startswith(expected)


def test_every_problem_at_once(tmp_path: Path) -> None:
    lines = problems(tmp_path, _spec({"PYTHONPATH": "evil", "OMP_NUM_THREADS": "[/bold]"}, {"LD_AUDIT": "1"}))
    assert [line.split(": ", 1)[0] for line in lines] == [f"{KEY}.PYTHONPATH", f"{KEY}.OMP_NUM_THREADS",
                                                           "analysis[0].environments[1].LD_AUDIT"]


@pytest.mark.parametrize("env", [
    {"OPENBLAS_THREAD_TIMEOUT": "18"},
    {"OMP_PLACES": "{0:4},{4:4}", "OMP_PROC_BIND": "spread,close", "OMP_WAIT_POLICY": "PASSIVE"},
    {"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_HW_SUBSET": "1s,4c@2,2t", "KMP_BLOCKTIME": "0"},
    {"GOMP_CPU_AFFINITY": "0 3 1-2 4-15:2", "OMP_STACKSIZE": "2M", "OMP_SCHEDULE": "dynamic,4"},
    {"MKL_NUM_THREADS": "1", "BLIS_NUM_THREADS": "2", "VECLIB_MAXIMUM_THREADS": "1", "ATEN_CPU_CAPABILITY": "avx2",
     "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "NVIDIA_TF32_OVERRIDE": "0"},
])
def test_the_settings_of_thread_runtimes_and_numeric_libraries_are_taken(tmp_path: Path, env: dict[str, str]) -> None:
    path = tmp_path / "spec.toml"
    path.write_text(_spec(env))
    assert load_spec(path).analysis[0].environments == [env]


def test_the_docs_list_exactly_the_allowed_variables() -> None:
    page = (ROOT / "docs" / "environments.md").read_text()
    listed = {name for row in page.splitlines() if row.startswith("| ") for name in re.findall(r"`([A-Z0-9_]+)`", row)}
    assert listed == ALLOWED



@pytest.mark.parametrize("name", ["\x1b[2J", "a\nb", "tab\there", "\u202eevil", " ", "x" * 129])
def test_an_analysis_name_is_printable(tmp_path: Path, name: str) -> None:
    """An analysis' name is printed in every table and line: a control character (an escape
    sequence, a bidi override) is one line naming the key, never the terminal's."""
    (line,) = problems(tmp_path, GOOD + f"name = {json.dumps(name)}\n")
    assert line.startswith("analysis[0].name: ") and line.isprintable()
