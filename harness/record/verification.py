"""The verdict on one strategy's answer against the float64 references: a value object that
the record, the cache entries and the reports read; compute.verify judges."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict


class Verification(BaseModel):
    # a failed strategy's error is inf (and a wrong answer's may be inf or NaN): written as such,
    # not as null, so the record reads back
    model_config = ConfigDict(ser_json_inf_nan="constants")

    strategy: str
    n_checked: int
    tolerance: float
    values_error: float
    vectors_error: float | None
    passed: bool
    reason: str | None = None  # why the strategy gave no answer to check (None: it answered)

    @property
    def worst(self) -> float:
        """The worse of its value and vector errors: what the tolerance judges (`judged`)."""
        return max(self.values_error, self.vectors_error or 0.0)

    @classmethod
    def failed(cls, strategy: str, tolerance: float, reason: str) -> Verification:
        """The verdict on a strategy that raised instead of answering: failed, infinitely wrong."""
        return cls(strategy=strategy, n_checked=0, tolerance=tolerance, values_error=float("inf"),
                   vectors_error=None, passed=False, reason=reason)

    @classmethod
    def judged(
        cls, strategy: str, n_checked: int, tolerance: float, values_error: float,
        vectors_error: float | None = None,
    ) -> Verification:
        """The verdict: passed when the worst error is finite and within the tolerance."""
        worst = max(values_error, vectors_error or 0.0)
        return cls(
            strategy=strategy, n_checked=n_checked, tolerance=tolerance, values_error=values_error,
            vectors_error=vectors_error, passed=bool(np.isfinite(worst) and worst <= tolerance),
        )
