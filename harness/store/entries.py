"""What the run's cache entries hold beside arrays and verdicts: a step's product."""

from __future__ import annotations

from pydantic import BaseModel

from harness.record.run_record import AnalysisRecord


class StepEntry(BaseModel):
    """A cached step product: feature rows and notes, or a PCA's record (arrays beside it)."""

    csv: str = ""  # feature rows, as features.csv lines
    notes: list[str] = []
    record: AnalysisRecord | None = None
