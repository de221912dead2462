"""`harness validate SPEC`: every problem of a spec at once, its data paths included."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.commands.spec_args import spec_arguments
from harness.cli.console import out
from harness.data.registry import build_source
from harness.data.paths import PathError
from harness.spec import PcaAnalysis, SpecError, load_spec



def arguments(parser: argparse.ArgumentParser) -> None:
    spec_arguments(parser)


def main(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec, args.set)
    try:  # listing the matrices checks the paths: what `plan` would refuse, in the same words
        refs = build_source(spec.data, spec.experiment.seed, Path(args.spec).resolve().parent).refs()
    except PathError as exc:
        raise SpecError([f"{args.spec}: {line}" for line in str(exc).splitlines()]) from None
    adapters = len({ref.adapter for ref in refs})
    too_many = [f"{args.spec}: analysis[{i}].components: {a.components} exceeds the {adapters} adapters of the "
                "workload" for i, a in enumerate(spec.analysis) if isinstance(a, PcaAnalysis) and a.components > adapters]
    if too_many:  # the workload decides it, as `plan` would, in the same words
        raise SpecError(too_many)
    out.print(f"{args.spec}: valid ({len(spec.analysis)} analyses, data source {spec.data.source})")
    return 0
