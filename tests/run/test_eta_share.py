"""The run's ETA within an analysis counts its timed blocks (run.clock's counted_share, base.progress.Phase.within's
`counted`): its full analysis is done once its rounds start, and its timing by the blocks' share of those planned
still to time (walk 9: a resumed run's kept blocks are behind it, and one planned round counted nothing until it ended)."""

from types import SimpleNamespace

from harness.run.clock import counted_share, timing_left_s


def _timing(analysis: str, blocks: int, kept: int = 0) -> tuple[SimpleNamespace, int]:
    return SimpleNamespace(analysis=analysis, lines={0: SimpleNamespace(new=[1] * blocks)}), kept


def test_the_share_of_an_analysis_its_blocks_say_is_done() -> None:
    one = SimpleNamespace(rounds=1)
    step = SimpleNamespace(analysis="a", estimate_s=2.0, timed=[SimpleNamespace(estimate_s=3.0, allocations=[one])] * 2)
    now: dict[str, object] = {"timing": None}
    share = counted_share(step, timing_left_s(step, False, None), lambda: now["timing"])  # type: ignore[arg-type]
    assert share() == 0.0  # no rounds yet: its planned time alone says how far it is
    now["timing"] = _timing("b", 3)
    assert share() == 0.0  # another analysis' blocks (its own not begun)
    for blocks, done in ((0, 0.25), (3, 0.25 + 0.75 * 0.5), (8, 1.0)):  # 6 planned: 2 points in 3 processes
        now["timing"] = _timing("a", blocks)  # the full analysis: 2 of its 8 planned seconds
        assert share() == done, blocks
    now["timing"] = None
    assert share() == 1.0  # its rounds ended, its features follow: held, never back


def test_a_resumed_analysis_counts_only_the_blocks_left_to_time() -> None:
    one = SimpleNamespace(rounds=1)
    step = SimpleNamespace(analysis="a", estimate_s=2.0, timed=[SimpleNamespace(estimate_s=3.0, allocations=[one])] * 2)
    stopped = SimpleNamespace(analysis="a", subjects=[SimpleNamespace(rounds=[1, 1]), SimpleNamespace(rounds=[1])])
    left = timing_left_s(step, False, stopped)  # type: ignore[arg-type]
    assert left == 3.0 and timing_left_s(step, True, None) == 0.0  # half its blocks kept; a kept analysis: none
    now = {"timing": _timing("a", 3, kept=3)}
    share = counted_share(step, left, lambda: now["timing"])  # type: ignore[arg-type]
    assert share() == 0.4  # its full analysis (2 of the 5 s left), none of the 3 blocks still to time
    now["timing"] = _timing("a", 6, kept=3)
    assert share() == 1.0
