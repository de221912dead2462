"""A timing worker stopped (SIGSTOP) or killed never hangs the run nor fails its verification: the
run ends, says which point's worker was lost, keeps what the others measured and leaves no
process behind, even when SIGTERM ends it while a worker is stopped; `harness.api.run` works from
a script piped to `python -`. Each run is a subprocess with a timeout: a regression fails, never hangs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from harness.base.processes import alive
from harness.cli.exit_codes import EXIT_OK, EXIT_TERMINATED
from harness.record.run_record import RECORD, load_record
from tests.conftest import CONFIGS, ROOT
from tests.run.worker_patches import STOP

SMOKE = str(CONFIGS / "smoke.toml")
ONE = ["--set", "analysis=[{op='svdvals', strategy='factored', compare=['numpy']}]", "--no-cache", "--budget", "0s"]
MARK = "HARNESS_TEST_MARK"  # every process of a run inherits it: found in /proc after the run
# the run with the stopping patch in its workers' forkserver, and a reply deadline of argv[1] s
RUN = """import sys
import tests.run.worker_patches
from harness.bench import worker
worker.ANSWER_FLOOR_S, worker.ANSWER_FACTOR = float(sys.argv[1]), 0.0
worker.start_forkserver(["harness.run.subjects", "tests.run.worker_patches"])()
from harness.cli.entry import main
sys.exit(main(sys.argv[2:]))
"""


def environment(**extra: str) -> tuple[dict[str, str], str]:
    mark = uuid.uuid4().hex
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, MARK: mark, **extra}, mark


def left_behind(mark: str) -> list[int]:
    """Processes still carrying the run's mark (multiprocessing's resource tracker, which ends on
    its own once the run's end of its pipe is closed, aside)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes()
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if f"{MARK}={mark}".encode() in env.split(b"\0") and b"resource_tracker" not in command and alive(int(entry)):
            found.append(int(entry))
    return found


def stopped_pids(folder: Path) -> list[int]:
    return [int(p.name) for p in folder.iterdir()]


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def factored_stops(tmp_path: Path) -> tuple[Path, dict[str, str], str, Path]:
    """The folder a stopping factored worker writes its pid into, the run's environment and marker,
    and its output folder."""
    marks = tmp_path / "stopped"
    marks.mkdir()
    env, mark = environment(**{STOP: f"factored={marks}"})
    return marks, env, mark, tmp_path / "run"


def test_a_stopped_worker_costs_its_point_only_and_is_no_verification_failure(tmp_path: Path) -> None:
    marks, env, mark, out = factored_stops(tmp_path)
    said = subprocess.run([sys.executable, "-c", RUN, "2", "run", SMOKE, "-o", str(out), *ONE], env=env,
                          capture_output=True, text=True, timeout=600)
    left = left_behind(mark)
    kill_all(left + stopped_pids(marks))
    assert said.returncode == EXIT_OK, said.stderr[-2000:]
    assert stopped_pids(marks) and not left
    (analysis,) = load_record(out).analyses
    assert [t.strategy for t in analysis.timings] == ["numpy"] and analysis.timings[0].groups
    (skipped,) = analysis.skipped
    assert skipped.strategy == "factored" and skipped.reason.startswith("worker stopped answering: no reply within")
    assert all(v.passed for v in analysis.verification)
    assert "Traceback" not in said.stdout + said.stderr


def test_sigterm_while_a_worker_is_stopped_writes_the_record_and_exits(tmp_path: Path) -> None:
    marks, env, mark, out = factored_stops(tmp_path)
    run = subprocess.Popen([sys.executable, "-c", RUN, "600", "run", SMOKE, "-o", str(out), *ONE], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 600
        while not (pids := stopped_pids(marks)) or Path(f"/proc/{pids[0]}/stat").read_text().rpartition(")")[2].split()[0] != "T":
            assert run.poll() is None and time.monotonic() < end, "the worker never stopped"
            time.sleep(0.05)
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=120)
    finally:
        run.kill()
        left = left_behind(mark)
        kill_all(left + stopped_pids(marks))
    assert run.returncode == EXIT_TERMINATED, err[-2000:]
    assert (out / RECORD).exists() and not load_record(out).complete
    assert not left


def test_api_run_from_a_script_piped_to_python_prints_nothing_and_times(tmp_path: Path) -> None:
    out, spec = tmp_path / "run", tmp_path / "one.toml"
    text = Path(SMOKE).read_text()
    spec.write_text(text[:text.index("[[analysis]]")] + "[[analysis]]\nop = 'svdvals'\nstrategy = 'factored'\n"
                    "compare = ['numpy']\n\n" + text[text.index("[execution]"):])
    script = (f"from harness import api\nrun = api.run({str(spec)!r}, {str(out)!r}, quiet=True, no_cache=True, "
              "budget='0s')\nprint(run.record.passed, sorted(t.strategy for a in run.record.analyses for t in a.timings))\n")
    env, mark = environment()
    said = subprocess.run([sys.executable, "-"], input=script, env=env, capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert said.stderr == "" and said.returncode == 0
    assert said.stdout.strip() == "True ['factored', 'numpy']"
    assert not left_behind(mark)
