"""The benchmark phase's progress item: one counter of its seconds against its limit, or the
one-off work holding it still; and the log line that says the limit stopped an analysis' rounds.
The work still to do, for the ETA, is run.eta's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.base.progress import LivePhrases, Phrases
from harness.base.units import plural
from harness.bench.budget import Budget
from harness.run.rounds import Rounds


def clock_text(analysis: str, live_s: float, limit_s: float, limit: str) -> Phrases:
    """`bench 8/12 s floor · top3` (`bench 2.9/4.0 s budget` under a 10 s limit); past it `bench +2.9 s floor · top3`: one counter of the whole
    benchmark's seconds, every analysis' so far, against its limit named as the run's Benchmark line
    names it (the budget, or the floor when that is more), the analysis under way after it. Walk 12
    could not read `geometry: 19.4 > 15.9 s floor`; walk 13 read `top3: 12.7 of 21.0 s floor` as top3's
    own seconds; walk 14 lost the name in the 32 columns a 100-column display leaves it (`benchmark:
    9.9 of 17.6 s floor`), and read `timed 21.9 of 20.0 s` past it as a fraction over 100%. Both figures
    in the limit's precision, whole seconds from a 10 s limit (walk 18 read `9.3/13` then `12/13` on one
    row): an 8-letter name whole at 100 columns up to `bench 99/99 s budget` and `bench +999 s budget`,
    the same words at every width."""
    if live_s > limit_s:
        return Phrases((f"bench +{_figure(live_s - limit_s, live_s - limit_s)} s {limit}", analysis), sep=" · ")
    return Phrases((f"bench {_figure(live_s, limit_s)}/{_figure(limit_s, limit_s)} s {limit}", analysis), sep=" · ")


def _figure(seconds: float, scale: float) -> str:
    """Tenths below a 10 s scale, where a counter moving by tenths says the benchmark is timing;
    whole from it (a 9.97 s limit is `10`, as its whole figure would round)."""
    return f"{seconds:.1f}" if scale < 9.95 else f"{seconds:.0f}"


def stopped_text(analysis: str, timed: Sequence[int], count: int, planned: int, processes: int, limit_s: float,
                 limit: str) -> str:
    """`top3: rounds: 6 of the 15 planned (2 of 5 in each of 3 processes); the 4.0 s floor stopped
    the rest`: a log's last round line read as a full count (`round 2: 24/24`) with no word that the
    budget ended the rounds. Counted as the table's rounds column counts, a round in each process
    (`rounds: 1` sat beside the table's `3+9`); `1 to 3 by strategy` where a round cut short left
    some strategies fewer or none (`timed`: this run's rounds of each point), as their rows show;
    `1 of the 3 planned` where a round cut in its first process left each strategy one (walk 10 read
    `rounds: 3` for 8 of 24 blocks)."""
    said = f"the {limit_s:.1f} s {limit}"
    workers = plural(processes, 'process', 'processes')
    each = f"{count} of {planned} in each of {workers}"
    some = [t for t in timed if t > 0]
    lo, hi = min(some, default=0), max(some, default=0)
    if lo < hi or len(some) < len(timed) or (some and hi < count * processes):
        counted = f"{lo} to {hi} by strategy, of" if lo < hi else f"{lo} of"
        untimed = len(timed) - len(some)
        none = f", {plural(untimed, 'strategy', 'strategies')} not timed" if untimed else ""
        return (f"{analysis}: rounds: {counted} the {planned * processes} planned ({planned} planned in each of "
                f"{workers}){none}; {said} stopped the rest")
    if count < planned:
        return (f"{analysis}: rounds: {count * processes} of the {planned * processes} planned ({each}); "
                f"{said} stopped the rest")
    return (f"{analysis}: rounds: {count * processes} ({planned * processes} planned, {each}); "
            f"{said} ran out before every speedup settled")


def own_rounds(rounds: Rounds) -> list[int]:
    """This run's rounds of each point still timing, on its least-timed group: what its row counts."""
    return [min(len(rounds.lines[id(s)].new) for s in subjects) for label, subjects in rounds.subjects.items()
            if subjects and label not in rounds.failures and label not in rounds.lost]


@dataclass(frozen=True)
class BenchClockLabel(LivePhrases):
    """The run's progress item, read at every redraw: the benchmark's clock moves as each block
    is timed, not only when the next analysis starts (and holds still while an analysis computes
    its answers: the count is the benchmark's, not the analysis'); while one-off work holds it
    still, the work's name (`spectrum: starting workers`; walk 9: `0.0/3.0 s budget` stood for 6 s)."""

    analysis: str
    budget: Budget
    limit_s: float
    limit: str = "budget"  # what limit_s is: "budget", or "floor" when the floor is more

    def phrases(self) -> Phrases:
        if doing := self.budget.doing:
            return Phrases((f"{self.analysis}: {doing}",))
        return clock_text(self.analysis, self.budget.live_s, self.limit_s, self.limit)
