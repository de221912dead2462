"""How cost scales, tracked per commit and machine: the fitted cost exponent of every timed
strategy of a small sweep (configs/sweep_rank.toml at 256 x 256 over three ranks), as `harness run
--fresh --no-cache` of the sweep fits it (docs/sweeps.md). asv reads a rising value as worse, and a
rising exponent is a regression in how cost grows with the work: numpy's svdvals should stay
blind to the rank (about 0), factored's grow with it.

One sweep per `asv run`, in setup_cache, with a wisdom of its own (speedups.run_spec): a few
seconds, most of them its points' worker processes starting. A strategy the sweep did not fit
(timed at fewer than two points) is a NaN: failed in asv.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from benchmarks.speedups import ROOT, RUN_TIMEOUT, run_spec, timed_points

SPEC = ROOT / "configs" / "sweep_rank.toml"
# small enough for `asv run --quick` in CI; large enough that a call is more than its overheads
SETS = ["data.modules.w=[256, 256]", "sweep.data.rank=[8, 32, 128]", "benchmark.warmup=0"]
BUDGET = "1s"  # the whole sweep's: its floor (two rounds of every strategy at every point) is timed whatever it is


def exponents(folder: Path) -> dict[str, float]:
    """`analysis/strategy` -> the exponent the sweep in `folder` fitted along its axis."""
    from harness.record.sweep_record import load_sweep

    return {f"{fit.analysis}/{fit.strategy}": fit.power.exponent for fit in load_sweep(folder).fits}


class Exponents:
    """Each timed strategy's fitted exponent of cost against the swept rank."""

    params = timed_points(SPEC, [*SETS, "sweep={}"])
    param_names = ["point"]
    timeout = 2 * RUN_TIMEOUT
    rounds = 1  # a track's value is read from the cache: asv's second round would read it again

    def setup_cache(self) -> dict[str, float]:
        with tempfile.TemporaryDirectory(prefix="harness-asv-") as tmp:
            return exponents(run_spec(SPEC, SETS, BUDGET, Path(tmp)))

    def track_exponent(self, cache: dict[str, float], point: str) -> float:
        """k of t = c rank^k: rising is cost growing faster with the rank."""
        return cache.get(point, math.nan)

    track_exponent.unit = "exponent"  # type: ignore[attr-defined]
