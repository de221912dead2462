"""The tables a person reads fit 100 columns without splitting a word (issue 33): checked in
fixed-width emulated terminals at 100 and 160 columns, never the machine's own."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from harness.bench.conditions import Conditions
from harness.machine.info import probe
from harness.machine.wisdom import Observation, Wisdom
from harness.machine.roofline import Roof
from harness.report.fitting import Fitted
from harness.report.machine_view import system_lines, wisdom_tables
from harness.report.plan_view import plan_table
from harness.run.prepare import prepare
from tests.conftest import CONFIGS


def screen(renderables: list[object], width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None, force_terminal=True)  # a terminal: notes wrap
    for r in renderables:
        console.print(r)
    return console.export_text()


def drawn_words(renderables: list[object], width: int) -> set[str]:
    """Every word of what is drawn at `width`: of a table, the cells of the columns it keeps."""
    console = Console(width=width, file=io.StringIO())
    words: set[str] = set()
    for r in renderables:
        if isinstance(r, Fitted):
            table = r.fit(console, width)
            words |= {w for c in table.columns for cell in [c.header, *c._cells] for w in str(cell).split()}
        else:
            words |= set(Text.from_markup(str(r)).plain.split())
    return words


def assert_fits(renderables: list[object], width: int) -> None:
    text = screen(renderables, width)
    assert max(len(line) for line in text.splitlines()) <= width
    split = drawn_words(renderables, width) - set(text.split())
    assert not split, f"split across lines at {width} columns: {sorted(split)[:20]}"


@pytest.fixture(scope="module")
def plan() -> object:
    return prepare(CONFIGS / "task_geometry.toml", ["benchmark.budget='20s'"]).plan


@pytest.mark.parametrize("width", [100, 160])
def test_the_plan_fits_without_splitting_a_word(plan: object, width: int) -> None:
    table = [plan_table(plan)]  # type: ignore[arg-type]
    assert_fits(table, width)


@pytest.mark.parametrize("width", [90, 100, 160])
def test_the_plans_header_is_one_line_and_its_batches_fit_or_are_summarised(plan: object, width: int) -> None:
    """Walk 12, at 100 columns: `est. (whole` / `analysis)` over two lines, and the batch cell
    `3072x768r16:1064,` / `768x3072r16:1064` wrapped under itself."""
    fitted = plan_table(plan)  # type: ignore[arg-type]
    text = screen([fitted], width)
    header = next(line for line in text.splitlines() if line.startswith("analysis"))
    assert header.split() == ["analysis", "op", "strategy", "device", "est.", "batch"]
    assert "est.: of the whole analysis" in text.splitlines()
    full = "3072x768r16:1064, 768x3072r16:1064"
    batches = [cell.plain for cell in fitted.fit(Console(width=width, file=io.StringIO()), width).columns[-1]._cells]
    if width >= 100:
        assert batches[:2] == [full, full] and "shortened" not in text
    else:
        assert batches[:2] == ["1064 per batch, 2 groups"] * 2 and "(shortened at this width: batch;" in text
    assert sum(full in line or "per batch" in line for line in text.splitlines()) == 2  # one line a row


@pytest.mark.parametrize("width", [100, 160])
def test_calibrate_show_fits(width: int) -> None:
    roof = Roof(device="cpu", gemm_gflops={"float32": 27.4, "float64": 15.8}, bandwidth_gbs=44.7,
                measured="2026-11-24T05:40", by="harness calibrate --quick", libraries=["numpy", "torch"], threads=2)
    observations = [Observation(strategy=s, op="svd_topk", k=3, shape=(3072, 768), rank=16, dtype="float32",
                                device="numpy", threads=2, width=1, seconds=0.0123, flops=4.2e9, samples=14,
                                when="2026-11-24T05:40:00", source="harness calibrate --quick")
                    for s in ("scipy_svds", "torch_lowrank", "factored")]
    w = Wisdom(machine={"cpu": "AMD EPYC", "cores": "2"}, roofs={"cpu": roof}, observations=observations)
    shown = wisdom_tables(w, Path("/tmp/wisdom/4f48c278bc7dee00.json"))
    assert_fits(shown, width)
    if width == 160:
        assert "left out" not in screen(shown, width)


@pytest.mark.parametrize("width", [100, 160])
def test_system_lines_fit(width: int) -> None:
    c = Conditions(cores=2, load_before=3.2, load_after=3.4, running_after=5, others_cpu=0.93, steal=0.14)
    lines = system_lines(probe(), c)
    assert_fits(lines, width)
