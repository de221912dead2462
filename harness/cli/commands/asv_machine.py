"""`harness asv-machine`: this machine's asv name, host and GPU model (or cpu), so GPU and CPU
results never share a history."""

from __future__ import annotations

import argparse

from harness.machine.info import probe
from harness.run.asv_cases import machine_name



def arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments."""


def main(args: argparse.Namespace) -> int:
    print(machine_name(probe()))
    return 0
