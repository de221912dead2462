"""The run's ETA within an analysis counts its rounds (run.phase's share_of, base.progress.Phase.within's `counted`):
its full analysis is done once the rounds start, and its timing by the rounds' share of the planned."""

from types import SimpleNamespace

from harness.run.phase import BenchPhase


def test_the_share_of_an_analysis_its_rounds_say_is_done() -> None:
    phase = SimpleNamespace(timing=None)
    step = SimpleNamespace(analysis="a", estimate_s=2.0, timed=[SimpleNamespace(estimate_s=3.0), SimpleNamespace(estimate_s=3.0)])
    share = BenchPhase.share_of(phase, step)  # type: ignore[arg-type]
    assert share() == 0.0  # no rounds yet: its planned time alone says how far it is
    phase.timing = (SimpleNamespace(analysis="b", count=3), 4)
    assert share() == 0.0  # another analysis' rounds (its own not begun)
    for count, done in ((0, 0.25), (2, 0.25 + 0.75 * 0.5), (5, 1.0)):
        phase.timing = (SimpleNamespace(analysis="a", count=count), 4)  # the full analysis: 2 of its 8 planned seconds
        assert share() == done, count
    phase.timing = None
    assert share() == 1.0  # its rounds ended, its features follow: held, never back
