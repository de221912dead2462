"""Noise: the verdicts on dispersion and conditions, and a real measurement beside busy
processes, which must be flagged."""

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from harness.bench import conditions
from harness.bench.conditions import Conditions, Snapshot, between
from harness.bench.noise import EARLIER, cause_rank, condition_reasons, dispersion_reasons, judge
from harness.bench.statistics import drift_reason

QUIET = Conditions(cores=2, load_before=0.3, load_after=0.5, running_before=1, running_after=2,
                   others_cpu=0.02, steal=0.0)


def test_a_steady_measurement_is_not_flagged() -> None:
    assert judge([0.100, 0.101, 0.099, 0.102, 0.100], QUIET) == []
    assert judge([0.1, 0.11], QUIET) == []
    assert judge([0.1], None) == []


def test_dispersion_reasons() -> None:
    assert dispersion_reasons([0.1, 0.1, 0.2, 0.2]) == ["IQR 67% of median"]
    assert dispersion_reasons([0.1, 0.2]) == ["2 samples differ by 2.0x"]
    bimodal = dispersion_reasons([0.010, 0.011, 0.010, 0.030, 0.031, 0.030, 0.029])
    assert bimodal[-1] == "bimodal: 3 samples near 10.0 ms, 4 near 30.0 ms"


def test_condition_reasons() -> None:
    busy = QUIET.model_copy(update={"load_after": 18.4, "others_cpu": 0.85, "steal": 0.12})
    assert condition_reasons(busy) == [
        "other processes took 85% of the 2 CPUs",
        "CPU steal 12% (the hypervisor ran other guests)",
        "load 18.4 on 2 cores",
    ]


def test_others_share_is_all_cpu_time_less_ours() -> None:
    before = Snapshot(load=1.0, running=1, cpu_total=1000, cpu_busy=100, cpu_steal=0, own=50)
    after = Snapshot(load=1.0, running=3, cpu_total=1200, cpu_busy=280, cpu_steal=10, own=80)
    c = between(before, after, cores=2)
    assert c.others_cpu == pytest.approx((180 - 30) / 200)
    assert c.steal == pytest.approx(10 / 200)
    assert c.running_after == 3


def test_too_short_an_interval_says_nothing() -> None:
    s = Snapshot(load=1.0, running=1, cpu_total=1000, cpu_busy=100, cpu_steal=0, own=50)
    t = Snapshot(load=1.0, running=1, cpu_total=1005, cpu_busy=105, cpu_steal=0, own=50)
    assert between(s, t, 2).others_cpu is None


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc")
def test_own_time_counts_child_processes() -> None:
    """A pool's workers are ours: their CPU time must not read as other processes'."""
    before = conditions.own_jiffies()
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys\nx = 0\nfor i in range(20_000_000): x += i\n"
         "print('done', flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "done"
        fields = conditions._stat_fields(open(f"/proc/{child.pid}/stat").read())
        child_jiffies = int(fields[11]) + int(fields[12])
        after = conditions.own_jiffies()
    finally:
        child.communicate("")
    assert before is not None and after is not None
    assert child_jiffies > 10 and after - before >= child_jiffies


SPIN = "print('ready', flush=True)\nwhile True: pass"
# started by a parent that exits at once, so the spinner is not our descendant (our own
# children count as this process's work, as a pool's workers must)
DETACH = ("import subprocess, sys\n"
          "p = subprocess.Popen([sys.executable, '-c', sys.argv[1]])\n"
          "print(p.pid, flush=True)")


@pytest.fixture
def busy_processes() -> Iterator[list[int]]:
    """One spinning process per core, not ours, each running once it has said so; their pids."""
    cores = len(os.sched_getaffinity(0))
    pids = []
    try:
        for _ in range(cores):
            starter = subprocess.Popen([sys.executable, "-c", DETACH, SPIN], stdout=subprocess.PIPE, text=True)
            assert starter.stdout is not None
            pids.append(int(starter.stdout.readline()))
            assert starter.stdout.readline().strip() == "ready"
            starter.wait()
        yield pids
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)


def cpu_jiffies(pids: list[int]) -> int:
    return sum(int(f[11]) + int(f[12]) for f in (conditions._stat_fields(open(f"/proc/{p}/stat").read()) for p in pids))


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc")
def test_a_round_beside_busy_processes_is_flagged(busy_processes: list[int]) -> None:
    """A round's conditions (read before and after it, as the rounds do): each call waits for an
    event, not a time (the spinners having run 10 more clock ticks), so the round spans their work
    however busy the machine is."""
    def until_they_spun() -> None:
        start = cpu_jiffies(busy_processes)
        while cpu_jiffies(busy_processes) - start < 10:
            os.sched_yield()

    cores = len(os.sched_getaffinity(0))
    before = conditions.snapshot()
    for _ in range(6):
        until_they_spun()
    reasons = condition_reasons(conditions.between(before, conditions.snapshot(), cores))
    assert any(r.startswith("other processes took") for r in reasons), reasons


def test_reasons_that_are_ranges_already_merge_into_one_range() -> None:
    """Two runs' `load 4.8-5.2` and `load 4.9-5.7` (earlier runs' rounds) read `load
    4.8-5.2-4.9-5.7` in compare (walk-through 4); they are one cause and one range."""
    from harness.bench.noise import cause_key, reason_range

    assert reason_range(["load 4.8-5.2 on 2 cores", "load 4.9-5.7 on 2 cores"]) == "load 4.8-5.7 on 2 cores"
    assert reason_range(["other processes took 67-68% of the 2 CPUs", "other processes took 70% of the 2 CPUs"]) == (
        "other processes took 67-70% of the 2 CPUs")
    assert cause_key("load 4.8-5.2 on 2 cores") == cause_key("load 6.1 on 2 cores")


def test_causes_have_one_order_by_kind_the_machines_first() -> None:
    """Summaries sorted causes by how many measurements they flagged, so their order flipped between
    runs (walk 15); every producer's reason has its place, earlier runs' too, an unknown one last."""
    busy = Conditions(cores=2, load_before=9.0, load_after=9.0, running_before=1, running_after=2, others_cpu=0.7, steal=0.2)
    machine = condition_reasons(busy)
    own = [*dispersion_reasons([1.0, 1.0, 1.0, 2.0, 2.0, 2.0]), drift_reason([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
           *dispersion_reasons([1.0, 2.0]), "flagged unstable"]
    assert [r.split()[0] for r in machine + own] == ["other", "CPU", "load", "IQR", "bimodal:", "drifting:", "2", "flagged"]
    assert sorted(reversed(machine + own), key=cause_rank) == machine + own
    assert cause_rank(EARLIER + machine[2]) == cause_rank(machine[2])
