"""`harness calibrate`: measure this machine into its wisdom (or show the wisdom), for `auto` to
plan from; it says what it kept and what it dropped, and exits 4 when it kept nothing (a busy
machine), so that a script does not take the machine as calibrated."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from harness.base.progress import Display
from harness.base.lines import print_shown
from harness.cli.console import err, out, say
from harness.cli.exit_codes import EXIT_INCONCLUSIVE
from harness.machine import wisdom
from harness.machine.info import probe
from harness.plan.model import PlanError
from harness.report.machine_view import wisdom_tables
from harness.run.calibrate import calibrate as measure_machine

EPILOG = ("exit codes: 0 kept measurements; 4 kept none (a busy machine: every measurement dropped as unreliable, "
          "so `auto` plans from what earlier runs measured, else from the cost model; run it again on a quieter machine); 2 nowhere to keep them (wisdom off, or --dir cannot be written)")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="fewer shapes and shorter probes (about a minute on 2 busy cores)")
    parser.add_argument("--show", action="store_true", help="print this machine's wisdom; measure nothing")
    parser.add_argument("--dir", help="folder to keep the wisdom in (default: wisdom/ in the user's cache folder, "
                        "or $HARNESS_WISDOM)")


def main(args: argparse.Namespace) -> int:
    where = Path(args.dir) if args.dir else wisdom.folder()
    if where is None:
        raise PlanError([f"calibrate: wisdom is off (${wisdom.ENV}=off)"])
    machine = probe()
    if not args.show:
        try:  # before minutes of measuring, not after: their results had nowhere to go
            wisdom.check_writable(where, machine)
        except OSError as exc:
            raise PlanError([f"calibrate: cannot keep the wisdom in {where} ({exc.strerror or exc}); expected a "
                             f"writable folder (--dir, or ${wisdom.ENV})"]) from None
        with Display(err) as display:
            _stored, notes, kept = measure_machine(where, machine, display, quick=args.quick)
        for note in notes:
            say(escape(note), err)  # wrapped between words on a terminal ("took 68% of t / he 2 CPUs")
        if not kept:  # the note above says why and what to do; a script must not read it as calibrated
            return EXIT_INCONCLUSIVE
    stored = wisdom.load(where, machine)
    for renderable in wisdom_tables(stored, wisdom.path_for(where, machine)):
        print_shown(out, renderable)
    return 0
