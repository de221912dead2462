"""`harness history` over asv results written the way asv writes them: series per machine, CPU
and GPU apart, asv's steps, and the page in a real browser with every chart drawn, offline."""

from __future__ import annotations

import json
import math
import os
import re
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.report.history import RESULTS_CAP, HistoryError, load
from harness.report.history_page import write_history

pytest.importorskip("asv")

NAME = "ops.Svdvals.time_compute"
PARAMS = [["'numpy'", "'torch'"], ["'256x256'"]]


COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
           "stats_q_25", "stats_q_75", "stats_number", "stats_repeat"]


def write_run(root: Path, machine: str, i: int, results: dict[str, list[object]]) -> None:
    """Commit i's asv (format 2) result file on `machine`, a day after commit i - 1's."""
    commit = f"{i:02d}" + "ab" * 19
    (root / machine / f"{commit[:8]}-existing-py.json").write_text(json.dumps({
        "commit_hash": commit, "env_name": "existing-py", "date": 1_700_000_000_000 + 86_400_000 * i,
        "params": {"machine": machine}, "python": "3.11", "requirements": {}, "env_vars": {},
        "result_columns": COLUMNS, "results": results, "durations": {}, "version": 2}))


def write_meta(root: Path, machine: str, benchmarks: dict[str, dict[str, object]]) -> None:
    (root / machine).mkdir(parents=True)
    (root / machine / "machine.json").write_text(json.dumps({"machine": machine, "version": 1}))
    (root / "benchmarks.json").write_text(json.dumps({**benchmarks, "version": 2}))


def write_asv_results(root: Path, machine: str, levels: dict[str, list[float]]) -> None:
    """One asv result file per commit: `levels[strategy][i]` seconds at commit i."""
    write_meta(root, machine, {NAME: {"name": NAME, "type": "time", "unit": "seconds",
                                      "param_names": ["strategy", "case"], "params": PARAMS, "version": "1"}})
    for i in range(len(next(iter(levels.values())))):
        values = [levels[s.strip("'")][i] for s in PARAMS[0]]
        write_run(root, machine, i, {NAME: [values, PARAMS, "1", 1_700_000_000_000 + i, 1.0, [v * 0.9 for v in values],
                                            [v * 1.1 for v in values], [v * 0.95 for v in values],
                                            [v * 1.05 for v in values], [1, 1], [5, 5]]})


@pytest.fixture
def asv_results(tmp_path: Path) -> Path:
    root = tmp_path / "asv"
    noise = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98]
    write_asv_results(root, "box-cpu", {"numpy": [0.01 * n for n in noise],
                                        "torch": [0.02 * n * (2 if i >= 3 else 1) for i, n in enumerate(noise)]})
    write_asv_results(root, "box-nvidia-h100-80gb-hbm3", {"numpy": [0.01] * 6, "torch": [0.002] * 6})
    return root


def test_series_per_machine_with_asvs_steps(asv_results: Path) -> None:
    series = load(asv_results)
    assert len(series) == 4
    by = {(s.machine, s.params["strategy"]): s for s in series}
    assert {s.gpu for s in series if s.machine.endswith("-cpu")} == {False}
    assert by[("box-nvidia-h100-80gb-hbm3", "torch")].gpu
    torch_cpu = by[("box-cpu", "torch")]
    assert [p.value for p in torch_cpu.points][:3] == pytest.approx([0.02, 0.0202, 0.0198])
    assert torch_cpu.points[0].q25 == pytest.approx(0.019) and torch_cpu.points[0].q75 == pytest.approx(0.021)
    [step] = torch_cpu.steps  # the 2x slowdown at the fourth commit, and nothing else
    assert step.commit.startswith("03") and step.ratio == pytest.approx(2.0, rel=0.05)
    assert by[("box-cpu", "numpy")].steps == [] and by[("box-nvidia-h100-80gb-hbm3", "torch")].steps == []


def test_raw_series_alone_are_drawn_folded_without_a_headline(asv_results: Path, tmp_path: Path) -> None:
    page = write_history(load(asv_results), asv_results, tmp_path / "history.html").read_text()
    assert "No speedups tracked" in page and "Since <code>" not in page
    folded = page[page.index("<details>"):page.index("</details>")]
    # one chart for the benchmark: a line per parameter set (numpy, torch) and machine (its line style)
    assert folded.count("<svg") == page.count("<svg") == 1
    assert all(f">{label}</text>" in folded for label in ("numpy, 256x256", "torch, 256x256", "box-cpu",
                                                          "box-nvidia-h100-80gb-hbm3", "regression"))
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing to fetch


@pytest.fixture
def speedup_results(tmp_path: Path) -> tuple[Path, list[str]]:
    from benchmarks.history_page import write_results

    root = tmp_path / "speedups"
    return root, write_results(root, commits=3)


def test_page_reads_headline_first_then_a_chart_per_analysis_cpu_and_gpu_side_by_side(
        speedup_results: tuple[Path, list[str]], tmp_path: Path) -> None:
    from benchmarks.history_page import SLOW
    from benchmarks.speedups import Dense, MainJob

    root, commits = speedup_results
    page = write_history(load(root), root, tmp_path / "history.html").read_text()
    headline = page[page.index('id="headline"'):page.index("<nav>")]
    assert re.search(rf"Since <code>{commits[0][:8]}</code>:\s*<span[^>]*>1 regression</span>,\s*<span[^>]*>"
                     r"0 improvements</span>,\s*on box-cpu, box-nvidia-h100-80gb-hbm3", headline)
    link = re.search(r'<a href="#([^"]+)" class="slower">regression</a>:\s*' + re.escape(SLOW) + " on box-cpu", headline)
    assert link and f'<h3 id="{link.group(1)}">task_geometry: spectrum</h3>' in page
    analyses = {p.partition("/")[0] for p in MainJob.params + Dense.params}
    contents = page[page.index("<nav>"):page.index("</nav>")]
    assert all(f"Speedups: {a.replace(':', ': ')}</a>" in contents for a in analyses)
    for a in analyses:  # one chart per analysis and kind of machine, the CPU's first
        section = page[page.index(f">{a.replace(':', ': ')}</h3>"):]
        panels = section[:section.index("</div>\n<div")]
        assert panels.index("CPU machines") < panels.index("GPU machines") and panels.count("<svg") == 2
    steps = page[page.index(">task_geometry: spectrum</h3>"):page.index(">task_geometry: top3</h3>")]
    assert re.search(rf'class="slower">regression</td><td>torch</td>\s*<td>box-cpu</td><td><code>{commits[-1][:8]}', steps)
    roofs = page[page.index('id="roofs"'):page.index('id="raw"')]
    assert roofs.count("<svg") == 2  # one per tracked spec
    folded = page[page.index("<details>"):page.index("</details>")]
    assert "median seconds per matrix" in folded and "precision.PcaGram.time_gram" in folded
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)


def test_since_names_the_commit_the_headline_compares_with(speedup_results: tuple[Path, list[str]], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    root, commits = speedup_results
    out = tmp_path / "h.html"
    assert cli.main(["history", "--results", str(root), "-o", str(out), "--since", commits[1][:6]]) == 0
    assert f"Since <code>{commits[1][:8]}</code>" in out.read_text()
    assert cli.main(["history", "--results", str(root), "-o", str(out), "--since", "fedcba987"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--since fedcba987: names no commit with results (3 commits have them)" in err


def test_cli_history_and_its_one_line_error(asv_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "h.html"
    assert cli.main(["history", "--results", str(asv_results), "-o", str(out)]) == 0
    assert out.exists() and str(out) in capsys.readouterr().out
    assert cli.main(["history", "--results", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip()
    assert "no benchmark history yet" in err and "\n" not in err and "Traceback" not in err
    assert "about 5 minutes on 2 busy cores" in err  # what recording costs (walk 24: CI's asv run at load 8-9, 297 s)
    # the page that has the workflow, and both commands it needs: `asv run` alone refuses an unknown machine
    assert "docs/tracking.md" in err and "asv machine --yes --machine \"$M\"`" in err and "`asv run --machine" in err
    # with --python=same, asv saves nothing unless told which commit the checkout is
    assert "--set-commit-hash \"$(git rev-parse HEAD)\"" in err and "`M=\"$(harness asv-machine)\";" in err
    # each command fits a 100-column line, so a wrapped terminal keeps it whole to paste (walk 10)
    assert all(len(command) <= 96 for command in re.findall(r"`[^`]+`", err))
    assert (Path(__file__).parents[2] / "docs" / "tracking.md").exists()
    with pytest.raises(HistoryError):
        load(tmp_path / "nothing")


@pytest.mark.browser
@pytest.mark.skipif(os.environ.get("HARNESS_NO_BROWSER") == "1", reason="HARNESS_NO_BROWSER=1")
def test_history_in_a_browser_offline(speedup_results: tuple[Path, list[str]], tmp_path: Path) -> None:
    from .test_browser import assert_laid_out, chromium, console_messages, page_requests

    root, _commits = speedup_results
    page = write_history(load(root), root, tmp_path / "history.html")
    netlog = tmp_path / "net.json"  # what the page asked the network for (test_browser proves this catches a fetch)
    dom = chromium(page, tmp_path / "profile", "--host-resolver-rules=MAP * ~NOTFOUND", f"--log-net-log={netlog}",
                   "--dump-dom")
    assert console_messages(dom.stderr) == [] and page_requests(netlog) == []
    drawn = page.read_text().count("<svg")
    assert drawn > 20 and dom.stdout.count("<svg") == drawn and dom.stdout.count("<path") > 20 * drawn
    assert_laid_out(page, tmp_path)  # within 1280 px, no label over another


TRACKS = ("track_time_ratio", "track_interval", "track_busy")


def write_tracked(root: Path, ratio: list[float], interval: list[float], point: str = "e:a/fast") -> Path:
    """The speedups suite's asv results for one point: its time ratio and interval at each commit."""
    names = {track: f"speedups.MainJob.{track}" for track in TRACKS}
    write_meta(root, "box-cpu", {name: {"name": name, "type": "track", "unit": "x", "param_names": ["point"],
                                        "params": [[repr(point)]], "version": "1"} for name in names.values()})
    for i, values in enumerate(zip(ratio, interval, [0.0] * len(ratio))):
        write_run(root, "box-cpu", i, {names[t]: [[v], [[repr(point)]], "1", 0, 1.0] + [None] * 6
                                       for t, v in zip(TRACKS, values)})
    return root


def _fifo_in_place_of(name: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = next(root.rglob(name))
        path.unlink()
        os.mkfifo(path)
    return edit


def _over_the_cap(root: Path) -> None:
    with open(root / "box-cpu" / "big-existing-py.json", "wb") as fh:
        fh.truncate(RESULTS_CAP + 1)  # sparse: no disk spent


def _memory_limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # an unbounded loop fails in seconds


FINE = ([0.5, 0.5, 0.5], [1.1, 1.1, 1.1])


@pytest.mark.parametrize("ratio, interval, point, edit, code, said", [
    ([0.5, math.inf, 0.5], FINE[1], "e:a/fast", None, 0, "track_time_ratio('e:a/fast') = inf"),
    ([1e308, 1e-320, 0.5], FINE[1], "e:a/fast", None, 0, "track_time_ratio('e:a/fast') = 1e-320"),
    ([0.5, -0.5, 0.5], FINE[1], "e:a/fast", None, 0, "track_time_ratio('e:a/fast') = -0.5"),
    (FINE[0], [1.1, -1.2, 1.1], "e:a/fast", None, 0, "track_interval('e:a/fast') = -1.2"),
    ([0.5, 0.005, 0.005], [1.1, 1e308, 1.1], "e:a/fast", None, 0, None),
    (*FINE, "e:a/$\\fakecmd{x}$", None, 0, None),
    (*FINE, "e:a/fast", _fifo_in_place_of("01abab*.json"), 0, "01ababab-existing-py.json: not a regular file"),
    (*FINE, "e:a/fast", _fifo_in_place_of("machine.json"), 0, None),
    (*FINE, "e:a/fast", _over_the_cap, 0, f"big-existing-py.json: {RESULTS_CAP + 1:,} bytes, over {RESULTS_CAP:,}"),
    (*FINE, "e:a/fast", _fifo_in_place_of("benchmarks.json"), 2, "benchmarks.json: not a regular file"),
], ids=["infinite ratio", "1e308 then 1e-320", "negative ratio", "negative interval", "interval 1e308",
        "mathtext in a name", "FIFO result file", "FIFO machine.json", "result file over the cap",
        "FIFO benchmarks.json"])
def test_asv_results_are_data(ratio: list[float], interval: list[float], point: str,
                              edit: Callable[[Path], None] | None, code: int, said: str | None, tmp_path: Path) -> None:
    """What no usable asv result holds is skipped with one warning line naming the file and the
    benchmark (or, for the metadata every series needs, refused in one line): never a traceback,
    a parser's crash, a hang, or memory grown without bound (the CLI in a process of its own,
    under a memory limit and a timeout)."""
    root = write_tracked(tmp_path / "asv", ratio, interval, point)
    if edit is not None:
        edit(root)
    page = tmp_path / "h.html"
    done = subprocess.run([sys.executable, "-m", "harness", "history", "--results", str(root), "-o", str(page)],
                          check=False, capture_output=True, text=True, timeout=300, preexec_fn=_memory_limit)
    assert (done.returncode, "Traceback" in done.stderr) == (code, False), done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if "skipped" in line]
    if code:
        assert said in done.stderr.strip().splitlines()[-1] and not page.exists()
    elif said is None:
        assert warnings == [] and page.exists()
    else:
        [warning] = warnings
        assert warning.startswith("warning: 1 asv result skipped: ") and said in warning and page.exists()
    if point != "e:a/fast":  # drawn as written (asv keeps a parameter's repr: its backslash doubled)
        assert re.search(r"<svg.*>\$\\+fakecmd\{x\}\$</text>", page.read_text(), re.DOTALL)


def _lone_commit(tmp_path: Path, points: list[str], values: list[list[float | None]]) -> str:
    """The page of one commit on vm-cpu whose tracks (TRACKS, in order) give `values`, one per point."""
    root = tmp_path / "one"
    names = {track: f"speedups.MainJob.{track}" for track in TRACKS}
    write_meta(root, "vm-cpu", {name: {"name": name, "type": "track", "unit": "x", "param_names": ["point"],
                                       "params": [[repr(p) for p in points]], "version": "1"} for name in names.values()})
    write_run(root, "vm-cpu", 0, {names[t]: [v, [[repr(p) for p in points]], "1", 0, 1.0] + [None] * 6
                                  for t, v in zip(TRACKS, values, strict=True)})
    return write_history(load(root), root, tmp_path / "history.html").read_text()


def test_one_commit_names_its_machines_and_an_unmeasured_analysis_gets_a_line(tmp_path: Path) -> None:
    """"Since 71972c3c: 0 regressions, 0 improvements, on no machine." with vm-cpu there, and an empty
    chart over a table of "-" for a point no run measured (issue 48)."""
    page = _lone_commit(tmp_path, ["e:spectrum/fast", "e:svd_topk/gone"], [[v, None] for v in (0.5, 1.3, 0.0)])
    headline = page[page.index('id="headline"'):page.index("<nav>")]
    assert re.search(r"Only <code>00ababab</code> has results, on\s+vm-cpu: nothing to compare it with yet", headline)
    assert "no machine" not in page
    assert ">e: spectrum</h3>" in page and ">e: svd_topk</h3>" not in page and page.count("<svg") == 1
    assert re.search(r"No speedup measured at any commit, on any machine, so no chart \(why, at the newest\s+commit\): "
                     r"e: svd_topk \(gone: not timed: skipped on a busy machine", page)


def test_a_fitted_exponent_of_any_sign_is_kept_and_drawn_on_a_linear_axis(tmp_path: Path) -> None:
    """scaling.Exponents writes numpy's exponent against the rank as about 0, -0.081 on a busy
    machine: a finite number of either sign is an exponent's value; NaN (not fitted) is not
    measured, and inf is still skipped."""
    root, name = tmp_path / "asv", "scaling.Exponents.track_exponent"
    points = ["'spectrum/numpy'", "'spectrum/factored'"]
    write_meta(root, "vm-cpu", {name: {"name": name, "type": "track", "unit": "exponent", "param_names": ["point"],
                                       "params": [points], "version": "1"}})
    for i, values in enumerate([[-0.081, 0.77], [0.0, math.nan], [0.011, math.inf]]):
        write_run(root, "vm-cpu", i, {name: [values, [points], "1", 0, 1.0] + [None] * 6})
    skipped: list[str] = []
    by = {s.params["point"]: [p.value for p in s.points] for s in load(root, skipped)}
    assert by == {"spectrum/numpy": [-0.081, 0.0, 0.011], "spectrum/factored": [0.77, None, None]}
    [why] = skipped
    assert "track_exponent('spectrum/factored') = inf, expected a finite number" in why
    page = write_history(load(root), root, tmp_path / "history.html").read_text()
    assert page.count("<svg") == 1 and ">spectrum/numpy</text>" in page and ">0.0</text>" in page  # a linear axis


def test_the_roof_shares_are_points_on_their_log_axis_hollow_over_the_roof() -> None:
    """Bars on a log axis had lengths that meant nothing, and a share over 100% was drawn as any
    other while run reports show it as -: points now, hollow over the roof (the dashed line)."""
    from matplotlib.collections import PathCollection

    from harness.report.history_charts import roof_figure
    shares = {("numpy", "vm-cpu"): 0.05, ("torch", "vm-cpu"): 1.8}
    ax = roof_figure(["numpy", "torch"], ["vm-cpu"], shares).axes[0]
    assert not ax.patches  # no bars
    drawn = {float(x): c for c in ax.collections if isinstance(c, PathCollection) for x, _ in c.get_offsets()}
    assert set(drawn) == {5.0, 180.0}
    assert drawn[5.0].get_facecolors()[0][3] > 0 and drawn[180.0].get_facecolors().size == 0  # hollow
    assert any(list(line.get_xdata()) == [100, 100] for line in ax.get_lines())


def test_a_lone_commit_with_no_speedup_does_not_say_its_speedups_are_below(tmp_path: Path) -> None:
    """Issue 48: "Its speedups are below" stood right above "No speedup measured at any commit"."""
    page = _lone_commit(tmp_path, ["e:svd_topk/gone"], [[None] for _ in TRACKS])
    headline = page[page.index('id="headline"'):page.index("<nav>")]
    assert "Its speedups are below" not in headline and "It has no speedup measured (below says why)" in headline
    assert "No speedup measured at any commit" in page


@pytest.mark.parametrize("busy", [0.0, 0.75])
def test_the_headline_says_when_the_newest_run_was_timed_on_a_busy_machine(busy: float, tmp_path: Path) -> None:
    """Walk-through 5: a page of `0.86x (too wide)` from an `asv run` at load 5-7 never said the
    machine was busy; the run's own report does (its `!` and unstable line)."""
    page = _lone_commit(tmp_path, ["e:spectrum/fast"], [[v] for v in (0.5, 1.3, busy)])
    headline = " ".join(page[page.index('id="headline"'):page.index("<nav>")].split())
    said = "On vm-cpu, 75% of the rounds at <code>00ababab</code> were timed while the machine was busy"
    assert (said in headline) == (busy > 0)
