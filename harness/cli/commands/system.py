"""`harness system`: what would make timings unreliable on this machine right now, as `pyperf
system show` says it."""

from __future__ import annotations

import argparse

from harness.bench.conditions import sample_conditions
from harness.cli.console import out
from harness.linalg.device import torch_module
from harness.machine.info import probe
from harness.report.terminal import system_lines



def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=1.0, help="how long to watch the machine (default 1)")


def main(args: argparse.Namespace) -> int:
    torch_module()  # its thread pool is part of what timings run with
    machine = probe()
    for line in system_lines(machine, sample_conditions(args.seconds, machine.cores)):
        out.print(line)
    return 0
