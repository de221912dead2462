"""The README's and the docs' commands work as written: every fenced bash block marked
`<!-- tested -->`, in README.md or a page of docs/, runs, command by command, in a scratch folder
(configs/ linked in), as a new user would type it. Runs of the main job get small overrides (one
layer, a 1 s budget) so the whole test stays under a minute on 2 busy cores; what is tested is that
the command line is right, not how long the job takes."""

from __future__ import annotations

import ast
import contextlib
import re
import shlex
from pathlib import Path

import pytest

from harness.cli.main import main
from tests.conftest import ROOT

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]  # every page a user reads
SMALLER = ["--set", "data.layers=1", "--budget", "1s"]  # for runs of the main job
TEST_COMMAND = "python -m pytest -q"


def marked_commands(text: str) -> list[list[str]]:
    """The commands of the marked blocks, comments stripped, each split as a shell would."""
    blocks = re.findall(r"<!-- tested -->\s*```bash\n(.*?)```", text, flags=re.S)
    return [shlex.split(line, comments=True) for block in blocks for line in block.splitlines() if line.strip()]


def marked_python(text: str) -> list[str]:
    return re.findall(r"<!-- tested -->\s*```python\n(.*?)```", text, flags=re.S)


def every_marked_command() -> list[list[str]]:
    """README's blocks first (its tutorial makes the folders the pages' commands may read)."""
    return [command for page in PAGES for command in marked_commands(page.read_text())]


def test_the_notebook_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The README's Python, as a notebook runs it: the engine, not the CLI; twice, as a notebook
    cell is run again."""
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_WISDOM", "off")
    [example] = [block for page in PAGES for block in marked_python(page.read_text())]
    names: dict[str, object] = {}  # one namespace, as a notebook's
    for _ in range(2):
        exec(compile(example, "README.md", "exec"), names)
    assert capsys.readouterr() == ("", "")  # quiet=True: nothing printed
    assert (tmp_path / "runs" / "nb" / "record.json").is_file()
    for code, shown in illustrated(example):  # `[12.6]` beside a value printed as [9.559537163516493]
        assert decimals(eval(code, names)) == decimals(shown), (code, shown)


def illustrated(example: str) -> list[tuple[str, object]]:
    """The example's lines whose comment ends in the value they give (`...: [12.6]`), as (code, value)."""
    found = []
    for line in example.splitlines():
        code, _, comment = line.partition("  # ")
        with contextlib.suppress(ValueError, SyntaxError):
            found.append((code.strip(), ast.literal_eval(comment.rsplit(": ", 1)[-1])))
    assert found
    return found


def decimals(value: object) -> list[int]:
    """The decimals of each number in a value (a list of them): what the example rounds to."""
    return [len(repr(x).partition(".")[2]) for x in (value if isinstance(value, list) else [value])]


def test_the_readme_marks_its_tutorial_for_testing() -> None:
    commands = marked_commands(README.read_text())
    assert len(commands) >= 6 and all(c[0] == "harness" for c in commands)
    assert any("analysis[2].components=3" in c for c in commands)


def test_the_docs_pages_blocks_are_collected() -> None:
    """A tested block moved from README to a page of docs/ is still run (precision.md's was)."""
    moved = marked_commands((ROOT / "docs" / "precision.md").read_text())
    assert moved and all(command in every_marked_command() for command in moved)


def test_the_readme_quick_start_is_the_one_that_works() -> None:
    """The two fresh-machine commands, word for word; CI runs the README's test command."""
    text = README.read_text()
    for command in ("bash scripts/setup.sh && . .venv/bin/activate && harness run configs/task_geometry.toml",
                    f"bash scripts/setup.sh && . .venv/bin/activate && {TEST_COMMAND}"):
        assert f"```bash\n{command}\n```" in text
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == TEST_COMMAND and "bash scripts/setup.sh" in ci


def test_the_readme_shows_a_whole_spec_that_is_the_shipped_one() -> None:
    """"A whole spec" is configs/smoke.toml as the file holds it, so the two cannot drift."""
    spec = (ROOT / "configs" / "smoke.toml").read_text()
    assert f"```toml\n{spec}```" in README.read_text()


def test_the_readme_names_each_ops_baseline_as_the_registry_does() -> None:
    """Walk 24: smoke's geometry verdict named gram_pairwise, which its spec (shown whole) never lists."""
    from harness.strategies.registry import BASELINES

    text = " ".join(README.read_text().split())
    said = text.split("Each op's baseline", 1)[1].split(" (so ", 1)[0]
    assert said.endswith("`numpy` for svdvals and svd, `scipy_svds` for svd_topk, `gram_pairwise` for pca")
    assert all(f"`{strategy}` for" in said and op in said for op, strategy in BASELINES.items())


def test_the_readme_names_every_exit_code_in_whole_sentences() -> None:
    """The exit-code list once ended mid-sentence at "could not judge (no": every code the CLI
    answers with is named, and the list ends its sentence."""
    from harness.cli import exit_codes

    text = " ".join(README.read_text().split())
    listed = text[text.index("Exit codes:"):]
    listed = listed[:listed.index(". ")]
    assert "(no " not in listed.rsplit(",", 1)[-1]
    codes = {v for k, v in vars(exit_codes).items() if k.startswith("EXIT_")}
    assert all(re.search(rf"(:|,|and) {code} ", listed) for code in codes), listed


def test_the_readme_fits_a_few_screens() -> None:
    """Issue 48: 1,021 lines with the first spec at line 218; the rest lives under docs/."""
    assert len(README.read_text().splitlines()) <= 400


@pytest.mark.slow
def test_the_readme_tutorial_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_WISDOM", "off")
    for command in every_marked_command():
        argv = command[1:]
        if argv[0] in ("run", "plan") and argv[1].endswith("task_geometry.toml"):
            argv += SMALLER
        code = main(argv)
        said = capsys.readouterr()
        assert code == 0, f"{shlex.join(command)} exited {code}: {said.err[-2000:]}"
    assert (tmp_path / "runs" / "first" / "report.html").is_file()
    assert (tmp_path / "runs" / "small" / "record.json").is_file()
    assert (tmp_path / "runs" / "precision" / "record.json").is_file()


def test_the_docs_state_the_record_schema_this_harness_writes() -> None:
    """README said schema 3 (versions 1 and 2 read) while records were written at 4 and 1-4 read."""
    from harness.record.run_record import READABLE_VERSIONS, SCHEMA_VERSION

    older = [v for v in READABLE_VERSIONS if v != SCHEMA_VERSION]
    claim = f"(schema {SCHEMA_VERSION}; versions {older[0]} to {older[-1]} still read)"
    assert claim in (ROOT / "docs" / "outputs.md").read_text(), claim


def test_the_setup_builds_the_editable_install_without_a_warning_box(tmp_path: Path) -> None:
    """scripts/setup.sh's `pip install -e .` printed setuptools' "BuildBackendWarning: Editable
    installation ... !! ****" box (its import finder, for a layout pyproject.toml left unsaid),
    which a newcomer takes for a failed setup. The build backend, on this project's pyproject.toml."""
    import subprocess
    import sys
    import zipfile

    for name in ("pyproject.toml", "README.md"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "__init__.py").write_text("")
    built = subprocess.run([sys.executable, "-c", "from setuptools import build_meta; "
                            "print(build_meta.build_editable('wheel'))"], cwd=tmp_path, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert "Editable installation" not in built.stderr and "!!" not in built.stderr, built.stderr
    wheel = zipfile.ZipFile(tmp_path / "wheel" / built.stdout.split()[-1])
    [pth] = [n for n in wheel.namelist() if n.endswith(".pth")]
    assert wheel.read(pth).decode().strip() == str(tmp_path)  # the root on sys.path: `import harness` finds it


def test_the_readme_sample_is_a_100_column_terminals_and_claims_only_what_it_shows() -> None:
    """README said `harness run` "fits a 100-column terminal" while its verdict lines ran to 112-124
    characters: the sample is one a 100-column terminal showed (its verdicts wrapped between words,
    a continuation line starting in lower case), its table within 100 columns, and no claim of more."""
    from harness.report.terminal import RUN_COLUMNS

    text = README.read_text()
    sample = text[text.index("A first run at 100 columns"):]
    sample = sample[sample.index("```text\n") + 8:]
    lines = sample[:sample.index("```")].splitlines()
    assert lines[-1] == "results: runs/main" and all(len(line) <= 100 for line in lines)
    header = re.split(r"\s{2,}", next(line for line in lines if line.startswith("analysis ")).strip())
    columns = iter(RUN_COLUMNS)
    assert all(name in columns for name in header), header  # the run table's own columns, in its order
    assert any(line.startswith("  ") and line.lstrip()[:1].islower() for line in lines[:4])  # a verdict wrapped, hung
    assert "fits a 100-column terminal" not in text


def test_what_the_readme_writes_is_ignored_by_git() -> None:
    """The tutorial left `?? runs/` in `git status`: every folder the README writes (-o, output=) is ignored."""
    import subprocess

    written = set(re.findall(r'(?:-o |output=")(runs/[\w.-]+|results/[\w.-]+)', README.read_text()))
    assert written and {"runs/first", "runs/nb"} <= written
    ignored = subprocess.run(["git", "check-ignore", *sorted(written)], cwd=ROOT, capture_output=True, text=True)
    assert sorted(ignored.stdout.split()) == sorted(written)


def test_the_verdicts_factor_either_way_is_explained_where_a_reader_meets_it() -> None:
    """Walk 21: `(1,827x, 625-5,340: x2.9 either way)` was explained nowhere: the README under its
    sample, and --explain's speedup note, say what the factor is."""
    from harness.report.labels import SPEEDUP_NOTE

    text = README.read_text()
    sample = text[text.index("```text"):]
    assert "either way" in sample[:sample.index("```\n", 8)]  # the sample's verdicts use it
    assert "`x1.5 either way` in a verdict: the interval's ends lie 1.5 times below and above the speedup." in text
    assert "either way`: each end lies that factor from the speedup" in SPEEDUP_NOTE


def test_results_readme_points_at_a_page_that_exists() -> None:
    """Walk 21: results/README.md sent the reader to the top-level README's "What a run writes",
    which moved to docs/outputs.md."""
    text = (ROOT / "results" / "README.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links and all((ROOT / "results" / link).resolve().is_file() for link in links)
    assert (ROOT / "docs" / "outputs.md").read_text().startswith("# What a run writes")
    assert "top-level README's" not in text
