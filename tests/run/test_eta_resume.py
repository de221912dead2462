"""A resumed run's ETA (walk-through 9): resumed into a folder where `spectrum` finished (kept as
timed) and `top3` stopped mid-benchmark (half its blocks kept), it read `~0:00:10`, `>0:00:40`,
`~0:00:03`, `>0:00:18` in a run that ended 27 s after its start: the kept analysis and the kept
blocks were counted as work to do, and done in no time. The run's live ETA (base.progress) over
run.clock's work left and counted share, on a scripted clock."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from harness.base.progress import Display, planned
from harness.run.clock import counted_share, timing_left_s, work_left


def _step(name: str, estimate_s: float, timed_s: list[float]) -> SimpleNamespace:
    timed = [SimpleNamespace(estimate_s=s, allocations=[SimpleNamespace(rounds=1)]) for s in timed_s]
    return SimpleNamespace(analysis=name, estimate_s=estimate_s, timed=timed)


STEPS = [_step("spectrum", 0.3, [3.2, 3.0, 1.0, 0.2]), _step("top3", 0.3, [0.8, 1.2, 1.3, 0.2]),
         _step("geometry", 0.4, [1.0, 0.4])]
PLAN = SimpleNamespace(steps=STEPS, estimate_s=40.0, busy_s=lambda s: 2.0 * s)
# the stopped run's rounds of top3: 6 of the 12 blocks its 4 points plan in 3 processes
STOPPED = SimpleNamespace(analysis="top3", subjects=[SimpleNamespace(rounds=[1] * 2)] * 3)
# (analysis, seconds to its first block, seconds of its blocks, blocks) as the resumed run went: 26 s
WENT = [("spectrum", 1.0, 0.0, 0), ("top3", 3.0, 9.0, 6), ("geometry", 5.0, 8.0, 6)]


def _etas() -> list[tuple[float, str]]:
    """(elapsed, ETA text) at every half second of the resumed run, drawn by the live display."""
    now, timing = {"t": 0.0}, {"now": None}
    units, estimate_s = work_left(PLAN, {"spectrum"}, STOPPED)  # type: ignore[arg-type]
    shown = []
    with Display(Console(file=io.StringIO(), width=100, force_terminal=True), live=True) as display:
        assert display.progress is not None
        display.progress.get_time = lambda: now["t"]
        with display.phase("task_geometry", 3, estimate_s=estimate_s, units_s=units) as run:
            column = display.progress.columns[-1]
            for i, (step, (name, first_s, blocks_s, blocks)) in enumerate(zip(STEPS, WENT)):
                left_s = timing_left_s(step, name == "spectrum", STOPPED)  # type: ignore[arg-type]
                getter = lambda: timing["now"]  # noqa: E731
                run.within(planned(units[i] * estimate_s / sum(units), clock=lambda: now["t"]),
                           counted=counted_share(step, left_s, getter))  # type: ignore[arg-type]
                start, kept = now["t"], 6 if name == "top3" else 0
                while now["t"] < start + first_s + blocks_s:
                    ran = now["t"] - start
                    if ran >= first_s and blocks:
                        timed = kept + int(blocks * (ran - first_s) / blocks_s)
                        lines = {0: SimpleNamespace(new=[1] * timed)}
                        timing["now"] = (SimpleNamespace(analysis=name, lines=lines), kept)
                    shown.append((now["t"], column.render(display.progress.tasks[0]).plain))
                    now["t"] += 0.5
                timing["now"] = None
                run.advance()
    return shown


def _seconds(text: str) -> float:
    h, m, s = text[5:].split(":")
    return int(h) * 3600 + int(m) * 60 + int(s)


def test_a_resumed_runs_eta_follows_the_work_left_and_its_floor_is_one() -> None:
    end = sum(first + blocks for _n, first, blocks, _b in WENT)
    shown = _etas()
    for t, text in shown:  # a floor never says more is left than is (a block counts once it ends: 1.5 s)
        assert not text.startswith("ETA >") or _seconds(text) <= end - t + 1.5, (t, text, end - t)
    for (t, before), (_u, after) in zip(shown, shown[1:]):  # no jumps: ~10 s -> >40 s -> ~3 s -> >18 s
        if before != "ETA ?" and after != "ETA ?":
            assert _seconds(after) <= _seconds(before) + 3.0, (t, before, after)
    assert abs(_seconds(shown[0][1]) - end) <= 0.3 * end, shown[0]
