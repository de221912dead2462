"""The rounds of one analysis (run.rounds) with fake workers: which points a round times and in
what order, when rounds stop, what a busy machine still measures, and how a block's calls follow
its measured seconds. Real worker processes are tested in tests/bench/test_worker.py and end to
end in tests/run/test_phase.py."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from rich.console import Console

from harness.base.progress import Display
from harness.bench import budget as budgeting
from harness.bench.budget import MEDIAN_CALL_S, MEDIAN_CALLS, MIN_ROUNDS, PROCESSES, SPREAD_ROUNDS, Allocation, Budget
from harness.bench.conditions import snapshot
from harness.bench.measure import Block
from harness.bench.series import Round, speedup, unit_of
from harness.bench.environment import CannotStart
from harness.bench.worker import Reply, Request, WorkerDied
from harness.run import rounds as rounding
from harness.run.items import Timeline, disagreeing, plausible
from harness.bench.budget import Pace
from harness.run.rounds import Rounds
from harness.run.subjects import Subject


class FakeWorker:
    """Answers each block at once with `seconds[label]` a call (a list: one per block in turn), times
    vary[label] to the power of its slot (the order workers of a label were started in)."""

    def __init__(self, label: str, seconds: dict[str, list[float]], asked: list[tuple[str, Request]],
                 fail: set[str], slot: int = 0, vary: float = 1.0, order: list[tuple[str, int]] | None = None) -> None:
        self.label, self.seconds, self.asked, self.fail = label, seconds, asked, fail
        self.slot, self.vary, self.order = slot, vary, order if order is not None else []

    def wait_ready(self) -> None:
        pass

    def block(self, request: Request, deadline_s: float = 0.0) -> Reply:
        self.asked.append((self.label, request))
        self.order.append((self.label, self.slot))
        if self.label in self.fail:
            raise RuntimeError("ARPACK did not converge")
        times = self.seconds[self.label]
        s = (times.pop(0) if len(times) > 1 else times[0]) * self.vary**self.slot
        return Reply(Block(calls_s=[s] * request.calls, seconds=s, threads={"blas": 2}), "answer", {})

    def pids(self) -> list[int]:
        return []

    def close(self) -> None:
        pass


def subject(label: str, per_matrix_s: float = 0.01, calls: int = 1, repeats: int = 1, warmup: int = 0) -> Subject:
    a = Allocation(group="g", per_matrix_s=per_matrix_s, matrices=1, warmup=warmup, calls=calls, repeats=repeats,
                   sample=4)
    verdict = SimpleNamespace(passed=True, reason=None)
    return Subject(step=None, timed=SimpleNamespace(label=label, strategy=label, compiled=False), part=0, allocation=a,  # type: ignore[arg-type]
                   item=None, arithmetic="float32", total=10, flops=1.0, bytes=1.0,  # type: ignore[arg-type]
                   judge=lambda result, r: verdict, ids=lambda r: [f"m{r % 4}"])  # type: ignore[arg-type, return-value]


def rounds(labels: list[str], seconds: dict[str, list[float]], *, budget: Budget | None = None,
           chosen: str | None = None, fail: frozenset[str] = frozenset(), spread: float | None = 0.02,
           target: float = 0.10, subjects: dict[str, Subject] | None = None, vary: dict[str, float] | None = None,
           order: list[tuple[str, int]] | None = None) -> tuple[Rounds, list[tuple[str, Request]]]:
    subjects = subjects or {label: subject(label) for label in labels}
    asked: list[tuple[str, Request]] = []
    budget = budget or Budget(100.0, 100.0, {"a": 1.0}, {"a": 1.0})
    budget.open("a")
    started: list[str] = []

    def spawn(work: str, threads: int, env: object) -> FakeWorker:  # a label's workers in slot order
        started.append(work)
        return FakeWorker(work, seconds, asked, set(fail), started.count(work) - 1, (vary or {}).get(work, 1.0), order)

    r = Rounds("a", "run", {k: [v] for k, v in subjects.items()}, {k: k for k in labels}, {}, labels[0], chosen,  # type: ignore[misc]
               {id(s): Timeline(pooled=[]) for s in subjects.values()}, target, dict.fromkeys(labels, spread),
               budget, Pace(), Display(Console(file=io.StringIO()), live=False), 2, 2,
               lambda s, ids: None, lambda s, ids, verdict: None, snapshot(), spawn=spawn)  # type: ignore[arg-type]
    return r, asked


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: [])


@pytest.fixture
def busy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: ["load 18.4 on 2 cores"])


def test_each_point_is_timed_in_several_processes_slot_by_slot_in_a_shuffled_order(quiet: None) -> None:
    """The first round: slot 0 first, the baseline then the chosen point first in it; in every
    slot the baseline first (its pair close in time), the others shuffled; every point in
    PROCESSES processes, each its own unit of rounds."""
    order: list[tuple[str, int]] = []
    labels = ["base", "x", "y", "z", "chosen"]
    r, _ = rounds(labels, dict.fromkeys(labels, [1.0]) | {"chosen": [0.1]}, chosen="chosen", spread=0.10,
                  vary={"x": 1.5}, order=order)
    r.run()
    assert r.count == SPREAD_ROUNDS and order[:2] == [("base", 0), ("chosen", 0)]
    first, second = order[:5 * PROCESSES], order[5 * PROCESSES:]
    assert sorted(first) == sorted((label, k) for label in labels for k in range(PROCESSES))
    slots = [k for _label, k in second]
    assert all(second[i][0] == "base" for i in range(len(second)) if i == 0 or slots[i] != slots[i - 1])
    assert [k for _label, k in first] == sorted(k for _label, k in first)  # slot by slot
    assert [label for label, _ in first[1:5]] != [label for label, _ in first[6:10]]  # shuffled in each slot
    (x,) = r.subjects["x"]
    assert {unit_of(round_.round) for round_ in r.lines[id(x)].new} == {f"run.{k}" for k in range(PROCESSES)}


def test_rounds_stop_once_more_of_this_run_cannot_narrow_the_interval(quiet: None) -> None:
    """Processes 1.5x apart, each alike inside (once SPREAD_ROUNDS show it): more rounds of them
    cannot narrow the between-process term, however much budget is left; the speedup stays
    unresolved at +-10%."""
    r, asked = rounds(["base", "x"], {"base": [1.0], "x": [0.5]}, spread=0.10, vary={"x": 1.5})
    r.run()
    assert r.count == SPREAD_ROUNDS and len(asked) == 2 * SPREAD_ROUNDS * PROCESSES


def test_one_round_can_resolve_where_the_processes_agree(quiet: None) -> None:
    r, _ = rounds(["base", "x"], {"base": [1.0], "x": [0.5]}, spread=0.02)
    r.run()
    assert r.count == MIN_ROUNDS == 1


def test_rounds_go_on_while_this_runs_spread_is_wide_and_the_budget_allows(quiet: None) -> None:
    noisy = [0.5, 0.8, 0.4, 0.9, 0.45, 0.85, 0.5, 0.7]
    r, _ = rounds(["base", "x"], {"base": [1.0], "x": noisy}, spread=0.10, target=0.10)
    r.run()
    assert r.count > SPREAD_ROUNDS


def test_a_busy_machine_out_of_budget_still_times_the_baseline_and_the_chosen_point(busy: None) -> None:
    spent = Budget(0.0, 0.0, {"a": 0.0}, {"a": 1.0})
    r, asked = rounds(["base", "x", "chosen"], {"base": [1.0], "x": [0.5], "chosen": [0.1]}, budget=spent,
                      chosen="chosen")
    r.run()
    assert r.untimed == ["x"] and r.count == 1
    assert {label: len(r.lines[id(s)].new) for label, (s,) in r.subjects.items()} == {"base": 1, "x": 0, "chosen": 1}
    assert asked[-1][0] == "x" and asked[-1][1].keep  # still verified, by one untimed call
    assert all(round_.busy == ["load 18.4 on 2 cores"] for line in r.lines.values() for round_ in line.new)


def test_a_round_the_budget_cut_says_so_in_a_log(busy: None) -> None:
    """Piped, a cut round's line read `round 1: 2/3 (...)`: an unfinished count, no word of why."""
    spent = Budget(0.0, 0.0, {"a": 0.0}, {"a": 1.0})
    r, _ = rounds(["base", "x", "chosen"], {"base": [1.0], "x": [0.5], "chosen": [0.1]}, budget=spent,
                  chosen="chosen")
    r.run()
    logged = r.display.console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    timed = sum(len(r.lines[id(s)].new) for (s,) in r.subjects.values())
    blocks = 3 * PROCESSES  # each point in each of its processes
    # `the limit`, the budget or the floor, as the line after the rounds names it (walk 24: `the budget left 10
    # untimed` above `the 2.2 s floor stopped the rest` in one run)
    assert [line.rsplit(" in ", 1)[0] for line in logged] == [f"a: round 1: {timed}/{blocks} (the limit left "
                                                             f"{blocks - timed} untimed)"]
    assert r.stopped
    r, _ = rounds(["base", "x"], {"base": [1.0], "x": [0.5]})
    r.run()  # a round the budget did not cut says what it timed last, as ever
    assert "budget" not in r.display.console.file.getvalue()  # type: ignore[attr-defined]


def test_the_rounds_say_when_the_budget_stopped_them_between_two(quiet: None) -> None:
    """Piped, an analysis whose budget stopped it after a whole round ended on a full count
    (`round 1: 6/6`): the rounds say they were stopped, for the phase's line (run.clock.stopped_text)."""
    noisy = [0.5, 0.8, 0.4, 0.9, 0.45, 0.85, 0.5, 0.7]
    spent = Budget(0.0, 0.0, {"a": 0.0}, {"a": 1.0})
    r, _ = rounds(["base", "x"], {"base": [1.0], "x": noisy}, spread=0.10, budget=spent)
    r.run()
    logged = r.display.console.file.getvalue()  # type: ignore[attr-defined]
    assert r.count == MIN_ROUNDS and r.stopped and "untimed" not in logged  # no block cut: a full count
    r, _ = rounds(["base", "x"], {"base": [1.0], "x": [0.5]}, spread=0.02)
    r.run()
    assert r.count == MIN_ROUNDS and not r.stopped  # settled: nothing stopped it


def test_a_quiet_machine_runs_the_floor_past_the_limit(quiet: None) -> None:
    spent = Budget(0.0, 0.0, {"a": 0.0}, {"a": 1.0})
    r, _ = rounds(["base", "x"], {"base": [1.0], "x": [0.5]}, budget=spent)
    r.run()
    assert r.count == MIN_ROUNDS and not r.untimed


def test_a_point_that_fails_leaves_the_rounds_and_the_others_go_on(quiet: None) -> None:
    r, asked = rounds(["base", "bad", "x"], {"base": [1.0], "bad": [1.0], "x": [0.5]}, fail=frozenset({"bad"}))
    r.run()
    assert r.failures == {"bad": "RuntimeError: ARPACK did not converge"}
    assert sum(label == "bad" for label, _ in asked) == 1
    assert sum(label == "x" for label, _ in asked) == MIN_ROUNDS * PROCESSES


@pytest.mark.parametrize("seconds,repeats,before,after", [
    (2 * MEDIAN_CALL_S, 1, MEDIAN_CALLS, 1),  # estimated fast, measured slow: one call a block
    (MEDIAN_CALL_S / 10, 1, 1, MEDIAN_CALLS),  # estimated slow, measured fast: the median of three
    (2 * MEDIAN_CALL_S, 5, 5, 5),  # the spec's repeats hold either way
])
def test_a_blocks_calls_follow_its_measured_seconds(seconds: float, repeats: int, before: int, after: int,
                                                    quiet: None) -> None:
    s = subject("base", calls=before, repeats=repeats)
    r, asked = rounds(["base", "x"], {"base": [seconds], "x": [seconds / 2]}, subjects={"base": s, "x": subject("x")},
                      spread=0.10)
    r.run()
    assert [req.calls for label, req in asked if label == "base"][:2] == [before, after]


def test_warm_ups_are_asked_once_and_answers_judged_once_per_set_of_matrices(quiet: None) -> None:
    s = subject("base", warmup=1)
    r, asked = rounds(["base", "x"], {"base": [0.01], "x": [0.005, 0.009, 0.004, 0.008]},
                      subjects={"base": s, "x": subject("x")}, spread=0.10)
    r.run()
    mine = [req for label, req in asked if label == "base"]
    assert len(mine) > PROCESSES and [req.warmups for req in mine] == [1] * PROCESSES + [0] * (len(mine) - PROCESSES)
    assert all(req.warm_time_s > 0 for req in mine)  # a fast call: each block re-warmed
    # every slot of a round visits the same matrices: the first block to visit them keeps its answer
    assert sum(req.keep for req in mine) == len(s.checks) == min(r.count, 4)


def test_the_budget_counts_blocks_and_not_one_off_work(quiet: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting workers and judging answers are one-off work, outside the budget."""
    budget = Budget(100.0, 100.0, {"a": 1.0}, {"a": 1.0})
    r, _ = rounds(["base"], {"base": [0.01]}, budget=budget)
    r.run()
    assert budget.one_off_s >= 0.0 and budget.elapsed_s >= 0.0
    assert budgeting.OVERRUN > 0 and isinstance(r.pace.factor, float)


def test_a_point_whose_rounds_are_all_pooled_is_verified_with_one_untimed_call(quiet: None) -> None:
    from harness.bench.series import Round

    s = subject("base")
    r, asked = rounds(["base"], {"base": [0.01]}, subjects={"base": s})
    r.lines[id(s)] = Timeline(pooled=[Round(round=f"old#a#{i}", seconds=0.01) for i in range(3)])
    r._wants = lambda label, slot: False  # type: ignore[method-assign]  # the pool settled it
    r.run()
    assert r.count == 0 and [(label, req.calls, req.keep) for label, req in asked] == [("base", 1, True)]
    assert s.checks


def test_a_point_a_busy_machine_cut_in_one_run_is_timed_first_in_the_next(busy: None) -> None:
    from harness.bench.series import Round

    spent = Budget(0.0, 0.0, {"a": 0.0}, {"a": 1.0})
    r, asked = rounds(["base", "old", "new", "chosen"], {"base": [1.0], "old": [0.5], "new": [0.5], "chosen": [0.1]},
                      budget=spent, chosen="chosen")
    for label, seconds in (("base", [0.5, 0.5]), ("old", [0.5, 0.05])):  # an earlier run timed old beside the baseline
        r.lines[id(r.subjects[label][0])] = Timeline(pooled=[Round(round=f"earlier{i}#a#0", seconds=s)
                                                             for i, s in enumerate(seconds)])
    first = [label for label, k in r._blocks() if k == 0]
    assert first[0] == "base" and set(first[1:3]) == {"chosen", "new"} and first[3] == "old"


def test_a_point_an_earlier_busy_run_cut_is_timed_once_whatever_the_limit(busy: None) -> None:
    """Ordered first alone, the main job's top-3 torch points went untimed in three busy runs in a
    row: the spectrum before them had spent the limit each time."""
    spent = Budget(0.0, 0.0, {"a": 0.0}, {"a": 1.0})
    subjects = {label: subject(label) for label in ["base", "x", "chosen", "y"]}
    r, _ = rounds(list(subjects), {"base": [1.0], "x": [0.5], "chosen": [0.1], "y": [0.2]}, budget=spent,
                  chosen="chosen", subjects=subjects, target=0.01)
    for label in ("base", "chosen", "y"):  # an earlier run timed these, and cut x
        r.lines[id(subjects[label])].pooled.append(Round(round="earlier#a#0", seconds=1.0, busy=["load 4"]))
    r.run()
    assert r.untimed == ["y"] and r.count == 1  # y had its round in the earlier run: the limit cuts it this time
    assert {label: len(r.lines[id(s)].new) for label, (s,) in r.subjects.items()} == {
        "base": 1, "x": 1, "chosen": 1, "y": 0}


def pooled(r: Rounds, label: str, runs: dict[str, int]) -> None:
    """Earlier runs' rounds of a point: `runs` maps a run id to its rounds; run "e<i>" timed on day i.
    The baseline's rounds alternate 1 s and 3 s, the others' do not: no speedup is settled."""
    r.lines[id(r.subjects[label][0])].pooled += [
        Round(round=f"{run}.0#a#{i}", seconds=1.0 + 2.0 * (label == "base") * (i % 2), when=f"2026-01-0{run[1:]}")
        for run, n in runs.items() for i in range(n)]


def test_the_first_round_times_the_points_with_the_fewest_rounds_first(busy: None) -> None:
    """smoke's dual_gram stayed at `1 reused` six runs in a row while each run's limit timed only
    the others (walk-through 7): the point with the fewest rounds is asked before the chosen one."""
    r, _ = rounds(["base", "many", "few"], {"base": [1.0], "many": [0.5], "few": [0.5]}, chosen="many",
                  target=0.01)
    pooled(r, "base", {"e1": 2, "e2": 2})
    pooled(r, "many", {"e1": 2, "e2": 2})
    pooled(r, "few", {"e2": 1})  # the last run timed both: neither is owed a round
    assert [label for label, k in r._blocks() if k == 0] == ["base", "few", "many"]


def test_a_point_the_last_run_cut_after_one_round_is_timed_once_whatever_the_limit(busy: None) -> None:
    """A point with one reused round was never owed a round again (only points with none were):
    the last run that timed the baseline cut it, so this one times it, as the untimed line says."""
    spent = Budget(0.0, 0.0, {"a": 0.0}, {"a": 1.0})
    r, _ = rounds(["base", "chosen", "dual"], {"base": [1.0], "chosen": [0.1], "dual": [0.5]}, budget=spent,
                  chosen="chosen", target=0.01)
    pooled(r, "base", {"e1": 1, "e2": 1})
    pooled(r, "chosen", {"e1": 1, "e2": 1})
    pooled(r, "dual", {"e1": 1})  # e2 cut it
    r.run()
    assert {label: len(r.lines[id(s)].new) for label, (s,) in r.subjects.items()} == {"base": 1, "chosen": 1, "dual": 1}
    r2, _ = rounds(["base", "chosen", "dual"], {"base": [1.0], "chosen": [0.1], "dual": [0.5]},
                   budget=Budget(0.0, 0.0, {"a": 0.0}, {"a": 1.0}), chosen="chosen", target=0.01)
    for label in ("base", "chosen", "dual"):  # had e2 timed it, this run's limit would cut it
        pooled(r2, label, {"e1": 1, "e2": 1})
    r2.run()
    assert r2.untimed == ["dual"]


def test_a_quiet_run_replaces_an_earlier_busy_runs_rounds_before_it_stops(quiet: None) -> None:
    """Busy rounds stand in only while quiet ones are too few: two runs that agree (one busy, one
    quiet round) do not end the quiet run, which goes on to SPREAD_ROUNDS rounds of its own."""
    subjects = {label: subject(label) for label in ["base", "x"]}
    r, _ = rounds(list(subjects), {"base": [1.0], "x": [0.5]}, subjects=subjects, target=0.5)
    r.processes = 1  # with more, one round has SPREAD_ROUNDS quiet rounds already
    for label, seconds in (("base", 1.0), ("x", 0.5)):
        r.lines[id(subjects[label])].pooled.append(Round(round="earlier#a#0", seconds=seconds, busy=["load 4"]))
    r.run()
    assert r.count == SPREAD_ROUNDS


def test_a_point_whose_worker_cannot_start_is_its_own_error_and_the_others_are_timed(quiet: None) -> None:
    """An environment exec refuses (too big for `ulimit -s`) is that point's one-line error."""
    r, asked = rounds(["base", "x"], {"base": [1.0], "x": [0.5]})
    r.works, spawn = {"base": "base", "x": "x"}, r.spawn  # type: ignore[dict-item]

    def refusing(work: object, threads: int, env: dict[str, str] | None) -> object:
        if work == "x":
            raise CannotStart("cannot start its worker: its environment (yours with 1 more) is 263,670 bytes")
        return spawn(work, threads, env)  # type: ignore[arg-type]

    r.spawn = refusing  # type: ignore[assignment]
    r.run()
    assert r.failures == {"x": "CannotStart: cannot start its worker: its environment (yours with 1 more) is "
                                "263,670 bytes"}
    assert {label for label, _ in asked} == {"base"} and all(label != "x" for label, _k in r.workers)


@pytest.mark.parametrize("said", ["worker died (exit code -9)", "worker stopped answering: no reply within 130 s"])
def test_a_lost_worker_keeps_the_rounds_it_timed_and_is_no_failure(
        quiet: None, monkeypatch: pytest.MonkeyPatch, said: str) -> None:
    noisy = [0.5, 0.8, 0.4, 0.9, 0.45, 0.85, 0.5, 0.7]
    r, asked = rounds(["base", "x"], {"base": [1.0], "x": noisy}, spread=0.10, target=0.10)
    block = FakeWorker.block

    def losing(self: FakeWorker, request: Request, deadline_s: float = 0.0) -> Reply:
        if self.label == "base" and sum(label == "base" for label, _ in self.asked) == 2:
            raise WorkerDied(said)  # its third block
        return block(self, request, deadline_s)

    monkeypatch.setattr(FakeWorker, "block", losing)
    r.run()
    assert r.lost == {"base": said} and not r.failures
    (base,), (x,) = r.subjects["base"], r.subjects["x"]
    assert len(r.lines[id(base)].new) == 2 and len(r.lines[id(x)].new) >= 2
    assert [label for label, _ in asked].count("base") == 2  # never asked again


@pytest.mark.parametrize(("first", "later"), [(1.0, 0), (1.05, 0), (1.9, 1)])
def test_a_first_call_like_the_others_is_timed_in_the_other_processes(
        quiet: None, monkeypatch: pytest.MonkeyPatch, first: float, later: int) -> None:
    """A process's first call is untimed where it is slower; once the point's first process showed
    it no slower than its block (within FIRST_CALL_SAME), the other processes time theirs (issue 47:
    a first run's warm-ups in every process were its largest cost beside the calls)."""
    block = FakeWorker.block

    def warming(self: FakeWorker, request: Request, deadline_s: float = 0.0) -> Reply:
        reply = block(self, request, deadline_s)
        s = reply.block.seconds
        return Reply(reply.block.model_copy(update={"warmups": request.warmups, "warm_s": first * s * request.warmups}),
                     reply.result, reply.notes)

    monkeypatch.setattr(FakeWorker, "block", warming)
    r, asked = rounds(["base", "x"], {"base": [1.0], "x": [0.5]})
    r.run()
    firsts = {}
    for label, request in asked:  # each worker's first request, in the order asked
        firsts.setdefault(label, []).append(request.warmups)
    assert all(w[0] == 1 and w[1:PROCESSES] == [later] * (PROCESSES - 1) for w in firsts.values()), firsts


def test_pooled_rounds_set_aside_are_timed_anew_whatever_the_limit(busy: None) -> None:
    """Issue 48: the pool settled the chosen point, so a busy run timed only the baseline; its
    rounds came out 7x off the pooled ones, which were discarded, and the chosen point and a
    compared one were left with no round beside the baseline: no speedup, no verdict. Every point
    left unpaired is timed anew in slot 0 of the next round, beside the baseline, past the limit."""
    spent = Budget(0.0, 0.0, {"a": 0.0}, {"a": 1.0})
    subjects = {label: subject(label) for label in ["base", "chosen", "x"]}
    r, _ = rounds(list(subjects), {"base": [7.0], "chosen": [0.15], "x": [1.0]}, budget=spent, chosen="chosen",
                  subjects=subjects, target=0.25)
    pooled = {"base": [1.0] * 3, "chosen": [0.1] * 3, "x": [0.5, 0.05, 5.0]}  # chosen settled, x not
    for label, seconds in pooled.items():
        r.lines[id(subjects[label])].pooled = [Round(round=f"earlier.{k}#a#0", seconds=s) for k, s in enumerate(seconds)]
    assert not r._wants("chosen", 0) and r._wants("x", 0)  # the state the walk-through met
    r.run()
    assert r.set_aside == ["a: pooled rounds of base on g discarded: 3 rounds at 1.00 s a matrix, 7x off the "
                           "7.00 s this run's own rounds measured"]
    new = {label: {x.round for x in r.lines[id(s)].new} for label, s in subjects.items()}
    assert new["chosen"] and new["chosen"] <= new["base"] and new["x"] and new["x"] <= new["base"]
    assert {unit_of(x) for x in new["chosen"] | new["x"]} == {"run.0"} and not r.untimed
    found = speedup(r.line("base"), r.line("chosen"))  # what the record's speedup and verdict stand on
    assert found is not None and found.rounds == 1 and found.estimate == pytest.approx(7.0 / 0.15)


def test_the_factor_said_is_between_the_two_figures_said() -> None:
    """Walk 10: `27 rounds at 2.10 ms a matrix, 4x off the 125 µs this run measured`: the factor was
    taken above the 1 ms call overhead, the figures were not."""
    said = plausible([Round(round="earlier.0#a#0", seconds=4 * 2.10e-3)] * 27, 4 * 125e-6, 5.0, "it", 4)
    assert said == "27 rounds at 2.10 ms a matrix, 17x off the 125 µs it"


def test_one_pooled_round_set_aside_is_a_round_said_per_matrix() -> None:
    """The walk-through read `1 rounds at 14.6 ms a call` of a 4-matrix call: a unit no table shows."""
    said = plausible([Round(round="earlier.0#a#0", seconds=1.0)], 0.1, 5.0, "this run measured", 4)
    assert said == "1 round at 250 ms a matrix, 10x off the 25.0 ms this run measured"


def test_pooled_rounds_are_not_set_aside_beside_own_rounds_that_disagree_themselves() -> None:
    """Walk 11: 6 pooled rounds of two runs that agreed (87 µs) were set aside beside this run's 2,
    14x apart (203 µs and 2.87 ms), and the verdict rested on those 2."""
    pooled = [Round(round=f"earlier.{k}#a#0", seconds=4 * 87e-6) for k in range(6)]  # a call of 4 matrices
    apart = [Round(round="run.0#a#0", seconds=4 * 203e-6), Round(round="run.1#a#0", seconds=4 * 2.87e-3)]
    assert disagreeing(pooled, apart, 4) is None
    agreeing = [Round(round="run.0#a#0", seconds=4 * 2.7e-3), Round(round="run.1#a#0", seconds=4 * 2.87e-3)]
    assert (disagreeing(pooled, agreeing, 4) or "").startswith("6 rounds at 87 µs a matrix, 32x off")


def test_a_rounds_row_says_the_answers_it_verifies_as_the_runs_row_does(quiet: None,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Walk 23: the run's row read `geometry: verifying answers` while its round's row under it read
    `dual_gram on positions in process 1`, a block under way. While a block's answers are judged, the
    round's item leads with that work; the block's own item otherwise."""
    import dataclasses

    from harness.base.progress import Phase

    items: list[object] = []
    monkeypatch.setattr(Phase, "item", lambda self, text: items.append(text))
    judged: list[str] = []
    verdict = SimpleNamespace(passed=True, reason=None)
    base = dataclasses.replace(subject("base"), judge=lambda result, r: judged.append(str(items[-1])) or verdict)
    r, _asked = rounds(["base", "x"], {"base": [0.01], "x": [0.005]}, subjects={"base": base, "x": subject("x")})
    r.run()
    assert judged and all(said.startswith("verifying answers: base on g in process ") for said in judged), judged
    assert str(items[-1]).split(" on ")[0] in ("base", "x")  # between blocks' judging: the block alone
