"""The Dask dashboard's link reaches the user: our LocalCluster puts it on a random port, so a run
that does not print it hides it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.base.executors import dashboard_line, dask_executor
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
    assert dashboard_line(FakeClient(link), local=False) == "dask dashboard: not available (pip install bokeh)"


def test_a_joined_schedulers_link_is_shown_as_it_is() -> None:
    assert dashboard_line(FakeClient("http://host:8787/status"), local=False) == "dask dashboard: http://host:8787/status"


def test_a_started_local_cluster_reports_its_dashboard() -> None:
    pytest.importorskip("distributed")
    lines: list[str] = []
    with dask_executor(None, 1, 1, on_link=lines.append) as executor:
        assert len(lines) == 1  # before any work is handed out
        assert executor.submit(pow, 2, 5).result() == 32
    assert shows_link(lines[0]), lines


def test_a_joined_scheduler_reports_its_dashboard() -> None:
    distributed = pytest.importorskip("distributed")
    lines: list[str] = []
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
        with dask_executor(cluster.scheduler_address, 1, 1, on_link=lines.append) as executor:
            assert executor.submit(pow, 3, 2).result() == 9
    assert len(lines) == 1 and shows_link(lines[0]), lines


@pytest.mark.slow
def test_a_dask_run_prints_the_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    args = ["run", str(CONFIGS / "smoke.toml"), "-o", str(tmp_path / "run"), "--no-cache",
            "--set=execution.executor='dask'", "--set=execution.workers=1"]
    assert cli.main(args) == 0
    said = capsys.readouterr()
    assert any(shows_link(line.strip()) for line in (said.err + said.out).splitlines()), said.err
