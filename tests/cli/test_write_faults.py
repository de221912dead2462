"""Where results cannot go (issue 15): a full disk, a read-only folder, a workload too large to
hold. Each ends in one line naming the folder and the numbers, exit 2, and leaves a whole record
marked incomplete or nothing; a result cache that refuses writes costs only the caching."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import harness.run.prepare
from harness.plan import footprint
from harness.cli.main import main
from harness.data.synthetic import SyntheticData, SyntheticSource
from harness.data.workload import Census
from harness.machine.info import probe
from harness.specs.reading import load_spec
from harness.base.units import format_bytes
from tests.cli.test_bad_inputs import SMOKE, one_line, spec, tree

Mount = Callable[[str, str], Path]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Mount]:
    """Mounts a small tmpfs (`options`, e.g. "size=64k" or "ro"); skips where mounting is not allowed."""
    mounted: list[Path] = []

    def mount(name: str, options: str) -> Path:
        target = tmp_path / name
        target.mkdir()
        if shutil.which("mount") is None:
            pytest.skip("no mount command")
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
        mounted.append(target)
        return target

    yield mount
    for target in mounted:
        subprocess.run(["umount", str(target)], check=False)


# "phase: 2/3 (item) in 1.2 s", "phase (item) in 1.2 s", "top3: rounds: 2 of the 5 planned; ..."
PROGRESS = re.compile(r"^\S.* in [\d.]+ (µs|ms|s)$|^\S+: rounds: \d")


def run_lines(captured: str) -> list[str]:
    """stderr less the progress lines a run prints while it works."""
    assert "Traceback" not in captured, captured
    return [line for line in captured.splitlines() if not PROGRESS.match(line) and line.strip()]


@pytest.mark.parametrize("key, value, matrices", [("adapters", "1000000000", "4,000,000,000"),
                                                  ("layers", "100000000", "800,000,000")])
def test_an_oversized_synthetic_workload_is_refused_before_it_is_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    key: str, value: str, matrices: str,
) -> None:
    def listed(self: SyntheticSource) -> None:
        raise AssertionError("the matrix list was built")

    monkeypatch.setattr(SyntheticSource, "refs", listed)
    path = spec(tmp_path)
    assert main(["plan", str(path), "--set", f"data.{key}={value}"]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"{path}: data: {matrices} matrices of ") and "(the matrix list " in line
    assert line.endswith(f"this machine has {format_bytes(probe().memory_available)} available; analyse fewer matrices")


def test_a_workload_over_the_machines_memory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    small = probe().model_copy(update={"memory_available": 2**20})
    monkeypatch.setattr(harness.run.prepare, "probe", lambda: small)
    path = spec(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(path), "--set", "data.adapters=1000"]) == 2
    assert one_line(capsys.readouterr().err) == (
        f"{path}: data: 4,000 matrices of 1,000 adapters keep 7.7 MiB in memory for the whole run (the matrix list 5.7 MiB, "
        "spectra 2.0 MiB); this machine has 1.0 MiB available; analyse fewer matrices")
    assert tree(tmp_path) == {"spec.toml"}


def test_the_footprint_counts_what_the_run_keeps_and_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text("""
[experiment]
name = "f"
[data]
source = "synthetic"
adapters = 3
layers = 2
rank = 4
modules = {up = [40, 8], down = [8, 40], sq = [16, 16]}
[[analysis]]
op = "svdvals"
features = ["spectral_norm", "stable_rank"]
[[analysis]]
op = "svd_topk"
k = 3
features = ["subspace_similarity"]
[[analysis]]
op = "pca"
components = 2
axes = true
""")
    s = load_spec(path)
    source = SyntheticSource(SyntheticData.model_validate(s.data.model_dump()), 0)
    census = source.census()
    assert census == Census.of(source.refs()) == Census({(40, 8): 6, (8, 40): 6, (16, 16): 6}, 3)
    fp = footprint.footprint(s, census)
    spectra = 6 * (8 + 8 + 16) * 8 + 6 * (3 + 3 + 3) * 8
    assert fp.held == {"the matrix list": 18 * footprint.REF_BYTES, "spectra": spectra,
                       "top-k bases": 6 * (40 * 3 + 8 * 3 + 16 * 3) * 4}
    assert fp.written["spectra.npz"] == spectra + 36 * footprint.NPZ_ENTRY_BYTES
    assert fp.written["features.csv"] == 18 * 3 * footprint.CSV_ROW_BYTES
    assert fp.written["axes-*.npy"] == 2 * 2 * (40 * 8 + 8 * 40 + 16 * 16) * 4  # per adapter, float32


def test_a_full_disk_is_refused_before_the_run_starts(tmpfs: Mount, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    full = tmpfs("full", "size=64k")
    assert main(["run", SMOKE, "-o", str(full / "out"), "--no-cache"]) == 2
    (line,) = run_lines(capsys.readouterr().err)
    assert line.startswith(f"{full / 'out'}: the run will write ") and "and the disk has 64.0 KiB free" in line
    assert tree(full) == set()


def test_a_disk_reported_full_is_refused_with_the_cache_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    real = os.statvfs

    def nearly_full(path: object) -> os.statvfs_result:
        usage = real(path)  # type: ignore[arg-type]
        fields = list(usage)
        fields[4] = 4 * 2**20 // usage.f_frsize  # f_bavail: 4 MiB free
        return os.statvfs_result(fields)

    monkeypatch.setattr(footprint.os, "statvfs", nearly_full)
    path = spec(tmp_path)
    assert main(["run", str(path), "--set", "data.adapters=1000", "--set", 'data.modules={a=[512,512]}']) == 2
    (line,) = run_lines(capsys.readouterr().err)
    assert line.startswith("results/t/") and " and .harness-cache: the run will write " in line
    assert "the result cache " in line and "and the disk has 4.0 MiB free" in line
    assert tree(tmp_path) == {"spec.toml"}


def test_a_read_only_output_folder_is_refused_before_the_run(tmpfs: Mount,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    read_only = tmpfs("ro", "ro,size=64k")
    assert main(["run", SMOKE, "-o", str(read_only / "out")]) == 2
    assert one_line(capsys.readouterr().err) == (
        f"{read_only}: cannot write here (a read-only file system, or permissions); expected a writable "
        f"folder to hold {read_only / 'out'}; choose another with -o")


def test_a_disk_that_fills_during_the_run_leaves_a_whole_incomplete_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first spectra.npz goes in with the first record; every later write finds the disk full."""
    import harness.run.runner

    real = harness.run.runner.save_spectra
    calls: list[int] = []

    def filling(spectra: dict[str, np.ndarray], folder: Path) -> Path:
        calls.append(len(spectra))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(spectra, folder)

    monkeypatch.setattr(harness.run.runner, "save_spectra", filling)
    out = tmp_path / "out"
    assert main(["run", SMOKE, "-o", str(out), "--no-cache"]) == 2
    assert run_lines(capsys.readouterr().err) == [
        f"{out}: cannot write spectra.npz: No space left on device; free space there or choose another folder with -o"]
    assert tree(out) == {"record.json", "spectra.npz"}  # no temporary file left behind
    record = json.loads((out / "record.json").read_text())
    assert record["complete"] is False and len(record["analyses"]) == 0
    assert dict(np.load(out / "spectra.npz")) == {}


def test_a_record_that_cannot_be_written_at_all_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    import harness.run.runner

    def refused(*args: object) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(harness.run.runner, "save_spectra", refused)
    out = tmp_path / "out"
    assert main(["run", SMOKE, "-o", str(out), "--no-cache"]) == 2
    assert run_lines(capsys.readouterr().err) == [
        f"{out}: cannot write spectra.npz: Permission denied; free space there or choose another folder with -o"]
    assert not out.exists()


def test_a_read_only_cache_costs_the_caching_not_the_results(tmpfs: Mount, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    store = tmpfs("store", "ro,size=64k")
    path = tmp_path / "s.toml"
    path.write_text(Path(SMOKE).read_text().replace("[execution]", f'[execution]\ncache_dir = "{store}"'))
    assert main(["run", str(path), "-o", str(tmp_path / "out")]) == 0
    warnings = [line for line in run_lines(capsys.readouterr().err) if "result cache" in line]
    assert warnings == [f"warning: cannot write to the result cache {store} (Read-only file system); this run's "
                        "results are not cached (execution.cache_dir, or --no-cache)"]
    assert json.loads((tmp_path / "out" / "record.json").read_text())["complete"] is True
