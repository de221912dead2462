"""The log line that says the budget ended an analysis' rounds (run.clock.stopped_text), and that
only a log gets it (base.progress.Display.logged): a terminal saw the rounds go by."""

import io

from rich.console import Console

from harness.base.progress import Display
from harness.run.clock import stopped_text


def test_the_line_says_how_many_rounds_of_the_planned_and_the_limit() -> None:
    """Counted as the table's rounds column counts, a round in each process: `rounds: 1` sat beside `3+9`."""
    assert stopped_text("top3", [6, 6], 2, 5, 3, 4.0, "floor") == (
        "top3: rounds: 6 of the 15 planned (2 of 5 in each of 3 processes); the 4.0 s floor stopped the rest")
    assert stopped_text("top3", [3, 3, 3], 1, 1, 3, 17.3, "budget") == (
        "top3: rounds: 3 (3 planned, 1 of 1 in each of 3 processes); the 17.3 s budget ran out before every "
        "speedup settled")


def test_a_round_cut_short_says_the_strategies_fewest_and_most() -> None:
    """The smoke run's log said `svd_topk: rounds: 3` of a round the budget cut at 11 of 24 blocks,
    beside the table's `1 (scipy_svds 2)`."""
    assert stopped_text("svd_topk", [1, 2, 3], 1, 1, 3, 4.0, "budget") == (
        "svd_topk: rounds: 1 to 3 by strategy, of the 3 planned (1 planned in each of 3 processes); the 4.0 s budget "
        "stopped the rest")
    assert stopped_text("geometry", [1, 1, 0], 1, 1, 3, 4.0, "budget") == (
        "geometry: rounds: 1 of the 3 planned (1 planned in each of 3 processes), 1 strategy not timed; the 4.0 s "
        "budget stopped the rest")


def test_a_round_cut_in_its_first_process_counts_what_each_strategy_got() -> None:
    """Walk 10: `svd_topk: rounds: 3 (3 planned, 1 of 1 in each of 3 processes)` where the budget
    timed 8 of 24 blocks, one process's, beside the table's `1+15`."""
    assert stopped_text("svd_topk", [1, 1, 1, 1], 1, 1, 3, 4.0, "budget") == (
        "svd_topk: rounds: 1 of the 3 planned (1 planned in each of 3 processes); the 4.0 s budget stopped the rest")


def test_only_a_log_gets_the_line() -> None:
    for live in (False, True):
        text = io.StringIO()
        with Display(Console(file=text, width=200, force_terminal=live), live=live) as display:
            display.logged("top3: rounds: 2 of the 5 planned")
        assert ("top3: rounds: 2 of the 5 planned" in text.getvalue()) is not live
