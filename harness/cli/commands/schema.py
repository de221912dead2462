"""`harness schema`: the spec's JSON Schema, for editors and `jsonschema`."""

from __future__ import annotations

import argparse
import json

from harness.specs.sections import Spec



def arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments."""


def main(args: argparse.Namespace) -> int:
    print(json.dumps(Spec.model_json_schema(), indent=2))
    return 0
