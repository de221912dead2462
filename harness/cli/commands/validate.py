"""`harness validate SPEC`: every problem of a spec at once, its data paths included."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.commands.spec_args import spec_arguments
from harness.cli.console import out
from harness.data.registry import build_source
from harness.data.paths import PathError
from harness.spec import SpecError, load_spec



def arguments(parser: argparse.ArgumentParser) -> None:
    spec_arguments(parser)


def main(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec, args.set)
    try:  # listing the matrices checks the paths: what `plan` would refuse, in the same words
        build_source(spec.data, spec.experiment.seed, Path(args.spec).resolve().parent).refs()
    except PathError as exc:
        raise SpecError([f"{args.spec}: {line}" for line in str(exc).splitlines()]) from None
    out.print(f"{args.spec}: valid ({len(spec.analysis)} analyses, data source {spec.data.source})")
    return 0
