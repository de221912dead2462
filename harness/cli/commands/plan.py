"""`harness plan SPEC`: what would run, where, why and how long; and the run's context, which
`harness run` prepares the same way."""

from __future__ import annotations

import argparse

from harness.cli.commands.spec_args import budget_argument, overrides, spec_arguments
from rich.markup import escape

from harness.base.lines import print_shown
from harness.cli.console import err, out, say
from harness.report.plan_view import plan_lines, plan_table, plan_title
from harness.run.prepare import RunContext, skipped_warning
from harness.run.validation import validate



def arguments(parser: argparse.ArgumentParser) -> None:
    spec_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    budget_argument(parser)


def prepare_context(args: argparse.Namespace) -> RunContext:
    """The run's context (run.validation.validate: every problem, as `validate` lists them), and
    the one warning line of input tensors the run leaves out."""
    context = validate(args.spec, overrides(args))
    if context.plan.skipped_inputs:
        say(escape(skipped_warning(context.plan.skipped_inputs)), err)
    return context


def main(args: argparse.Namespace) -> int:
    from harness.cli.commands import sweep

    if (points := sweep.planned(args)) is not None:
        return sweep.show_plan(points, args.json)
    the_plan = prepare_context(args).plan
    if args.json:
        print(the_plan.model_dump_json(indent=2))
    else:
        say(escape(plan_title(the_plan)))
        print_shown(out, plan_table(the_plan))
        for line in plan_lines(the_plan):
            say(line, hang=2)  # a wrapped sub-line stays under its item
    return 0
