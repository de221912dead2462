"""Shared fixtures: small matrices with known spectra and a tiny synthetic workload."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from harness.cli import main as cli
from harness.data.synthetic import SyntheticData, SyntheticSource
from harness.data.workload import Workload
from harness.record.run_record import RunRecord, load_record

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"

# pytest imports readline, which on a terminal sets COLUMNS and LINES in the C environment (not in
# os.environ): every harness process a test starts would read COLUMNS=80 as a width asked for and
# wrap its lines; a COLUMNS the tests were given, or a test sets, stays.
for _name in ("COLUMNS", "LINES"):
    if _name not in os.environ:
        os.unsetenv(_name)


def kernel_route(route: str, monkeypatch: pytest.MonkeyPatch, module: ModuleType, kernel: str) -> str:
    """A test's route: "compiled" through harness.linalg's numba `kernel` (skipped without
    numba), any other through the numpy or BLAS path `module` takes when load_kernel finds none."""
    if route != "compiled":
        monkeypatch.setattr(module, "load_kernel", lambda name: None)
    elif module.load_kernel(kernel) is None:
        pytest.skip("numba not installed (the `fast` extra)")
    return route


@pytest.fixture(scope="session", autouse=True)
def work_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Runs write results/ and .harness-cache/ into the working directory: keep the checkout
    clean, and no test reads another's cache."""
    here = Path.cwd()
    folder = tmp_path_factory.mktemp("cwd")
    os.chdir(folder)
    yield folder
    os.chdir(here)


@pytest.fixture(scope="session", autouse=True)
def no_wisdom() -> Iterator[None]:
    """Plans from the cost model alone, whatever earlier tests measured: a test that wants wisdom
    passes its own (harness.machine.wisdom), and runs in subprocesses inherit the setting."""
    before = os.environ.get("HARNESS_WISDOM")
    os.environ["HARNESS_WISDOM"] = "off"
    yield
    if before is None:
        os.environ.pop("HARNESS_WISDOM")
    else:
        os.environ["HARNESS_WISDOM"] = before


FORKSERVER_RUN = """import sys
import tests.run.worker_patches
from harness.bench.worker import start_forkserver
start_forkserver(["harness.run.subjects", "torch", "tests.run.worker_patches"])()
from harness.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def forkserver_run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`harness ARGS` in a fresh process whose timing workers carry tests/run/worker_patches' patches
    (chosen by `env`): its forkserver, started first, preloads them (the phase's later start changes
    nothing)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)  # `tests`, from any folder
    return subprocess.run([sys.executable, "-c", FORKSERVER_RUN, *args], env={**os.environ, "PYTHONPATH": path, **env},
                          capture_output=True, text=True, timeout=600)


def known_spectrum(m: int, n: int, s: np.ndarray, seed: int = 0) -> np.ndarray:
    """U diag(s) V^T with random orthonormal U, V: a matrix whose singular values are s."""
    rng = np.random.default_rng(seed)
    p = len(s)
    U, _ = np.linalg.qr(rng.standard_normal((m, p)))
    V, _ = np.linalg.qr(rng.standard_normal((n, p)))
    return (U * s) @ V.T


@pytest.fixture
def lora_workload() -> Workload:
    config = SyntheticData(adapters=3, layers=2, modules={"up": (40, 24), "down": (24, 40)}, rank=4)
    return Workload.from_source(SyntheticSource(config, seed=7))


@pytest.fixture
def dense_workload() -> Workload:
    config = SyntheticData(form="dense", adapters=2, layers=2, modules={"w": (30, 20)})
    return Workload.from_source(SyntheticSource(config, seed=7))


@pytest.fixture
def quiet_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run sees a quiet machine whatever else runs here: the limit never cuts a point's first
    round, so every compared point is timed (tests.run.worker_patches.QUIET, in this process)."""
    from harness.run import rounds
    from tests.run.worker_patches import no_conditions

    monkeypatch.setattr(rounds, "condition_reasons", no_conditions)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunRecord]:
    """A real run of the smoke spec with --report, once per session (report and compare tests),
    every compared point timed however busy the machine (tests.run.worker_patches.QUIET)."""
    from harness.run import rounds
    from tests.run.worker_patches import no_conditions

    folder = tmp_path_factory.mktemp("smoke") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rounds, "condition_reasons", no_conditions)
        assert cli.main(["run", str(CONFIGS / "smoke.toml"), "-o", str(folder), "--report"]) == 0
    return folder, load_record(folder)


def ctrl_c_delivered() -> None:
    """A child's preexec_fn: a shell that starts a job in the background (as CI may start this
    suite) ignores SIGINT in it, the child inherits that, and Python then rightly leaves Ctrl-C
    ignored; the child starts with the default disposition, as under an interactive terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
