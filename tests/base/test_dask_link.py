"""The Dask dashboard's link reaches the user: our LocalCluster puts it on a random port, so a run
that does not print it hides it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.base.executors import dashboard_line
from tests.conftest import CONFIGS


def shows_link(line: str) -> bool:
    return line.startswith("dask dashboard: ") and ("http" in line or "not available" in line)


class FakeClient:
    def __init__(self, link: object) -> None:
        self.link = link

    @property
    def dashboard_link(self) -> object:
        if isinstance(self.link, Exception):
            raise self.link
        return self.link


@pytest.mark.parametrize("link", [None, "", KeyError("dashboard")])
def test_no_dashboard_says_how_to_get_one(link: object) -> None:
    assert dashboard_line(FakeClient(link)) == "dask dashboard: not available (pip install bokeh)"


def test_a_link_says_when_its_page_would_be_empty() -> None:
    line = dashboard_line(FakeClient("http://host:8787/status"))
    assert shows_link(line)
    assert line.endswith("(empty without bokeh: pip install bokeh)") == (importlib.util.find_spec("bokeh") is None)


@pytest.mark.slow
def test_a_dask_run_prints_the_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    args = ["run", str(CONFIGS / "smoke.toml"), "-o", str(tmp_path / "run"), "--no-cache",
            "--set=execution.executor='dask'", "--set=execution.workers=1"]
    assert cli.main(args) == 0
    said = capsys.readouterr()
    assert any(shows_link(line.strip()) for line in (said.err + said.out).splitlines()), said.err
