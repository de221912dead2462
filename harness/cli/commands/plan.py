"""`harness plan SPEC`: what would run, where, why and how long; and the run's context, which
`harness run` prepares the same way."""

from __future__ import annotations

import argparse

from harness.cli.commands.spec_args import budget_argument, overrides, spec_arguments
from harness.cli.console import err, out
from harness.report.terminal import plan_table
from harness.run.prepare import RunContext, prepare_spec, skipped_warning



def arguments(parser: argparse.ArgumentParser) -> None:
    spec_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    budget_argument(parser)


def prepare_context(args: argparse.Namespace) -> RunContext:
    """The run's context (run.prepare.prepare_spec), and the one warning line of input tensors
    the run leaves out."""
    context = prepare_spec(args.spec, overrides(args))
    if context.plan.skipped_inputs:
        err.print(skipped_warning(context.plan.skipped_inputs), markup=False, highlight=False, soft_wrap=True)
    return context


def main(args: argparse.Namespace) -> int:
    from harness.cli.commands import sweep

    if (points := sweep.planned(args)) is not None:
        return sweep.show_plan(points, args.json)
    the_plan = prepare_context(args).plan
    if args.json:
        print(the_plan.model_dump_json(indent=2))
    else:
        out.print(plan_table(the_plan))
    return 0
