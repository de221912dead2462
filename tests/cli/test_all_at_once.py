"""validate refuses everything plan and run would, at once; a run folder is re-used only when asked
(`--force`), and never one that holds no run; the progress never cuts a count (issue 41)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from harness.base.progress import Display
from harness.cli import main as cli
from harness.record.run_record import RECORD, load_record
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")

DENSE = """[experiment]
name = "x"
[data]
source = "synthetic"
form = "dense"
adapters = 2
layers = 1
[data.modules]
w = [48, 32]
[[analysis]]
op = "svd"
strategy = "numpy"
[[analysis]]
op = "svd_topk"
k = 100
[[analysis]]
name = "g"
op = "pca"
components = 5
[execution]
device = "cuda"
"""


def test_validate_lists_what_plan_refuses_all_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`k = 100` on 48x32 matrices was "valid", then `run` exited 2; the device, the k and the
    components are three problems, said together."""
    spec = tmp_path / "spec.toml"
    spec.write_text(DENSE)
    from harness.linalg.device import cuda_missing_reason

    cuda = cuda_missing_reason() is not None
    assert cli.main(["validate", str(spec)]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert said[2:] == [f"{spec}: execution.device: 'cuda' requested but {cuda_missing_reason()}"] or not cuda
    keys = [line.removeprefix(f"{spec}: ").split(":")[0] for line in said]
    assert keys[:2] == ["analysis[1].k", "analysis[2].components"]  # the k's fault, not the strategy's
    assert said[0].endswith("analysis[1].k: 100 exceeds min(m, n) of the 48x32 group (at most 32 there)")
    assert cli.main(["plan", str(spec)]) == 2 and capsys.readouterr().err.strip().splitlines() == said


def test_a_second_run_into_the_same_folder_needs_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "first"
    small = ["--set", "data.layers=1", "--budget", "0s", "--no-cache"]
    assert cli.main(["run", SMOKE, "-o", str(folder), *small]) == 0
    first = load_record(folder).started
    capsys.readouterr()
    assert cli.main(["run", SMOKE, "-o", str(folder), *small]) == 2
    said = capsys.readouterr().err.strip()
    assert "output folder exists" in said and "--force" in said and "leave -o out" in said
    assert cli.main(["run", SMOKE, "-o", str(folder), "--force", *small]) == 0
    again = load_record(folder)
    assert again.complete and again.started != first or again.finished is not None
    other = tmp_path / "notes"  # --force never empties a folder that holds no run
    other.mkdir()
    (other / "thesis.tex").write_text("keep me")
    assert cli.main(["run", SMOKE, "-o", str(other), "--force", *small]) == 2
    assert f"holds no {RECORD}" in capsys.readouterr().err and (other / "thesis.tex").read_text() == "keep me"


def test_the_progress_never_cuts_a_count_at_100_columns() -> None:
    """`1064/2…`: the count had 7 columns whatever its total."""
    console = Console(file=io.StringIO(), width=100, force_terminal=True, color_system=None, record=True)
    with Display(console, live=True) as display, display.phase("spectrum: svdvals by factored", 2128) as phase:
        phase.advance(1064)
        phase.item("chunk 1 of 2")
        assert display.progress is not None
        console.print(display.progress.get_renderable())
    assert "1064/2128" in console.export_text()


def test_the_plans_refusals_join_the_specs_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The spec's problems, and what the plan refuses of its valid parts, in one answer: the bad
    strategy name and the k too large for the matrices were two runs of validate apart."""
    spec = tmp_path / "spec.toml"
    spec.write_text(DENSE.replace('device = "cuda"', 'workers = 0').replace('strategy = "numpy"', 'strategy = "numpi"')
                    .replace('name = "x"', 'name = "x"\nseed = -1'))
    assert cli.main(["validate", str(spec)]) == 2
    keys = [line.removeprefix(f"{spec}: ").split(":")[0] for line in capsys.readouterr().err.strip().splitlines()]
    assert keys == ["experiment.seed", "analysis[0].strategy", "analysis[1].k", "analysis[2].components",
                    "execution.workers"]  # in the file's order, the plan's among the spec's own


def test_every_problem_in_one_pass_each_under_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad key of [data] or of an analysis hid the plan's refusals: the k beyond the matrices and
    the components beyond the adapters came only after the other problems were fixed. A refusal
    that would quote a default in place of a bad value (components against data.adapters) waits."""
    spec = tmp_path / "spec.toml"
    spec.write_text(DENSE.replace('device = "cuda"', 'dtype = "float12"').replace("layers = 1", "layers = 1\ntypo = 1")
                    .replace('op = "svd"', 'op = "svdz"').replace("k = 100", 'k = 100\ncompare = ["nosuch"]'))
    assert cli.main(["validate", str(spec)]) == 2
    keys = [line.removeprefix(f"{spec}: ").split(":")[0] for line in capsys.readouterr().err.strip().splitlines()]
    assert keys == ["data.typo", "analysis[0].op", "analysis[1].k", "analysis[1].compare", "analysis[2].components",
                    "execution.dtype"]
    spec.write_text(spec.read_text().replace("adapters = 2", "adapters = 0"))
    assert cli.main(["validate", str(spec)]) == 2
    keys = [line.removeprefix(f"{spec}: ").split(":")[0] for line in capsys.readouterr().err.strip().splitlines()]
    assert keys == ["data.adapters", "data.typo", "analysis[0].op", "analysis[1].k", "analysis[1].compare",
                    "execution.dtype"]


def test_plan_and_run_list_every_problem_validate_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A walk-through: `plan broken.toml` said 8 problems where `validate` said 9, leaving out the
    k beyond a group (the plan's refusal of the spec's valid parts); `run` did the same."""
    spec = tmp_path / "broken.toml"
    spec.write_text(Path(SMOKE).read_text().replace("k = 2", "k = 100")
                    .replace('compare = ["numpy", "torch"]', 'compare = ["numpy", "nosuch"]')
                    .replace("sample = 2", "sample = 2\nbudget = -1"))
    assert cli.main(["validate", str(spec)]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    keys = [line.removeprefix(f"{spec}: ").split(":")[0] for line in said]
    assert keys == ["analysis[0].compare", "analysis[2].k", "benchmark.budget"]  # the walk's k came last
    for command in (["plan", str(spec)], ["run", str(spec)], ["run", str(spec), "-o", str(tmp_path / "r")]):
        assert cli.main(command) == 2
        assert capsys.readouterr().err.strip().splitlines() == said, command
    assert not (tmp_path / "r").exists()


def test_a_refused_rank_is_not_quoted_in_a_groups_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk-through 5: with `rank = 100` refused, validate said `k: 50 exceeds min(m, n) of the
    48x32r16 group`, quoting the default rank the plan's pass had fallen back to."""
    assert cli.main(["validate", SMOKE, "--set", "data.rank=100", "--set", "analysis[2].k=50"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert any(line.endswith("data.rank: 100 exceeds min(m, n) = 32 of the 48x32 layers (up)") for line in lines)
    assert any(line.endswith("analysis[2].k: 50 exceeds min(m, n) of the 48x32 group (at most 32 there)") for line in lines)
