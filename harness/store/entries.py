"""What the run's cache entries hold beside arrays: a step's product and a strategy's timing."""

from __future__ import annotations

from pydantic import BaseModel

from harness.record.run_record import AnalysisRecord, StrategyTiming
from harness.record.verification import Verification


class StepEntry(BaseModel):
    """A cached step product: feature rows and notes, or a PCA's record (arrays beside it)."""

    csv: str = ""  # feature rows, as features.csv lines
    notes: list[str] = []
    record: AnalysisRecord | None = None


class TimingEntry(BaseModel):
    """What a timing entry holds: one strategy's measurements and verdict on the sample."""

    timing: StrategyTiming
    verification: Verification
