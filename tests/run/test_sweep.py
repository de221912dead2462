"""Sweeps (issue 49): a `[sweep]` table validated with every problem at once and a swept value
that breaks an analysis named in one line; `harness plan` shows the points and the whole sweep's
estimate, `--budget` split across them; a tiny sweep run end to end, each point an ordinary
verified run, its record, fits, exports and chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.record.run_record import load_record
from harness.record.sweep_record import SWEEP_RECORD, load_sweep
from tests.conftest import CONFIGS
from tests.report.test_sweep_views import known_sweep

EXAMPLE = str(CONFIGS / "sweep_rank.toml")
TINY = ["--set", "data.modules.w=[40, 32]", "--set", "sweep.data.rank=[2, 4, 8]", "--set", "benchmark.warmup=0"]


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_bad_sweeps_are_refused_all_at_once_one_line_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(Path(EXAMPLE).read_text().split("[sweep]")[0]
                    + '[sweep]\ndata.rank = [4, 0]\ndata.adapters = 3\n"analysis[0].k" = [1, 2]\n')
    assert cli.main(["validate", str(spec)]) == 2
    errors = lines_of(capsys.readouterr().err)
    assert f"{spec}: sweep.data.rank: 0: a swept size is a positive number" in errors
    assert f"{spec}: sweep.data.adapters: expected a list of two values or more, e.g. [4, 8, 16]" in errors
    assert f"{spec}: sweep: 3 keys (data.rank, data.adapters, analysis[0].k); a sweep has one or two" in errors


def test_a_swept_value_that_breaks_an_analysis_is_one_line_naming_it(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """components = 3 is fine at 4 adapters, impossible at 2: the plan's refusal names the point."""
    spec = tmp_path / "spec.toml"
    spec.write_text(Path(EXAMPLE).read_text().split("[sweep]")[0].replace(
        "[execution]", '[[analysis]]\nname = "geometry"\nop = "pca"\ncomponents = 3\n\n[execution]')
        + "[sweep]\ndata.adapters = [2, 4]\nbenchmark.sample = [1, 2, 3, 4]\n")
    assert cli.main(["plan", str(spec)]) == 2
    errors = lines_of(capsys.readouterr().err)
    assert errors == [f"{spec}: at data.adapters=2, benchmark.sample=1 (and 3 more points): analysis[1].components: "
                      "3 exceeds the 1 a PCA of 2 adapters has (centred: one fewer than the adapters)"], errors


def test_a_point_alone_is_not_run_as_the_sweep(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.api import SpecProblem, run

    with pytest.raises(SpecProblem, match="this spec is a sweep"):
        run(EXAMPLE, quiet=True)


@pytest.mark.parametrize("command", ["validate", "plan", "run"])
@pytest.mark.parametrize("override", ["data.rank=256", "data={rank=256}"])
def test_a_set_of_the_swept_key_is_refused_not_ignored(command: str, override: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`plan --set data.rank=256` listed all five points, the override silently lost under each
    point's own value; plan, run and validate refuse it alike, in one line with the way to one point."""
    assert cli.main([command, EXAMPLE, "--set", override, *(["-o", str(tmp_path / "run")] if command == "run" else [])]) == 2
    assert lines_of(capsys.readouterr().err) == [
        f"{EXAMPLE}: --set {override!r}: data.rank is swept (16, 32, 64, 128, 256), each point setting its own value; "
        "for one point add --set sweep={}, or set the points with --set 'sweep.data.rank=[...]'"]
    assert not (tmp_path / "run").exists()
    if override == "data.rank=256":  # the way out it names: the one point, planned
        assert cli.main(["plan", EXAMPLE, "--set", override, "--set", "sweep={}", "--json"]) == 0
        assert [g["rank"] for g in json.loads(capsys.readouterr().out)["groups"]] == [256]


def test_plan_shows_every_point_and_the_budget_bounds_the_whole_sweep(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", EXAMPLE, *TINY, "--budget", "3s", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [p["point"] for p in shown["points"]] == [{"data.rank": 2}, {"data.rank": 4}, {"data.rank": 8}]
    assert [p["plan"]["bench"]["budget_s"] for p in shown["points"]] == [1.0, 1.0, 1.0]
    assert shown["estimate_s"] == pytest.approx(sum(p["estimate_s"] for p in shown["points"]))
    assert cli.main(["plan", EXAMPLE, *TINY, "--budget", "3s"]) == 0
    drawn = capsys.readouterr().out.splitlines()
    assert any("sweep of 3 points" in line for line in drawn)
    assert [line for line in drawn if line != line.rstrip()] == []  # a table's lines end without padding blanks


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The sweep's folder, what it printed on stdout and on stderr (its progress)."""
    folder = tmp_path_factory.mktemp("sweep") / "out"
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["run", EXAMPLE, *TINY, "--budget", "1.5s", "-o", str(folder), "--report"])
    assert code == 0, out.getvalue() + err.getvalue()
    return folder, out.getvalue(), err.getvalue()


def test_a_tiny_sweep_runs_each_point_as_a_verified_run_and_fits_them(tiny_sweep: tuple[Path, str, str]) -> None:
    folder, shown, _ = tiny_sweep
    record = load_sweep(folder)
    assert record.complete and record.passed and len(record.points) == 3
    for point in record.points:  # each point an ordinary run, its own folder and record
        run = load_record(folder / point.folder)
        assert run.complete and run.passed and run.spec["data"]["rank"] == point.values["data.rank"]
        assert run.spec["sweep"] == {}
        assert "numpy" in {t.strategy for t in point.timings}  # the baseline: timed whatever the load
        assert all(t.low <= t.seconds <= t.high and t.model_s for t in point.timings)
        for t in point.timings:  # the plan's estimate as the planner compared it (scaled), the model's unscaled
            [c] = [c for s in run.plan.steps if s.analysis == t.analysis for c in s.candidates if c.label == t.strategy]
            assert t.planned_s == pytest.approx(sum(c.per_matrix_s.values()) / len(c.per_matrix_s))
        measured = [g.measurement for a in run.analyses for t in a.timings for g in t.groups]
        assert (point.measurements, len(point.unstable)) == (len(measured), sum(m.unstable for m in measured)) != (0, 0)
        assert len(point.unstable_rows) == len(point.unstable)  # each named by its analysis and strategy
    fits = {f.strategy: f for f in record.fits}
    timed = {t.strategy for p in record.points for t in p.timings}
    assert set(fits) == {s for s in timed if sum(s in {t.strategy for t in p.timings} for p in record.points) >= 2}
    assert all(f.axis == "data.rank" and f.sizes for f in fits.values())
    # the cost model's own: LAPACK is blind to the rank, factored is not (at these tiny shapes its
    # fixed overhead outweighs its flops, so its exponent is near 0 too, yet its estimate rises)
    assert fits["numpy"].model is not None and fits["numpy"].model.exponent == pytest.approx(0.0, abs=0.05)
    modelled = [t.model_s for p in record.points for t in p.timings if t.strategy == "factored"]
    assert "factored" not in fits or modelled == sorted(set(modelled))  # type: ignore[type-var]
    assert "spectrum, numpy: cost grows as rank^" in shown  # the terminal leads with the exponents
    assert shown.index("cost grows as") < shown.index("results: ")
    for name in (SWEEP_RECORD, "points.csv", "fits.csv", "sweep.md", "report.html"):
        assert (folder / name).is_file(), name
    assert len(lines_of((folder / "points.csv").read_text())) == 1 + sum(len(p.timings) for p in record.points)


def test_a_sweep_says_each_points_pick_as_it_runs_in_the_runs_table_style(tiny_sweep: tuple[Path, str, str]) -> None:
    """It said only "sweep point k of 5" while it ran, and drew its tables in heavy boxes (┏━━┳)
    unlike every other table of the CLI (a rule under the header). A point's line says its pick, not
    its verdict: the pick's finding is the planner line's (walk 14: said three times)."""
    folder, shown, progress = tiny_sweep
    record = load_sweep(folder)
    said = [line for line in progress.splitlines() if line.startswith("sweep point ") and ", data.rank=" in line]
    assert len(said) == len(record.points)
    # each point said once, with its result (walk-through 7: `sweep point 1 of 5: data.rank=16` first)
    assert [line for line in progress.splitlines() if line.startswith("sweep point ")] == said
    for i, (line, point) in enumerate(zip(said, record.points), 1):
        run = load_record(folder / point.folder)
        [analysis] = run.analyses
        assert line.startswith(f"sweep point {i} of 3, data.rank={point.values['data.rank']} done: spectrum picked "
                               f"{point.chosen['spectrum']}"), line
        assert "faster" not in line and "slower" not in line and analysis.strategy == point.chosen["spectrum"]
        assert (f"{len(point.unstable)} of {point.measurements} measurements unstable" in line) == bool(point.unstable)
    assert not set("┏┳━┃│┡╇") & set(shown)
    # each point's run row counts its one analysis in the singular (walk 23: `sweep_rank: 1/1 (1 analyses)`)
    assert "(1 analyses)" not in progress and progress.count("1/1 (1 analysis) in ") == len(record.points), progress
    picks = shown.splitlines()
    header = next(i for i, line in enumerate(picks) if "planner's pick" in line and "fastest measured" in line)
    assert set(picks[header + 1].strip()) == {"─"}  # the header's rule, as under a run's table
    # the picks table, its title and its rows, ends its lines as a run's table does: no padding blanks
    assert [line for line in shown.splitlines() if line != line.rstrip()] == []


@pytest.mark.browser
def test_the_sweep_page_fits_1280_px(tiny_sweep: tuple[Path, str, str], tmp_path: Path) -> None:
    """The tiny sweep's page and a known sweep's (a crossover band, a planner who is wrong):
    every table, the planner's included, and every chart inside 1280 px, no label over another."""
    from harness.report.sweep_page import render_sweep
    from tests.report.test_browser import assert_laid_out, laid_out

    page = tiny_sweep[0] / "report.html"
    assert page.read_text().count("<svg") == 1  # one chart: one analysis, one axis
    assert_laid_out(page, tmp_path)
    known = tmp_path / "known.html"
    known.write_text(render_sweep(known_sweep()))
    assert_laid_out(known, tmp_path)
    assert "planner" in laid_out(known, tmp_path)["measured"]


def test_harness_report_takes_a_sweeps_folder(tiny_sweep: tuple[Path, str, str], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`harness report SWEEP` said "no record.json here; is this a run folder from `harness run`?"
    of the folder `harness run` had just printed."""
    folder = tiny_sweep[0]
    (folder / "report.html").unlink()
    assert cli.main(["report", str(folder)]) == 0
    assert (folder / "report.html").is_file() and f"report: {folder / 'report.html'}" in capsys.readouterr().out
    assert cli.main(["report", str(folder), "--format", "md", "-o", str(tmp_path / "sweep.md")]) == 0
    assert (tmp_path / "sweep.md").read_text() == (folder / "sweep.md").read_text()
    capsys.readouterr()
    for form in ("csv", "json"):
        assert cli.main(["report", str(folder), "--format", form]) == 2
        said = capsys.readouterr().err.strip()
        assert said.count("\n") == 0 and "points.csv and fits.csv here" in said


def test_a_sweep_says_what_its_busy_points_taught_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Each of a sweep's 5 points reprinted `wisdom: 2 measurements taken while busy ...`: the
    sweep says it once, counting every point's."""
    from harness.bench import noise
    from harness.machine import wisdom
    from harness.machine.info import probe
    from harness.run import rounds as rounding

    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))
    busy = lambda conditions: ["load 18.4 on 2 cores"]  # noqa: E731
    monkeypatch.setattr(rounding, "condition_reasons", busy)
    monkeypatch.setattr(noise, "condition_reasons", busy)
    two = [*TINY[:-3], "sweep.data.rank=[2, 4]", "--set", "benchmark.warmup=0"]
    assert cli.main(["run", EXAMPLE, *two, "--budget", "1s", "-o", str(tmp_path / "out"), "--no-cache"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("wisdom: ")]
    learned = [o for o in wisdom.load(tmp_path / "wisdom", probe()).observations if o.busy is not None]
    assert len(learned) >= 2 and len(said) == 1, said
    measured = sum(len(o.recent) for o in learned)  # a rank-blind strategy's points share an entry
    assert said[0].startswith(f"wisdom: {measured} measurements taken while busy")


@pytest.mark.parametrize("points", [1, 0])
def test_a_stopped_sweep_says_what_its_folder_holds(points: int, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Walk 22: Ctrl-C after the first of 5 points printed `interrupted: nothing was written` beside a
    sweep.json, a finished point and a started one, which the same command then refused."""
    from harness.cli.commands import sweep

    def stopped_after(plan: object, overrides: object, folder: Path, display: object, options: object) -> None:
        folder.mkdir(parents=True)
        (folder / "rank-16").mkdir()  # a point's run folder, begun
        if points:  # the record as run_sweep leaves it after its first point
            stopped = known_sweep().model_copy(update={"complete": False})
            (folder / SWEEP_RECORD).write_text(stopped.model_copy(update={"points": stopped.points[:points]}).model_dump_json())
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "run_sweep", stopped_after)
    out = tmp_path / "sweepc"
    assert cli.main(["run", EXAMPLE, "-o", str(out)]) == 130
    said = " ".join(capsys.readouterr().err.split())
    assert said == (f"interrupted: {out} holds {points} of 5 points of a sweep marked incomplete; a sweep does not "
                    "resume: run it again into another folder (-o), or leave -o out for a fresh one")
