"""`harness history` over asv results written the way asv writes them: series per machine, CPU
and GPU apart, asv's steps, and the page in a real browser with every chart drawn, offline."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.report.history import HistoryError, load
from harness.report.history_page import write_history

pytest.importorskip("asv")

NAME = "ops.Svdvals.time_compute"
PARAMS = [["'numpy'", "'torch'"], ["'256x256'"]]


def write_asv_results(root: Path, machine: str, levels: dict[str, list[float]]) -> None:
    """One asv (format 2) result file per commit: `levels[strategy][i]` seconds at commit i."""
    (root / machine).mkdir(parents=True)
    (root / machine / "machine.json").write_text(json.dumps({"machine": machine, "version": 1}))
    (root / "benchmarks.json").write_text(json.dumps({
        NAME: {"name": NAME, "type": "time", "unit": "seconds", "param_names": ["strategy", "case"],
               "params": PARAMS, "version": "1"}, "version": 2}))
    columns = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
               "stats_q_25", "stats_q_75", "stats_number", "stats_repeat"]
    for i in range(len(next(iter(levels.values())))):
        values = [levels[s.strip("'")][i] for s in PARAMS[0]]
        commit = f"{i:02d}" + "ab" * 19
        result = [values, PARAMS, "1", 1_700_000_000_000 + i, 1.0, [v * 0.9 for v in values],
                  [v * 1.1 for v in values], [v * 0.95 for v in values], [v * 1.05 for v in values],
                  [1, 1], [5, 5]]
        (root / machine / f"{commit[:8]}-existing-py.json").write_text(json.dumps({
            "commit_hash": commit, "env_name": "existing-py", "date": 1_700_000_000_000 + 86_400_000 * i,
            "params": {"machine": machine}, "python": "3.11", "requirements": {}, "env_vars": {},
            "result_columns": columns, "results": {NAME: result}, "durations": {}, "version": 2}))


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
    assert "no asv results here" in err and "\n" not in err and "Traceback" not in err
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
