"""Speedups from paired rounds (bench.series): pairing by round id, runs told apart by their ids,
rounds under load used only when quiet ones are too few, and the words of an unresolved one."""

from __future__ import annotations

import math

import pytest

from harness.bench.series import (Speedup, by_run, round_id, run_of, run_of_unit, settlement, speedup, unit_id, unit_of,
                                  within_half_width, workload_totals)


def line(run: str, values: list[float], start: int = 0) -> dict[str, float]:
    return {round_id(run, "a", start + i): v for i, v in enumerate(values)}


def test_a_round_id_names_its_process_and_run_and_rounds_group_by_them() -> None:
    rid = round_id(unit_id("3f2a9c", 2), "spectrum", 4)
    assert rid == "3f2a9c.2#spectrum#4" and unit_of(rid) == "3f2a9c.2" and run_of(rid) == "3f2a9c"
    assert run_of_unit("3f2a9c") == "3f2a9c"  # rounds before processes: the run is the unit
    assert by_run({**line("x", [1.0, 2.0]), **line("y", [3.0])}) == [[[1.0, 2.0]], [[3.0]]]
    assert by_run({**line("x.0", [1.0]), **line("x.1", [2.0]), **line("y.0", [3.0])}) == [[[1.0], [2.0]], [[3.0]]]


def test_rounds_pair_by_id_and_only_rounds_both_timed_count() -> None:
    base = line("r", [4.0, 4.0, 4.0])
    own = {**line("r", [1.0, 1.0]), round_id("r", "a", 9): 1.0}  # round 9: no baseline
    found = speedup(base, own, spread=0.05)
    assert found is not None and found.estimate == pytest.approx(4.0) and found.rounds == 2 and found.runs == 1
    assert speedup(base, line("other", [1.0])) is None


def test_two_runs_are_two_replicates() -> None:
    base = {**line("x", [4.0, 4.0]), **line("y", [4.0, 4.0])}
    own = {**line("x", [1.0, 1.0]), **line("y", [1.25, 1.25])}
    found = speedup(base, own)
    assert found is not None and found.runs == 2 and found.estimate == pytest.approx(math.sqrt(4.0 * 3.2))


def test_busy_rounds_are_used_only_when_quiet_ones_are_too_few() -> None:
    base, own = line("r", [4.0, 4.0, 4.0]), line("r", [1.0, 1.0, 2.0])
    busy = {round_id("r", "a", 2)}
    quiet = speedup(base, own, busy=busy)
    assert quiet is not None and quiet.estimate == pytest.approx(4.0) and quiet.busy == 0 and quiet.rounds == 2
    few = speedup(base, own, busy={round_id("r", "a", 1), round_id("r", "a", 2)})
    assert few is not None and few.busy == 2 and few.rounds == 3


def test_an_unresolved_speedup_says_why_in_words() -> None:
    found = speedup(line("r", [4.0, 4.0, 4.0]), line("r", [1.0, 1.01, 0.99]), spread=0.10)
    assert found is not None and not found.resolved(0.10) and found.resolved(0.40)
    why = settlement(found, 0.10).why
    assert why is not None and "3 rounds of 1 run" in why and "±10% between runs" in why
    assert settlement(found, 0.40) == settlement(found, 0.40).model_copy(update={"settled": True, "resolved": True})
    assert settlement(found, 0.40).why is None


def test_an_unresolved_speedup_counts_its_rounds_in_their_processes() -> None:
    """`3 rounds of 3 processes in 1 run` read as 3 rounds each; a round is one timing in one process."""
    own = {round_id(unit_id("r", p), "a", 0): v for p, v in enumerate([1.0, 1.5, 0.7])}
    base = {round_id(unit_id("r", p), "a", 0): 4.0 for p in range(3)}
    found = speedup(base, own, spread=0.10)
    assert found is not None and found.processes == 3 and found.rounds == 3
    why = settlement(found, 0.10).why
    assert why is not None and "3 rounds in 3 processes of 1 run" in why


def test_a_runs_own_spread_is_told_apart_from_the_machines() -> None:
    base, own = line("r", [4.0] * 4), line("r", [1.0, 1.01, 0.99, 1.0])
    assert within_half_width(base, own, "r") < 0.05 < within_half_width(base, line("r", [1.0, 1.5, 0.8, 1.2]), "r")
    assert within_half_width(base, own, "other") == math.inf


def test_workload_totals_scale_each_group_and_keep_rounds_that_timed_every_group() -> None:
    totals = workload_totals([(["a", "b"], [2.0, 4.0], 2, 10), (["a"], [1.0], 1, 3)])
    assert totals == {"a": 2.0 / 2 * 10 + 1.0 * 3}


def test_a_run_measured_entirely_under_load_says_little_of_the_next() -> None:
    base, own = line("r", [4.0, 4.0, 4.0]), line("r", [1.0, 1.01, 0.99])
    quiet = speedup(base, own, spread=0.05)
    loaded = speedup(base, own, spread=0.05, busy=set(own))
    assert quiet is not None and loaded is not None and loaded.busy == 3
    assert loaded.high / loaded.estimate > 2 > quiet.high / quiet.estimate


def test_processes_measured_entirely_under_load_say_little_of_the_next_run() -> None:
    """Three processes of one busy run that agree: the load varies from run to run, so the
    interval keeps BUSY_SPREAD as a run effect, and never settles on the machine's spread."""
    base = {round_id(unit_id("r", k), "a", 0): 4.0 for k in range(3)}
    own = {round_id(unit_id("r", k), "a", 0): v for k, v in enumerate([1.0, 1.01, 0.99])}
    loaded = speedup(base, own, busy=set(own))
    assert loaded is not None and loaded.processes == 3 and loaded.high / loaded.estimate > 2
    assert not settlement(loaded, 0.25).settled


def test_two_runs_of_processes_settle_on_the_machines_spread_and_say_it() -> None:
    """Processes 1.6x apart in two runs: more of them would leave the interval about as wide, so
    it settles, naming whose processes vary."""
    spread = [1.0, 1.3, 1.6]
    base = {round_id(unit_id(run, k), "a", 0): 4.0 * s for run in "xy" for k, s in enumerate(spread)}
    own = {round_id(unit_id(run, k), "a", 0): 1.0 for run in "xy" for k in range(3)}
    found = speedup(base, own)
    assert found is not None and found.runs == 2 and found.processes == 6
    said = settlement(found, 0.05, ("numpy", "factored"))
    assert said.settled and not said.resolved
    assert said.why is not None and "numpy varies 1.6x between processes on this machine" in said.why
    one = speedup({r: v for r, v in base.items() if r.startswith("x")}, own)
    assert not settlement(one, 0.05).settled  # one run cannot tell what more processes would leave


def test_two_runs_of_alike_processes_settle_on_the_runs_spread_and_say_it() -> None:
    """Processes within 2% of each other in two runs that agree: what is left is the spread the
    machine's runs are assumed to have until three show their own, said as the runs', not as 1.0x
    between processes."""
    base = {round_id(unit_id(run, k), "a", 0): 4.0 * (1 + 0.01 * k) for run in "xy" for k in range(3)}
    own = {round_id(unit_id(run, k), "a", 0): 1.0 for run in "xy" for k in range(3)}
    said = settlement(speedup(base, own), 0.25, ("numpy", "factored"))
    assert said.settled and not said.resolved and said.why is not None
    assert "runs on this machine differ by about ±15%, more than its processes do" in said.why


def test_runs_that_disagree_beyond_their_processes_do_not_settle() -> None:
    """Five planted runs 1,000x off and one run of three alike processes: what is left is between
    runs, not the machine's processes; the next run measures again."""
    base = {**{round_id(unit_id("x", k), "a", 0): 4.0 for k in range(3)},
            **{round_id(f"planted{i}", "a", 0): 4.0 for i in range(5)}}
    own = {**{round_id(unit_id("x", k), "a", 0): 1.0 * (1 + 0.1 * k) for k in range(3)},
           **{round_id(f"planted{i}", "a", 0): 1e-3 for i in range(5)}}
    found = speedup(base, own)
    assert found is not None and found.runs == 6 and found.run_share > 0.5
    assert not settlement(found, 0.25).settled


def test_an_interval_just_wider_than_the_target_never_reads_as_the_target() -> None:
    """±10.4% against ±10% asked for: the words round the width up, so they never say "±10% ...
    wider than the ±10% asked for"."""
    found = Speedup(estimate=2.0, low=2.0 / 1.104, high=2.0 * 1.104, rounds=4, runs=2, processes=6)
    why = settlement(found, 0.10).why
    assert why is not None and "interval ±11%" in why and "wider than the ±10% asked for" in why


def test_busy_runs_of_one_round_that_all_agree_on_a_speedup_stay_significant_as_they_pool() -> None:
    """Walk-through 6: one busy round a run, the strategy 16.3x, 10.8x, then 5.6x faster: the third
    run's pool read 0.672-147, "not significantly faster"; the assumed spread keeps its weight."""
    base, own, busy = {}, {}, set()
    for run, ratio in (("r1", 16.27), ("r2", 10.84), ("r3", 5.55)):
        base |= line(run, [1.0])
        own |= line(run, [1.0 / ratio])
        busy |= set(line(run, [1.0]))
        found = speedup(base, own, busy=busy)
        assert found is not None and found.busy == found.rounds and found.low > 1, (run, found.low, found.high)


def test_an_interval_of_a_factor_or_more_is_said_as_the_verdict_says_it() -> None:
    """Walk-through 6: --verbose said `interval ±1361%` where the verdict said `x14.6 either way`; a
    percentage past 100% reads as if the low end were below zero. Walk-through 9: `±92%` for
    0.662-2.43 around 1.27 read as reaching 0.10. Under x1.5 it stays a percentage."""
    wide = Speedup(estimate=9.93, low=9.93 / 14.6, high=9.93 * 14.6, rounds=3, runs=3, processes=3)
    why = settlement(wide, 0.25).why
    assert why is not None and why.startswith("interval x15 either way over 3 rounds of 3 runs") and "±1" not in why
    two = Speedup(estimate=2.0, low=1.0, high=4.0, rounds=3, runs=3, processes=3)
    assert (settlement(two, 0.25).why or "").startswith("interval x2.0 either way over")
    near = Speedup(estimate=2.0, low=2.0 / 1.9, high=2.0 * 1.9, rounds=3, runs=3, processes=3)
    assert (settlement(near, 0.25).why or "").startswith("interval x1.9 either way over")
    close = Speedup(estimate=2.0, low=2.0 / 1.3, high=2.0 * 1.3, rounds=3, runs=3, processes=3)
    assert (settlement(close, 0.25).why or "").startswith("interval ±30% over")
