"""The intervals of bench.statistics on synthetic rounds with a known ratio, a run effect (each run
shifts every one of its rounds alike) and a process effect (each worker process shifts its own):
a speedup's interval covers what the next run gets, the A/A test, the single-process floor, and
the marks a bimodal or drifting set of rounds gets."""

import math

import numpy as np
import pytest

from harness.bench.noise import dispersion_reasons
from harness.bench.statistics import (DEFAULT_SPREAD, Interval, drift_reason, interval, run_difference, run_interval, run_spread,
                                      quartiles)

TRUE = 40.0
BETWEEN, WITHIN = 0.08, 0.04  # log sd of a run's effect, and of a round's own noise


def runs_of(rng: np.random.Generator, runs: int, centre: float = math.log(TRUE)) -> list[np.ndarray]:
    """Each run's paired log ratios: 2-8 rounds sharing the run's effect."""
    return [centre + rng.normal(0, BETWEEN) + rng.normal(0, WITHIN, rng.integers(2, 9)) for _ in range(runs)]


def one_each(runs: list[np.ndarray]) -> list[list[np.ndarray]]:
    """Runs of one process each."""
    return [[r] for r in runs]


PROCESS, ROUND = 0.15, 0.02  # log sd of a worker process's effect (1.6x apart in six), and of a round inside it


def processes_of(rng: np.random.Generator, runs: int, run_sd: float = 0.0, processes: int = 3,
                 centre: float = math.log(TRUE)) -> list[list[np.ndarray]]:
    """Each run's processes' paired log ratios: 1-2 rounds each, sharing the process's and the run's effect."""
    out = []
    for _ in range(runs):
        shift = centre + rng.normal(0, run_sd)
        out.append([shift + rng.normal(0, PROCESS) + rng.normal(0, ROUND, rng.integers(1, 3)) for _ in range(processes)])
    return out


def next_estimate(rng: np.random.Generator, run_sd: float = 0.0) -> float:
    """What the next run measures: the mean over its 3 processes' means."""
    (run,) = processes_of(rng, 1, run_sd)
    return float(np.exp(np.mean([p.mean() for p in run])))


def test_one_run_of_three_processes_covers_the_next_runs_estimate() -> None:
    """numpy's SVD: 278-441 ms medians across six processes, +-5% inside each. One worker process
    a run (the model before) would say +-5%; three processes and the two levels cover."""
    rng = np.random.default_rng(47)
    trials = 200
    covered = sum((lambda i, nxt: i.low <= nxt <= i.high)(interval(processes_of(rng, 1)), next_estimate(rng))
                  for _ in range(trials))
    assert covered / trials >= 0.93
    lone = sum((lambda i, nxt: i.low <= nxt <= i.high)(run_interval([processes_of(rng, 1, processes=1)[0][0]], 0.02),
                                                      next_estimate(rng)) for _ in range(trials))
    assert lone / trials < 0.80  # one process, its rounds as replicates: too narrow


def test_two_runs_with_a_run_effect_cover_the_third_runs_estimate() -> None:
    rng = np.random.default_rng(48)
    trials = 200
    covered = sum((lambda i, nxt: i.low <= nxt <= i.high)(interval(processes_of(rng, 2, run_sd=0.10)),
                                                          next_estimate(rng, run_sd=0.10)) for _ in range(trials))
    assert covered / trials >= 0.90


def test_an_aa_pair_of_runs_of_processes_is_not_significant_in_95_percent_of_trials() -> None:
    rng = np.random.default_rng(49)
    trials = 200
    quiet = sum(run_difference(processes_of(rng, 1), processes_of(rng, 1), spread=0.02)[1] >= 0.01
                for _ in range(trials))
    assert quiet / trials >= 0.95


def test_what_more_processes_would_leave_is_the_machines_own_spread() -> None:
    """floor: the half-width with infinitely many more processes; from many runs the interval
    comes down to it (the next run's estimate still varies by s_p / sqrt(3))."""
    rng = np.random.default_rng(50)
    many = interval(processes_of(rng, 30))
    assert many.processes == 90 and many.runs == 30
    assert many.half_width <= 1.25 * many.floor
    assert many.floor == pytest.approx(math.expm1(1.96 * PROCESS / math.sqrt(3)), rel=0.35)
    one = interval(processes_of(rng, 1))
    assert one.half_width > 1.25 * one.floor  # one run: more processes would still narrow it


def test_two_runs_cover_the_next_runs_ratio_with_the_assumed_spread_right_or_half_the_truth() -> None:
    """Two runs pool their spread with the assumed one (statistics._pooled): with it right they
    cover at least 95% (the prior counts as runs that could have varied, so more), and with the
    truth twice the assumed spread still 90% (91.5% here): the price of not taking two runs 24x
    apart to 0.0000053-13,360,295, which more runs pay less and less (the prior's weight fades)."""
    for between, seed in ((BETWEEN, 2), (2 * BETWEEN, 20)):
        rng = np.random.default_rng(seed)
        trials, covered = 2000, 0
        for _ in range(trials):
            runs = [math.log(TRUE) + rng.normal(0, between) + rng.normal(0, WITHIN, rng.integers(2, 9)) for _ in range(2)]
            found = run_interval(runs, spread=BETWEEN)
            covered += found.low <= TRUE * math.exp(rng.normal(0, between)) <= found.high
        assert covered / trials >= (0.95 if between == BETWEEN else 0.90)


@pytest.mark.parametrize("runs", [3, 5, 10])
def test_the_interval_covers_the_true_ratio_of_the_next_run_in_93_to_97_percent_of_trials(runs: int) -> None:
    """The true ratio a run gets: the population's, shifted by that run's own effect (its process
    state), which no number of earlier runs removes. The machine's spread between runs is known, as
    a run passes it, and the runs pool theirs with it (statistics._pooled): right, it counts as
    PRIOR_DOF runs that could have varied, so three runs cover more (98.7%), ten as before (95.8%)."""
    rng = np.random.default_rng(runs)
    trials, covered = 2000, 0
    for _ in range(trials):
        interval = run_interval(runs_of(rng, runs), spread=BETWEEN)
        covered += interval.low <= TRUE * math.exp(rng.normal(0, BETWEEN)) <= interval.high
    assert 0.93 <= covered / trials <= (0.99 if runs == 3 else 0.97)


def test_a_second_run_that_disagrees_widens_the_interval_within_reason() -> None:
    """One run of 7.3x says x2 either way on a busy machine; a second of 0.3x (the machine's load
    changed) widens it, but Student's t on one degree of freedom made 0.0000053-13,360,295 of it
    (walk-through 3): the spread assumed before the second run counts as PRIOR_DOF runs."""
    one = run_interval([[math.log(7.3)]], spread=0.35)
    two = run_interval([[math.log(7.3)], [math.log(0.3)]], spread=0.35)
    assert two.low < one.low and two.high > 7.3 and two.low < 0.3
    assert 1e-3 < two.low and two.high < 1e3  # wide, as two runs 24x apart are; not astronomically so
    alike = run_interval([[math.log(5.0)], [math.log(5.2)]], spread=0.15)  # two runs that agree
    assert alike.low < 5.0 / math.exp(1.96 * 0.15) and alike.high > 5.2 * math.exp(1.96 * 0.15)  # never under the spread


def test_more_runs_narrow_the_interval_only_down_to_the_spread_between_runs() -> None:
    rng = np.random.default_rng(11)
    widths = {n: np.median([math.log(i.high / i.low) / 2 for i in (run_interval(runs_of(rng, n)) for _ in range(400))])
              for n in (3, 10, 40)}
    assert widths[3] > widths[10] > widths[40] > 1.9 * BETWEEN


def test_pooling_rounds_as_if_independent_would_not_cover() -> None:
    """The model the run-level one replaced: 5 runs' rounds as one run's, no between-run term,
    does not even cover the population's ratio."""
    rng = np.random.default_rng(7)
    trials, covered = 1000, 0
    for _ in range(trials):
        flat = np.concatenate(runs_of(rng, 5))
        covered += (lambda i: i.low <= TRUE <= i.high)(run_interval([flat], spread=0.0))
    assert covered / trials < 0.80


def test_an_aa_pair_of_runs_is_not_significant_in_95_percent_of_trials() -> None:
    """Identical code, one run a side, the machine's spread known: p < 0.01 rarely."""
    rng = np.random.default_rng(2)
    trials = 2000
    quiet = sum(run_difference(one_each(runs_of(rng, 1)), one_each(runs_of(rng, 1)), spread=BETWEEN)[1] >= 0.01
                for _ in range(trials))
    assert quiet / trials >= 0.95


def test_a_real_change_between_two_runs_is_found() -> None:
    rng = np.random.default_rng(3)
    slow = runs_of(rng, 1, math.log(TRUE * 1.5))
    found, p = run_difference(one_each(runs_of(rng, 1)), one_each(slow), spread=BETWEEN)
    assert p is not None and p < 0.01 and found.low < 1.5 < found.high


def test_one_run_is_never_narrower_than_the_machines_spread_between_runs() -> None:
    """Eight rounds alike to 0.1%: within the run +-0.1%, but one run says little of the next."""
    lucky = [math.log(TRUE) + np.random.default_rng(4).normal(0, 0.001, 8)]
    assert run_interval(lucky, spread=0.0).high / TRUE - 1 < 0.01
    floored = run_interval(lucky, spread=0.05)
    assert floored.high / floored.estimate - 1 >= math.exp(1.959 * math.sqrt(2) * 0.05) - 1
    assert run_interval(lucky).high / TRUE - 1 > 0.31  # nothing known: at least DEFAULT_SPREAD
    assert DEFAULT_SPREAD == pytest.approx(0.15)  # six first runs of the main job (bench.statistics)


def test_one_round_gets_a_wide_interval_and_no_round_none() -> None:
    one = run_interval([[math.log(3.0)]])
    assert one.estimate == pytest.approx(3.0) and 1.9 < one.low < 3.0 < one.high < 4.7 and one.runs == 1
    none = run_interval([])
    assert none.runs == 0 and none.high == math.inf


def test_runs_count_once_whatever_their_rounds() -> None:
    """A run of 40 rounds and a run of 2 are one replicate each: the centre is their means' mean."""
    a, b = [0.0] * 40, [math.log(4.0)] * 2
    assert run_interval([a, b]).estimate == pytest.approx(2.0) and run_interval([a, b]).runs == 2


def test_the_spread_between_runs_is_read_from_three_runs_on() -> None:
    assert run_spread([[[0.0, 0.1]], [[0.2]]]) is None
    assert run_spread([[[0.0]], [[0.1]], [[0.2]]]) == pytest.approx(0.1)
    assert run_spread([[[0.0], [0.2]], [[0.2]], [[0.3]]]) == pytest.approx(0.1)  # a run's estimate: its processes' mean


def test_a_drifting_set_of_rounds_is_marked() -> None:
    steady = np.exp(np.random.default_rng(3).normal(0, 0.03, 10))
    assert drift_reason(steady) is None
    growing = np.linspace(1.0, 1.8, 10)
    reason = drift_reason(growing)
    assert reason == "drifting: round times rose 79% from first to last of 10 rounds"  # a fit: 1.8 at the end


def test_a_bimodal_set_of_rounds_is_marked() -> None:
    rounds = [1.0, 1.01, 0.99, 1.02, 2.0, 2.02, 1.98, 2.01]
    assert any(r.startswith("bimodal") for r in dispersion_reasons(rounds))


@pytest.mark.parametrize("samples, expected", [([5.0, 1.0, 3.0, 2.0, 4.0], (2.0, 3.0, 4.0)), ([2.0], (2.0, 2.0, 2.0)),
                                               ([1.0, 2.0], (1.25, 1.5, 1.75))])
def test_quartiles_are_numpys_linear_percentiles(samples: list[float], expected: tuple[float, float, float]) -> None:
    """The one definition a measurement's IQR, the noise check, the record's quartile totals and
    the exports' q1/q3 share."""
    assert quartiles(samples) == expected


def _alike(runs: int, sd: float, centre: float = math.log(TRUE)) -> list[float]:
    """`runs` run estimates (log) with sample sd `sd`, evenly placed around `centre`."""
    steps = np.arange(runs) - (runs - 1) / 2
    return list(centre + steps * sd / np.std(steps, ddof=1))


def _processes(estimates: list[float]) -> list[list[list[float]]]:
    """Runs of three worker processes each around the given run estimates (processes 3% apart)."""
    return [[[e - 0.03], [e], [e + 0.03]] for e in estimates]


def _half(found: Interval) -> float:
    return math.log(found.high / found.estimate)


@pytest.mark.parametrize("prior", [DEFAULT_SPREAD, 0.35])
def test_a_third_run_where_two_runs_said_it_would_be_never_makes_a_clear_speedup_not_significant(prior: float) -> None:
    """Walk-through 6: runs of 16.3x and 10.8x read 3.66-48.1; a third of 5.6x, inside that, read
    0.672-147 ("not significantly faster"), as the assumed spread was dropped at MIN_RUNS_SEEN runs.
    Any third run inside the two runs' interval keeps the speedup clear, one process a run or three;
    runs that straddle 1 (0.8x, 1.3x, 1.1x) stay not significant."""
    two = [math.log(16.27), math.log(10.84)]
    for shape, build in (("one process a run", lambda e: [[[x]] for x in e]), ("three processes", _processes)):
        before = interval(build(two), prior, run_sd=prior)
        assert before.low > 1, shape
        for third in np.geomspace(before.low, before.high, 25):
            after = interval(build([*two, math.log(third)]), prior, run_sd=prior)
            assert after.low > 1, f"{shape}: a third run of {third:.2f}x read {after.low:.3f}-{after.high:.1f}"
        straddle = interval(build([math.log(x) for x in (0.8, 1.3, 1.1)]), prior, run_sd=prior)
        assert straddle.low < 1 < straddle.high, shape


@pytest.mark.parametrize("sd", [0.05, 0.15, 0.3, 0.6])
@pytest.mark.parametrize("prior", [DEFAULT_SPREAD, 0.35])
def test_the_interval_has_no_jump_from_two_runs_to_three_of_the_same_spread(sd: float, prior: float) -> None:
    """More runs of the same spread never change the half-width by more than 1.5x at MIN_RUNS_SEEN
    (dropping the assumed spread there made it 2x wider, or 2x narrower)."""
    for build in (lambda e: [[[x]] for x in e], _processes):
        two, three = (interval(build(_alike(n, sd)), prior, run_sd=prior) for n in (2, 3))
        assert 1 / 1.5 <= _half(three) / _half(two) <= 1.5, (sd, prior, _half(two), _half(three))


def test_a_drift_past_double_is_said_as_a_factor() -> None:
    """Walk 8: `grew 717% faster` for rounds that fell 8.2-fold; a factor reads at once. Walk 15:
    "grew 2.1x faster" left open whether the times rose or fell: they say which."""
    assert drift_reason(np.geomspace(8.2, 1.0, 7)) == "drifting: round times fell 8.2x from first to last of 7 rounds"
    assert drift_reason(np.geomspace(1.0, 1.5, 7)) == "drifting: round times rose 50% from first to last of 7 rounds"
    assert drift_reason(np.geomspace(1.5, 1.0, 7)) == "drifting: round times fell 33% from first to last of 7 rounds"


def test_two_runs_on_a_side_keep_the_machines_spread_as_a_prior() -> None:
    """Walk 11: A's 6 rounds from 2 runs took Student's t on one degree of freedom (63.7 at 99%):
    `interval too wide (x200,866 either way)` where its one run had read 0.450-2.94."""
    a = [[[math.log(1.0), math.log(1.05), math.log(0.95)]], [[math.log(1.6), math.log(1.7), math.log(1.5)]]]
    b = [[[math.log(1.2), math.log(1.25), math.log(1.15)]]]
    interval, p = run_difference(a, b, spread=0.1, level=0.99)
    assert p is not None and interval.high / interval.low < 20, interval
