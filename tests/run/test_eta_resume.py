"""A resumed run's ETA (walk-through 9): resumed into a folder where `spectrum` finished (kept as
timed) and `top3` stopped mid-benchmark (half its blocks kept), it read `~0:00:10`, `>0:00:40`,
`~0:00:03`, `>0:00:18` in a run that ended 27 s after its start: the kept analysis and the kept
blocks were counted as work to do, and done in no time. The run's live ETA (base.progress) over
run.eta's work left and counted share, on a scripted clock."""

from __future__ import annotations

from types import SimpleNamespace


from harness.base.eta import planned
from harness.bench.budget import PROCESSES
from harness.plan.model import limited
from harness.run.eta import counted_share, timing_left_s, work_left
from harness.strategies.cost import TIMING_WORKER_S
from tests.run.clocked import clocked_display


def _step(name: str, estimate_s: float, timed_s: list[float]) -> SimpleNamespace:
    timed = [SimpleNamespace(estimate_s=s, allocations=[SimpleNamespace(rounds=1)]) for s in timed_s]
    return SimpleNamespace(analysis=name, estimate_s=estimate_s, timed=timed)


STEPS = [_step("spectrum", 0.3, [3.2, 3.0, 1.0, 0.2]), _step("top3", 0.3, [0.8, 1.2, 1.3, 0.2]),
         _step("geometry", 0.4, [1.0, 0.4])]
PLAN = SimpleNamespace(steps=STEPS, overheads={}, timings_s=limited(STEPS, None), estimate_s=40.0, busy_s=lambda s: 2.0 * s)
# the stopped run's rounds of top3: 6 of the 12 blocks its 4 points plan in 3 processes
STOPPED = SimpleNamespace(analysis="top3", subjects=[SimpleNamespace(rounds=[1] * 2)] * 3)
# (analysis, seconds to its first block, seconds of its blocks, blocks, after them) as the resumed run went: 26 s
WENT = [("spectrum", 1.0, 0.0, 0, 0.0), ("top3", 3.0, 9.0, 6, 0.0), ("geometry", 5.0, 8.0, 6, 0.0)]


def _etas(plan: SimpleNamespace, kept: set[str], stopped: SimpleNamespace | None,
          went: list[tuple[str, float, float, int, float]], measured: list[float] | None = None,
          did: list[tuple[float, int]] | None = None) -> list[tuple[float, str]]:
    """(elapsed, ETA text) at every half second of a run, drawn by the live display: each analysis
    its seconds to its first block (its full analysis, its workers starting), its blocks, and its
    one-off work after them (verifying the untimed points' answers) in `went`; with `measured`, the
    run replans at each analysis' start by a worker's one-off seconds measured by then (run.eta.worker_s),
    and with `did` by what the analyses before it timed (run.eta.as_timed)."""
    now, timing = {"t": 0.0}, {"now": None}
    rates = measured or [TIMING_WORKER_S] * len(went)
    units, estimate_s = work_left(plan, kept, stopped)  # type: ignore[arg-type]
    shown = []
    with clocked_display(lambda: now["t"]) as display:
        with display.phase("task_geometry", len(went), estimate_s=estimate_s, units_s=units) as run:
            column = display.progress.columns[-1]
            for i, (step, (name, first_s, blocks_s, blocks, after_s)) in enumerate(zip(plan.steps, went)):
                if measured is not None:
                    finished = {s.analysis: t for s, t in zip(plan.steps[:i], did or [])}
                    units, estimate_s = work_left(plan, kept, stopped, rates[i], finished)  # type: ignore[arg-type]
                    run.replan(estimate_s, units)
                left_s = timing_left_s(step, name in kept, stopped, rates[i])  # type: ignore[arg-type]
                getter = lambda: timing["now"]  # noqa: E731
                run.within(planned(units[i] * estimate_s / sum(units), clock=lambda: now["t"]),
                           counted=counted_share(step, left_s, getter, rates[i]))  # type: ignore[arg-type]
                start = now["t"]
                taken = 6 if stopped is not None and name == stopped.analysis else 0
                while now["t"] < start + first_s + blocks_s + after_s:
                    ran = now["t"] - start
                    if ran >= first_s and blocks:
                        timed = taken + min(blocks, int(blocks * max(0.0, ran - first_s) / blocks_s))
                        lines = {0: SimpleNamespace(new=[1] * timed)}
                        timing["now"] = (SimpleNamespace(analysis=name, lines=lines), taken)
                    shown.append((now["t"], column.render(display.progress.tasks[0]).plain))
                    now["t"] += 0.5
                timing["now"] = None
                run.advance()
    return shown


def _seconds(text: str) -> float:
    h, m, s = text[5:].split(":")
    return int(h) * 3600 + int(m) * 60 + int(s)


def test_a_resumed_runs_eta_follows_the_work_left_and_its_floor_is_one() -> None:
    end = sum(first + blocks for _n, first, blocks, _b, _a in WENT)
    shown = _etas(PLAN, {"spectrum"}, STOPPED, WENT)
    for t, text in shown:  # a floor never says more is left than is (a block counts once it ends: 1.5 s)
        assert not text.startswith("ETA >") or _seconds(text) <= end - t + 1.5, (t, text, end - t)
    for (t, before), (_u, after) in zip(shown, shown[1:]):  # no jumps: ~10 s -> >40 s -> ~3 s -> >18 s, but
        if before[4] == after[4]:  # where the estimate turns into a floor at the plan's end (walk 10: was `?`)
            assert _seconds(after) <= _seconds(before) + 3.0, (t, before, after)
    assert abs(_seconds(shown[0][1]) - end) <= 0.3 * end, shown[0]


def test_the_eta_near_the_end_covers_the_benchmarks_one_off_work() -> None:
    """Walk 10: `ETA ~0:00:01` at 0:00:21 of a run that went on 7 s more (`geometry: starting
    workers`, then its rounds and verifying), and `ETA ?` past the plan. A run that goes as planned,
    its one-off work (plan.overheads.timing_one_off_s) included: near the end the ETA covers what is
    truly left, and past the plan it is a floor, never `?`."""
    steps = [_step("spectrum", 0.03, [4.4, 4.4]), _step("top3", 0.04, [1.3] * 4), _step("geometry", 0.04, [0.36] * 2)]
    one_off = [TIMING_WORKER_S * PROCESSES * len(s.timed) for s in steps]
    idle = sum(s.estimate_s + sum(t.estimate_s for t in s.timed) for s in steps) + sum(one_off)
    plan = SimpleNamespace(steps=steps, overheads={}, timings_s=limited(steps, None), estimate_s=2.0 * idle, busy_s=lambda s: 2.0 * s)
    # each analysis at twice its idle plan: full analysis and half its one-off work before its first
    # block, its blocks, the other half after them
    went = [(s.analysis, 2.0 * (s.estimate_s + o / 2), 2.0 * sum(t.estimate_s for t in s.timed), 6, o)
            for s, o in zip(steps, one_off)]
    end = sum(first + blocks + after for _n, first, blocks, _b, after in went)
    shown = _etas(plan, set(), None, went)
    assert not any(text == "ETA ?" for _t, text in shown), shown
    for t, text in shown:
        if t >= end - 6.0:  # the last analysis: what is left, less a block (0.33 s) and a redraw
            assert _seconds(text) >= end - t - 0.9, (t, text, end - t)
            assert not text.startswith("ETA >") or _seconds(text) <= end - t, (t, text, end - t)


def test_the_eta_near_the_end_counts_the_workers_one_off_work_as_this_run_measured_it() -> None:
    """Walk 12: a first run's ETA read `~0:00:05` during the last analysis' `geometry: starting
    workers`, 12 s before its end: its timing workers took longer than the plan's constant. Each
    analysis here runs as planned but for its workers, which take 3x the plan's each: from the second
    analysis on the run replans by what the first measured, and the last analysis' ETA covers what
    is left."""
    steps = [_step("spectrum", 0.03, [4.4, 4.4]), _step("top3", 0.04, [1.3] * 4), _step("geometry", 0.04, [0.36] * 2)]
    one_off = [3.0 * TIMING_WORKER_S * PROCESSES * len(s.timed) for s in steps]  # 3x the plan's
    idle = sum(s.estimate_s + sum(t.estimate_s for t in s.timed) + TIMING_WORKER_S * PROCESSES * len(s.timed)
               for s in steps)
    plan = SimpleNamespace(steps=steps, overheads={}, timings_s=limited(steps, None), estimate_s=2.0 * idle, busy_s=lambda s: 2.0 * s)
    went = [(s.analysis, 2.0 * (s.estimate_s + o / 2), 2.0 * sum(t.estimate_s for t in s.timed), 6, 2.0 * o / 2)
            for s, o in zip(steps, one_off)]
    end = sum(first + blocks + after for _n, first, blocks, _b, after in went)
    last = went[-1][1] + went[-1][2] + went[-1][4]
    shown = _etas(plan, set(), None, went, measured=[TIMING_WORKER_S] + [3.0 * TIMING_WORKER_S] * 2)
    for t, text in shown:
        if t >= end - last:  # the last analysis, from its start
            assert _seconds(text) >= end - t - 1.0, (t, text, end - t)


def test_the_eta_counts_a_finished_analysis_by_what_it_timed_not_by_its_plan() -> None:
    """Walk 12: a busy first run's limit cut top3 to 2 of its 4 points (6 s of a planned 19); counted
    as planned, the run's pace read 0.74 and the last analysis' ETA ran short. Here top3 times 2 of
    its 4 points and the rest goes at twice the idle plan: replanned by what top3 timed, the last
    analysis' ETA covers what is left."""
    steps = [_step("spectrum", 0.03, [4.4, 4.4]), _step("top3", 0.04, [1.3] * 4), _step("geometry", 0.04, [0.36] * 2)]
    one_off = [TIMING_WORKER_S * PROCESSES * len(s.timed) for s in steps]
    idle = sum(s.estimate_s + sum(t.estimate_s for t in s.timed) for s in steps) + sum(one_off)
    plan = SimpleNamespace(steps=steps, overheads={}, timings_s=limited(steps, None), estimate_s=2.0 * idle, busy_s=lambda s: 2.0 * s)
    timed = [(8.8, 2), (2.6, 2), (0.72, 2)]  # top3: 2 of its 4 points, their workers alone started
    went = [(s.analysis, 2.0 * (s.estimate_s + TIMING_WORKER_S * PROCESSES * n / 2), 2.0 * t, 6,
             2.0 * TIMING_WORKER_S * PROCESSES * n / 2) for s, (t, n) in zip(steps, timed)]
    end = sum(first + blocks + after for _n, first, blocks, _b, after in went)
    last = went[-1][1] + went[-1][2] + went[-1][4]
    shown = _etas(plan, set(), None, went, measured=[TIMING_WORKER_S] * 3, did=timed)
    for t, text in shown:
        if t >= end - last:  # the last analysis, from its start
            assert _seconds(text) >= end - t - 1.0, (t, text, end - t)
