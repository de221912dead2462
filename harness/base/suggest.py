"""The "did you mean" of every message about a misspelt name (a key, a strategy, a feature)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# difflib's ratio a suggestion needs: at its default 0.6, 'numpyy' for svd_topk got 'cupy' (walk-through
# 7), which shares only "upy"; a slip of one or two letters ('numpyy', 'svdvalz', 'tortch') is above 0.8
CUTOFF = 0.7


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """`did you mean 'numpy'?`, or "" where no valid name is close enough to be the one meant."""
    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=CUTOFF)
    return f"did you mean {close[0]!r}?" if close else ""
