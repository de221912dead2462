"""The arguments of the commands that take a spec (validate, plan, run), and the overrides they
make of them; nothing here imports the spec's models, so `--help` stays fast."""

from __future__ import annotations

import argparse
import json


def spec_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", help="experiment spec (TOML)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a spec value, e.g. --set data.adapters=4 or --set analysis[2].components=3 "
                        "(value parsed as TOML)")


def budget_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--budget", metavar="DURATION",
                        help='time for timing the compared strategies, e.g. "20s" (overrides [benchmark] budget)')


def overrides(args: argparse.Namespace) -> list[str]:
    """--set values, and --budget as the override it is."""
    budget = getattr(args, "budget", None)
    return [*args.set, *([_budget_override(budget)] if budget is not None else [])]


def _budget_override(budget: str) -> str:
    return f"benchmark.budget={json.dumps(budget)}"


def as_typed(line: str, args: argparse.Namespace | None) -> str:
    """A problem with --budget said as the flag typed, not as the override it became (walk 21:
    `--budget 5x` read `--set 'benchmark.budget="5x"': benchmark.budget: '5x' is not a duration`)."""
    budget = getattr(args, "budget", None)
    if budget is None:
        return line
    head, found, rest = line.partition(f"--set {_budget_override(budget)!r}: ")
    return head + f"--budget {budget}: " + rest.removeprefix("benchmark.budget: ") if found else line
