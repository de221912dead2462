"""A misspelt name gets the valid one it is a slip of, and nothing it merely shares letters with."""

from harness.base.suggest import did_you_mean
from harness.strategies.registry import strategy_problem


def test_a_slip_of_a_letter_or_two_is_suggested() -> None:
    assert did_you_mean("numpyy", ["numpy", "torch"]) == "did you mean 'numpy'?"
    assert did_you_mean("svdvalz", ["svdvals", "svd", "svd_topk", "pca"]) == "did you mean 'svdvals'?"
    assert did_you_mean("tortch", ["numpy", "torch"]) == "did you mean 'torch'?"


def test_a_name_that_only_shares_letters_gets_no_suggestion() -> None:
    """Walk-through 7: 'numpyy' for svd_topk was offered 'cupy' (difflib's ratio 0.6, its default cutoff)."""
    problem = strategy_problem("numpyy", "svd_topk")
    assert problem == "unknown strategy 'numpyy'"
