"""Numbers as files must hold them to be read: a figure a record, the wisdom or the pool was
edited or damaged into (NaN, -5, 1e400 read as inf) printed "nanx" and "-5x" instead of an error."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1)]
Tally = Annotated[int, Field(ge=0)]
