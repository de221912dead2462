"""The run's ETA within an analysis counts its timed blocks (run.eta's counted_share, base.progress.Phase.within's
`counted`): its full analysis is done once its rounds start, and its timing by the blocks' share of those planned
still to time (walk 9: a resumed run's kept blocks are behind it, and one planned round counted nothing until it ended),
with its one-off work (starting workers, verifying: walk 10), AFTER_BLOCKS of it counted once its timing ends."""

from types import SimpleNamespace

import pytest

from harness.bench.budget import PROCESSES
from harness.run.eta import AFTER_BLOCKS, counted_share, timing_left_s, worker_s
from harness.strategies.cost import TIMING_WORKER_S

ONE_OFF = TIMING_WORKER_S * PROCESSES * 2  # two timed points, a worker each in each process


def _timing(analysis: str, blocks: int, kept: int = 0) -> tuple[SimpleNamespace, int]:
    return SimpleNamespace(analysis=analysis, lines={0: SimpleNamespace(new=[1] * blocks)}), kept


def _step() -> SimpleNamespace:
    one = SimpleNamespace(rounds=1)
    return SimpleNamespace(analysis="a", estimate_s=2.0, timed=[SimpleNamespace(estimate_s=3.0, allocations=[one])] * 2)


def test_the_share_of_an_analysis_its_blocks_say_is_done() -> None:
    step = _step()
    left = timing_left_s(step, False, None)  # type: ignore[arg-type]
    assert left == pytest.approx(6.0 + ONE_OFF)
    whole, part, after = 2.0 + left, left / (2.0 + left), AFTER_BLOCKS * ONE_OFF / (2.0 + left)
    now: dict[str, object] = {"timing": None}
    share = counted_share(step, left, lambda: now["timing"])  # type: ignore[arg-type]
    assert share() == 0.0  # no rounds yet: its planned time alone says how far it is
    now["timing"] = _timing("b", 3)
    assert share() == 0.0  # another analysis' blocks (its own not begun)
    for blocks, timed in ((0, 0.0), (3, 0.5), (8, 1.0)):  # 6 planned: 2 points in 3 processes
        now["timing"] = _timing("a", blocks)  # the full analysis: 2 of its `whole` planned seconds
        assert share() == pytest.approx(1.0 - part + (part - after) * timed), blocks
    assert share() < 1.0 and whole > 0  # its last block timed, its verifying still ahead
    now["timing"] = None
    assert share() == 1.0  # its rounds ended, the one-off work after them too: held, never back


def test_a_resumed_analysis_counts_only_the_blocks_left_to_time() -> None:
    step = _step()
    stopped = SimpleNamespace(analysis="a", subjects=[SimpleNamespace(rounds=[1, 1]), SimpleNamespace(rounds=[1])])
    left = timing_left_s(step, False, stopped)  # type: ignore[arg-type]
    assert left == pytest.approx(3.0 + ONE_OFF) and timing_left_s(step, True, None) == 0.0  # half its blocks kept
    now = {"timing": _timing("a", 3, kept=3)}
    share = counted_share(step, left, lambda: now["timing"])  # type: ignore[arg-type]
    assert share() == pytest.approx(2.0 / (2.0 + left))  # its full analysis, none of the 3 blocks still to time
    now["timing"] = _timing("a", 6, kept=3)
    assert share() == pytest.approx(1.0 - AFTER_BLOCKS * ONE_OFF / (2.0 + left))


def test_a_workers_one_off_seconds_are_this_runs_once_measured() -> None:
    """Its measured seconds over the workers started, on an idle machine as the plan counts them
    (the plan's slowdown out); the plan's constant before any started."""
    assert worker_s(0.0, 0, 2.0) == TIMING_WORKER_S
    assert worker_s(6.0, 10, 2.0) == pytest.approx(0.3)
    step = _step()
    assert timing_left_s(step, False, None, 0.3) == pytest.approx(6.0 + 0.3 * PROCESSES * 2)  # type: ignore[arg-type]
