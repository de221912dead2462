"""No command works in silence: what takes seconds (reading records, testing groups, drawing
charts) runs inside a progress phase, which a terminal shows live and a pipe as one line at its
end. Checked structurally, by which phase is open when the slow work is called, not by timing."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harness.base.progress import Display
from harness.cli import main as cli
from harness.record.run_record import RunRecord, save_record


@pytest.fixture
def phases(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The descriptions of the phases open right now, innermost last."""
    open_now: list[str] = []
    real = Display.phase

    @contextmanager
    def phase(self: Display, description: str, *args: Any, **kwargs: Any) -> Iterator[Any]:
        open_now.append(description)
        try:
            with real(self, description, *args, **kwargs) as p:
                yield p
        finally:
            open_now.pop()

    monkeypatch.setattr(Display, "phase", phase)
    return open_now


def watched(calls: dict[str, list[str]], name: str, phases: list[str], work: Callable[..., Any]) -> Callable[..., Any]:
    """`work`, noting which phases were open each time it ran."""
    def call(*args: Any, **kwargs: Any) -> Any:
        calls.setdefault(name, []).append(phases[-1] if phases else "")
        return work(*args, **kwargs)
    return call


def test_compare_reads_tests_and_draws_inside_phases(smoke_run: tuple[Path, RunRecord], tmp_path: Path,
                                                     phases: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cli.commands import compare
    from harness.report import html

    calls: dict[str, list[str]] = {}
    for name in ("load_record", "compare_records"):
        monkeypatch.setattr(compare, name, watched(calls, name, phases, getattr(compare, name)))
    monkeypatch.setattr(html, "write_compare", watched(calls, "write_compare", phases, html.write_compare))
    b = tmp_path / "b"
    shutil.copytree(smoke_run[0], b)
    assert smoke_run[1].bench is not None  # a second run of its own: compare refuses one run twice
    save_record(smoke_run[1].model_copy(update={"bench": smoke_run[1].bench.model_copy(update={"run_id": "b"})}), b)
    assert cli.main(["compare", str(smoke_run[0]), str(b), "--html", str(tmp_path / "c.html")]) == 0
    assert calls == {"load_record": ["comparing runs"] * 2, "compare_records": ["comparing runs"],
                     "write_compare": ["rendering the comparison"]}


def test_report_and_history_draw_inside_phases(smoke_run: tuple[Path, RunRecord], tmp_path: Path,
                                               phases: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cli.commands import history
    from harness.report import html

    calls: dict[str, list[str]] = {}
    monkeypatch.setattr(html, "write_report", watched(calls, "write_report", phases, lambda folder, out: out))
    monkeypatch.setattr(history, "load", watched(calls, "load", phases, lambda where, skipped: []))
    monkeypatch.setattr(history, "write_history", watched(calls, "write_history", phases, lambda r, d, out, since: out))
    assert cli.main(["report", str(smoke_run[0]), "-o", str(tmp_path / "r.html")]) == 0
    assert cli.main(["history", "--results", str(tmp_path), "-o", str(tmp_path / "h.html")]) == 0
    assert calls == {"write_report": ["rendering the report"], "load": ["drawing asv's history"],
                     "write_history": ["drawing asv's history"]}
