"""The report in a real browser: headless Chromium renders it without console messages, shows
the record's numbers, and takes a screenshot. Chromium missing fails the test (CI installs it);
HARNESS_NO_BROWSER=1 skips it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.report.html import REPORT
from harness.results import RunRecord

from .test_html import key_numbers

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(os.environ.get("HARNESS_NO_BROWSER") == "1", reason="HARNESS_NO_BROWSER=1"),
]

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One headless Chromium run on `page` with an empty profile and console logging on stderr."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    assert binary, "chromium not found: apt-get install -y chromium chromium-driver (or HARNESS_NO_BROWSER=1)"
    profile.mkdir(exist_ok=True)
    return subprocess.run(
        [binary, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args, page.as_uri()],
        capture_output=True, text=True, timeout=60, check=True,
    )


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_console_messages_are_detected(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text('<html><body><script>console.error("boom")</script></body></html>')
    result = chromium(page, tmp_path / "profile", "--dump-dom")
    assert any('"boom"' in line for line in console_messages(result.stderr))


def test_report_in_browser(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    folder, record = smoke_run
    dom = chromium(folder / REPORT, tmp_path / "p1", "--dump-dom")
    assert console_messages(dom.stderr) == []
    missing = [n for n in key_numbers(record) if n not in dom.stdout.replace("&amp;", "&").replace("&#39;", "'")]
    assert missing == []
    shot = tmp_path / "report.png"
    result = chromium(folder / REPORT, tmp_path / "p2", "--window-size=1200,3000", f"--screenshot={shot}")
    assert console_messages(result.stderr) == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    if target := os.environ.get("HARNESS_SCREENSHOT"):  # to look at it: HARNESS_SCREENSHOT=/tmp/x.png
        shutil.copy(shot, target)
