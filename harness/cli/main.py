"""`harness validate | plan | run | report | compare | history | gate | cache | system | calibrate |
schema`: one module each under harness/cli/commands/, imported only when that command runs.

Exit codes: 0 fine, 1 a regression (compare --fail-on-regression), 2 a user mistake (spec, data,
plan), 3 a verification failed, 4 a regression gate (compare's, `harness gate`) could not judge,
130 interrupted (Ctrl-C), 141 stdout closed early, 143 terminated (SIGTERM, see harness.cli.entry).

Nothing here imports more than the standard library and rich's console: the user's mistakes are recognised by the
classes of the modules the command already imported, so `harness compare --help` and `harness
validate` never pay for numpy's, scipy's or torch's import beyond what they use.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from types import ModuleType

import harness
from harness.base.lines import wrapped
from harness.cli.commands.spec_args import as_typed
from harness.cli.console import err, say
from harness.cli.exit_codes import EXIT_USER_ERROR, exit_code, stopped

# each command's one-line help, here so that `harness --help` lists them without importing them;
# the command `asv-machine` is the module harness.cli.commands.asv_machine
COMMANDS: dict[str, str] = {
    "validate": "check a spec and report every problem",
    "plan": "show what would run, where, and why",
    "run": "run a spec and record the results",
    "report": "write a run's report: self-contained HTML, or the results as Markdown, CSV or JSON",
    "compare": "compare runs of one spec: timing ratios and their significance",
    "cache": "list, verify or clear the result cache",
    "asv-machine": "print this machine's asv name: host and GPU model (or cpu)",
    "system": "show what would make timings unreliable here right now",
    "calibrate": "measure this machine (GEMM peak, bandwidth, reads, every strategy) so that auto plans from "
                 "measurements",
    "history": "asv results across commits and machines as a self-contained HTML page",
    "gate": "the regression gate: this repository's BASE against HEAD, three asv runs each (exit 1 on a regression)",
    "schema": "print the spec's JSON Schema",
}
# (module, class): a user's mistake, one line per problem and exit 2, never a traceback
USER_ERRORS = [("harness.specs.reading", "SpecError"), ("harness.plan.model", "PlanError"),
               ("harness.data.workload", "DataError"), ("harness.record.run_record", "RecordError"),
               ("harness.report.history", "HistoryError"), ("harness.run.output", "OutputError")]


DESCRIPTION = ("Benchmark linear algebra over ML model weights, declared in a TOML spec:\nevery compared "
               "strategy timed and verified against float64 references,\nspeedups with their 95% intervals.")
EXAMPLES = """examples:
  harness validate configs/smoke.toml           every problem of a spec at once
  harness run configs/smoke.toml                run it: verdicts, results table, warnings
  harness run configs/smoke.toml --wide -v      every column and every detail
  harness run configs/task_geometry.toml --set data.adapters=4 --set 'analysis[2].components=3'
  harness report results/smoke/<run> --format md    the results for a pull request
  harness compare RUN_A RUN_B                   what changed, and whether it is significant

`harness COMMAND --help` says more; README.md is the manual."""


class _Help(argparse.RawDescriptionHelpFormatter):
    """A description's and an epilog's own line breaks kept (the examples' columns), each line
    wrapped between words at argparse's width (COLUMNS, else the terminal's), which a pipe's
    `COLUMNS=100 harness gate --help` overran."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        width = max(width, 20)
        lines = text.splitlines()
        # one example too wide for its columns: each on two lines, so that none reads as another's part
        apart = any(len(line) > width and EXAMPLE.fullmatch(line) for line in lines)
        return "\n".join(indent + _fitted(line, width, apart) if line else "" for line in lines)


# an example's line: its indent, its command, two spaces or more, what it does
EXAMPLE = re.compile(r"( +)(harness .*?\S) {2,}(\S.*)")
OPTION_VALUE = re.compile(r"(?<!\S)(--?[\w-]+) (?=[^\s-])")  # `--set X`: parted, the X read as a word alone


def _fitted(line: str, width: int, apart: bool) -> str:
    """A line wrapped between words at `width`; an example `apart` has its command on a line of its
    own and what it does on the next, further in (walk 22 at 80 columns: `… every problem of a spec
    at` then `once` under the command), an option kept with its value."""
    found = EXAMPLE.fullmatch(line) if apart else None
    if found is None:
        return _unorphaned(line, width)
    own, command, what = found.groups()
    return f"{_unorphaned(own + command, width)}\n{_unorphaned(own + ' ' * 4 + what, width)}"


def _unorphaned(line: str, width: int) -> str:
    """`line` wrapped, each command-line option with its value on one line, and its last line never
    one word alone (`README.md is the` then `manual.`) where a line up to a third narrower avoids it."""
    held = OPTION_VALUE.sub("\\1\u00a0", line)
    for narrower in range(width, width * 2 // 3, -1):
        text = wrapped(held, narrower)
        if "\n" not in text or len(text.rpartition("\n")[2].split()) > 1:
            break
    else:
        text = wrapped(held, width)
    return text.replace("\u00a0", " ")


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"harness.cli.commands.{name.replace('-', '_')}")


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's arguments, or with `only` that command's alone (the others listed by name
    and help, so `harness --help` is whole and a command imports only its own module)."""
    p = argparse.ArgumentParser(prog="harness", description=DESCRIPTION, epilog=EXAMPLES,
                                formatter_class=_Help)
    p.add_argument("--version", action="version", version=f"%(prog)s {harness.__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in COMMANDS.items():
        module = command_module(name) if only is None or only == name else None
        command = sub.add_parser(name, help=help_text, description=help_text, epilog=getattr(module, "EPILOG", None),
                                 formatter_class=_Help)
        if module is not None:
            module.arguments(command)
    return p


def _user_error_lines(exc: Exception) -> list[str] | None:
    """The lines of a user's mistake, or None for a bug. A class whose module was never imported
    cannot have raised it, so nothing is imported here."""
    for module, name in USER_ERRORS:
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(exc, getattr(loaded, name)):
            return list(getattr(exc, "lines", None) or [str(exc)])
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((word for word in argv if not word.startswith("-")), None)
    args: argparse.Namespace | None = None
    try:
        args = parser(chosen if chosen in COMMANDS else "").parse_args(argv)  # "": no command's arguments
        return int(command_module(args.command).main(args))
    except KeyboardInterrupt as exc:  # before a run folder exists: nothing to keep, but say so
        err.print(f"{stopped(exc)}: nothing was written", markup=False)
        return exit_code(exc)
    except Exception as exc:
        lines = _user_error_lines(exc)
        if lines is None:
            raise
        for line in lines:
            say(as_typed(line, args), err, markup=False)
        return EXIT_USER_ERROR
