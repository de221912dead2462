"""`harness system`: what would make timings unreliable on this machine right now, as `pyperf
system show` says it, and which processes are busy."""

from __future__ import annotations

import argparse
import math
import time

from harness.base.progress import Display
from harness.base.units import format_seconds
from harness.bench.conditions import sample_conditions
from harness.cli.console import err, say
from harness.linalg.device import torch_module
from harness.machine.info import probe
from harness.machine.processes import busiest, cpu_ticks
from harness.report.machine_view import system_lines


def _watch(text: str) -> float:
    """`system --seconds`: how long to sample the machine, a positive time up to an hour."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds above 0, at most 3600")
    return seconds


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=_watch, default=1.0, help="how long to watch the machine (default 1)")


def main(args: argparse.Namespace) -> int:
    # a live phase: torch's import and the watch left the terminal silent 4-8 s on a busy machine (walk 21)
    with Display(err) as display, display.phase("watching this machine") as phase:
        phase.item("importing torch (its thread pool is part of what timings run with)")
        torch_module()
        machine = probe()
        phase.item(f"its CPUs, load and processes for {format_seconds(args.seconds)}")
        phase.summary = f"torch imported, then {format_seconds(args.seconds)} of its CPUs, load and processes"
        before, start = cpu_ticks(), time.monotonic()
        conditions = sample_conditions(args.seconds, machine.cores)
        busy = busiest(before, cpu_ticks(), time.monotonic() - start)
    for line in system_lines(machine, conditions, busy):
        say(line)
    return 0
