"""`harness validate SPEC`: every problem `plan` and `run` would refuse the spec for, at once: the
spec's keys and values, its data paths, and what the plan refuses on this machine and workload
(a strategy that cannot run, k beyond the matrices, more components than adapters, CUDA missing)."""

from __future__ import annotations

import argparse

from harness.base.lines import print_line
from harness.cli.commands.spec_args import spec_arguments
from harness.cli.console import err, out
from harness.run.prepare import skipped_warning
from harness.run.validation import validate


def arguments(parser: argparse.ArgumentParser) -> None:
    spec_arguments(parser)


def main(args: argparse.Namespace) -> int:
    from harness.run.sweep import plan_sweep

    if (sweep := plan_sweep(args.spec, args.set)) is not None:
        print_line(out, f"{args.spec}: valid sweep of {len(sweep.points)} points, each a run of its own; "
                        "`harness plan` shows them")
        return 0
    context = validate(args.spec, args.set)
    if context.plan.skipped_inputs:
        print_line(err, skipped_warning(context.plan.skipped_inputs))
    spec = context.spec
    # wrapped with the hanging indent every other command's lines have (walk 10)
    print_line(out, f"{args.spec}: valid ({len(spec.analysis)} analyses, {len(context.workload)} matrices, data source "
                    f"{spec.data.source}); `harness plan` shows what would run")
    return 0
