"""`harness cache ls | verify | clear`: the result cache of `--dir`, else of SPEC, else
./.harness-cache. `clear SPEC` removes that experiment's entries only; `--all` every entry."""

from __future__ import annotations

import argparse
import math
import re
from datetime import datetime, timezone
from pathlib import Path

from rich.markup import escape

from harness.base.units import format_bytes
from harness.base.lines import print_shown
from harness.cli.console import err, out
from harness.cli.exit_codes import EXIT_VERIFICATION_FAILED
from harness.plan.model import PlanError
from harness.report.fitting import Fitted, rule_table, value
from harness.specs.reading import load_spec
from harness.store.cache import DEFAULT_DIR as DEFAULT_CACHE_DIR
from harness.store.cache import CorruptEntry, Entry, ResultCache, locate, read_header, short_keys



MAX_AGE_S = 100 * 365 * 86400.0
# the widest `holds` cell kept on one line: what 100 columns leave beside key, kind and size
HOLDS_WANT = 64
# a key's least hex digits where 16 do not fit (walk 13: 100 columns showed rows alike); more where
# two keys share them (short_keys)
SHORT_KEY = 8
WIDE_KEY = 16


def _age(text: str) -> float:
    """`30d`, `12h`, `15m` or `90s` in seconds; a negative age (`-5d`) would clear everything, and
    float() would take `30 d`, `1_0d`, `infd` and `1e3d`."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([dhms])", text)
    seconds = float(match[1]) * units[match[2]] if match else math.nan
    if not 0 <= seconds <= MAX_AGE_S:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an age like 30d, 12h, 15m or 90s, "
                                         "from 0 to 100 years") from None
    return seconds


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["ls", "verify", "clear"])
    parser.add_argument("spec", nargs="?", help="spec whose [execution] cache_dir to use; clear removes only "
                        "the entries its experiment wrote")
    parser.add_argument("--dir", help=f"cache folder (default {DEFAULT_CACHE_DIR})")
    parser.add_argument("--older-than", type=_age, metavar="AGE",
                        help="clear only entries unused for AGE, e.g. 30d, 12h")
    parser.add_argument("--all", action="store_true",
                        help="clear every entry of the cache folder, not only the SPEC's experiment's")


def result_cache(root: Path, experiment: str = "") -> ResultCache:
    """The store at `root`, its warnings one line on stderr; entries it writes name `experiment`."""
    return ResultCache(root, warn=lambda message: err.print(message, markup=False, highlight=False, soft_wrap=True),
                       experiment=experiment)


def _clear(store: ResultCache, args: argparse.Namespace, experiment: str | None) -> int:
    """Clear the experiment's entries (all with --all, or without a SPEC), and say what stayed."""
    whose = None if args.all else experiment
    count, size = store.clear(args.older_than, experiment=whose)
    of = f" of experiment {whose!r}" if whose is not None else ""
    out.print(f"removed {count} entries{of} ({format_bytes(size)}) from {store.root}", markup=False)
    if whose is not None and (kept := sum(1 for _ in store.entries())):
        out.print(f"kept {kept} entries of other experiments (or shared ones written before entries named "
                  "their experiment); --all removes them too", markup=False)
    return 0


def ls_table(root: Path, entries: list[Entry]) -> tuple[Fitted, int]:
    """The entries' table and how many are corrupt. What an entry holds is one line up to
    HOLDS_WANT: the optional columns leave for it (walk 12, at 100 columns: `float64 reference:
    values of` / `adapter00/layer0/mlp_up`)."""
    # the CLI's one table style (walk 11: a boxed table here, a rule under the header everywhere else)
    table = rule_table(title=f"{root}: {len(entries)} entries, {format_bytes(sum(e.size for e in entries))}")
    for column in ("key", "kind", "experiment", "holds", "size", "last used"):
        # what an entry holds is cut with `…` where its column is narrower, never wrapped (walk 16)
        table.add_column(column, **({"no_wrap": True, "overflow": "ellipsis"} if column == "holds" else
                                    {"overflow": "fold"}))
    keys = [entry.key for entry in entries]
    corrupt, widest = 0, 0
    for entry, key in zip(entries, short_keys(keys, WIDE_KEY), strict=True):
        try:
            header = read_header(entry)
            kind, owner, label = str(header.kind), header.experiment or "-", header.label
        except CorruptEntry as exc:
            corrupt += 1
            kind, owner, label = "[bold red]corrupt[/]", "-", str(exc)
        used = datetime.fromtimestamp(entry.mtime, timezone.utc).isoformat(timespec="seconds")
        table.add_row(escape(key), kind, escape(owner), escape(label), value(format_bytes(entry.size)), used)
        widest = max(widest, len(label))
    # the key is shortened before it leaves: two entries' other cells may read the same (one spec at two seeds)
    short = {"key": tuple(value(escape(key)) for key in short_keys(keys, SHORT_KEY))}
    return Fitted(table, ("last used", "experiment", "key"), wants={"holds": min(widest, HOLDS_WANT)},
                  short=short), corrupt


def main(args: argparse.Namespace) -> int:
    root = DEFAULT_CACHE_DIR
    experiment = None
    if args.spec:
        spec = load_spec(args.spec)
        experiment = spec.experiment.name
        root = locate(spec.execution.cache_dir, args.spec)
    if args.dir:
        root = Path(args.dir)
    if not root.is_dir():  # else ls/verify say "0 of 0 entries check out" of a folder that is not there
        raise PlanError([f"{root}: is a file, not a cache folder" if root.exists() else f"{root}: no cache folder here"])
    store = result_cache(root)
    if args.action == "clear":
        return _clear(store, args, experiment)
    entries = list(store.entries())
    table, corrupt = ls_table(root, entries)
    if args.action == "ls" or corrupt:
        print_shown(out, table)
    if args.action == "verify":
        out.print(f"{len(entries) - corrupt} of {len(entries)} entries check out; corrupt ones are "
                  "recomputed on their next use")
        return EXIT_VERIFICATION_FAILED if corrupt else 0
    return 0
