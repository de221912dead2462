"""Walk 18: smoke on a busy machine read `geometry: starting workers … ETA ~0:00:00` with geometry's
rounds all ahead: its planned seconds were spent while its workers started, and the planned time alone
took the ETA to nothing. Until an analysis' first block is timed, its timing is held out of what time
alone counts done (run.eta's Held, base.eta.eta_s's `held`)."""

from types import SimpleNamespace

import pytest

from harness.base.eta import eta_s
from harness.run.eta import Held

UNITS, ESTIMATE = [3.0, 2.0, 4.0, 2.0], 11.0  # four analyses, the first three finished at the plan's pace


def _timing(analysis: str, blocks: int, kept: int = 0) -> tuple[SimpleNamespace, int]:
    return SimpleNamespace(analysis=analysis, lines={0: SimpleNamespace(new=[1] * blocks)}), kept


def test_an_analysis_whose_blocks_have_not_begun_keeps_its_timing_in_the_eta() -> None:
    step = SimpleNamespace(analysis="geometry", estimate_s=0.5)  # its full analysis; its timing 1.5 s
    now: dict[str, object] = {"timing": None}
    held = Held(step, 1.5, lambda: now["timing"])  # type: ignore[arg-type]
    for timing in (None, _timing("top3", 4), _timing("geometry", 0), _timing("geometry", 3, kept=3)):
        now["timing"] = timing  # not begun, another analysis' blocks, its workers starting, a stopped run's blocks
        assert held() == pytest.approx(0.75), timing
    # 1.6 s into geometry's planned 2 s, none of it counted: the planned time alone said 80% done
    before = eta_s(9.0 + 1.6, 3.0, UNITS, ESTIMATE, 9.0, planned_share=0.8)
    assert before.text() == "ETA ~0:00:00" and not before.over  # walk 18, as it was without `held`
    waiting = eta_s(9.0 + 1.6, 3.0, UNITS, ESTIMATE, 9.0, planned_share=0.8, held=held())
    # its held timing in the figure; past the 0.5 s counted for its work before it, a floor (walk 21)
    assert waiting.seconds == pytest.approx(0.75 * 2.0) and waiting.text() == "ETA >0:00:01"
    counting = eta_s(9.0 + 0.4, 3.0, UNITS, ESTIMATE, 9.0, planned_share=0.2, held=held())
    assert counting.seconds == pytest.approx(1.6) and counting.text() == "ETA ~0:00:02"
    now["timing"] = _timing("geometry", 4, kept=3)  # its first block: its blocks count it from here
    assert held() == 0.0
    now["timing"] = None  # its rounds ended: still counted, never held again
    assert held() == 0.0
    assert eta_s(9.0 + 1.6, 3.0, UNITS, ESTIMATE, 9.0, planned_share=0.8, held=held()) == before
    past = eta_s(9.0 + 2.5, 3.0, UNITS, ESTIMATE, 9.0, planned_share=0.9, held=0.75)
    assert past.over and past.seconds == pytest.approx(0.75 * 2.0)  # past its plan: its timing still ahead, a floor
