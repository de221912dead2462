"""The crossover check (issue 49): a crossover a sweep predicts is checked by one ordinary `harness
run` at that point, where the two strategies should be within their intervals of each other.

    python -m benchmarks.sweep_crossover [SPEC] [--set KEY=VALUE ...] [--sweep FOLDER] [--output DIR]

It runs SPEC's sweep (default configs/sweep_rank.toml) into DIR/sweep, or reads the sweep already
in FOLDER (run from SPEC with the same --set), then for each crossover it predicts runs SPEC once
at the crossing (the swept key at the crossing size, the other key at its held value, `sweep={}`)
into DIR/check-<n>, and says whether the two strategies' intervals for the next run's seconds per
matrix overlap there. Exit 0 when every crossover holds, 1 when one does not, 2 when nothing could
be checked. `--quick` sweeps tiny sizes, to check the script, not the crossover. Run it on an idle
machine. Not an asv suite: it defines no time_ or track_ function, and does nothing when imported."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.speedups import ROOT

SPEC = ROOT / "configs" / "sweep_rank.toml"
QUICK = ["data.modules.w=[40, 32]", "sweep.data.rank=[2, 4, 8]", "benchmark.warmup=0"]


def at_size(values: list[Any], size: float) -> Any:
    """A value of the swept key at `size`: a whole number where the swept values are, a shape the
    first swept one with its larger sides (a fit's size) set to it."""
    first = values[0]
    if isinstance(first, list):
        return [max(1, round(size)) if side == max(first) else side for side in first]
    return max(1, round(size)) if all(isinstance(v, int) for v in values) else float(f"{size:.3g}")


def check(spec: Path, sets: list[str], sweep: Path, folder: Path, budget: list[str]) -> list[tuple[str, bool]]:
    """Each crossover of the sweep in `sweep`, run once at its crossing into `folder`: a sentence,
    and whether it holds (not where the run did not time both strategies). RecordError for a
    sweep or run record that cannot be read."""
    from harness.base.units import format_seconds
    from harness.cli import main as cli
    from harness.record.run_record import load_record
    from harness.record.sweep_fits import NEAR
    from harness.record.sweep_record import axis_name, load_sweep, point_timings
    from harness.report.sweep import crossover_sentence

    record = load_sweep(sweep)
    found = []
    for n, c in enumerate([c for c in record.crossovers if c.distance <= NEAR and c.located], 1):  # the far ones: no run to check
        value = at_size(record.axes[c.axis], c.crossing.size)
        point = {c.axis: value, **c.fixed}
        out = folder / f"check-{n}"
        where = ", ".join(f"{axis_name(k)}={json.dumps(v)}" for k, v in point.items())
        code = cli.main(["run", str(spec), *(f"--set={s}" for s in sets), "--set=sweep={}",
                         *(f"--set={k}={json.dumps(v)}" for k, v in point.items()), "-o", str(out), *budget])
        ran = point_timings(load_record(out)) if code in (0, 3) else []
        timed = {t.strategy: t for t in ran if t.analysis == c.analysis}
        a, b = timed.get(c.a), timed.get(c.b)
        if a is None or b is None:
            found.append((f"{crossover_sentence(c)}: the run at {where} did not time both (exit {code})", False))
            continue
        holds = a.low <= b.high and b.low <= a.high
        verdict = ("within their intervals of each other: the crossover holds" if holds
                   else f"apart beyond their intervals: {min(a, b, key=lambda t: t.seconds).strategy} is "
                        f"{max(a.seconds, b.seconds) / min(a.seconds, b.seconds):.2g}x faster")
        sides = "; ".join(f"{t.strategy} {format_seconds(t.seconds)} ({format_seconds(t.low)}-{format_seconds(t.high)})"
                          for t in (a, b))
        found.append((f"{crossover_sentence(c)}. At {where}: {sides} a matrix, {verdict}", holds))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default=str(SPEC), help="a spec with a [sweep] (default: %(default)s)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="as harness run's")
    parser.add_argument("--sweep", default=None, help="a sweep's folder to check (else the spec's sweep is run first)")
    parser.add_argument("--output", default="results/sweep_crossover", help="folder of the sweep and the checks")
    parser.add_argument("--budget", default=None, help="harness run's --budget, the sweep's and each check's")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the script in seconds")
    args = parser.parse_args(argv)
    sets = [*QUICK, *args.set] if args.quick else args.set
    budget = ["--budget", args.budget] if args.budget else []
    folder = Path(args.output)
    if folder.exists() and any(folder.iterdir()):
        print(f"{folder}: exists and is not empty; choose another with --output", file=sys.stderr)
        return 2
    sweep = Path(args.sweep) if args.sweep else folder / "sweep"
    if args.sweep is None:
        from harness.cli import main as cli

        if cli.main(["run", args.spec, *(f"--set={s}" for s in sets), "-o", str(sweep), *budget]) not in (0, 3):
            print("the sweep failed (see above)", file=sys.stderr)
            return 2
    from harness.record.run_record import RecordError

    try:
        found = check(Path(args.spec), sets, sweep, folder, budget)
    except RecordError as exc:  # one line, not a traceback
        print(exc, file=sys.stderr)
        return 2
    for line, _holds in found:
        print(line)
    if not found:
        print("the sweep predicts no crossover inside or near its range: nothing to check")
        return 2
    return 0 if all(holds for _, holds in found) else 1


if __name__ == "__main__":
    sys.exit(main())
