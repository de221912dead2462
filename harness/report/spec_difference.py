"""Why `harness compare` refuses two runs, in the user's words: what tells their specs apart (compare takes
runs of one spec alone: their spec hashes equal)."""

from __future__ import annotations

from harness.record.run_record import RunRecord
from harness.report.labels import printable
from harness.specs.reading import leaves
from harness.specs.sections import duration_keys


def spec_difference(a: RunRecord, b: RunRecord, folders: tuple[str, str]) -> str:
    """What tells two runs' specs apart, in the user's words: the experiments' names, else the first
    keys whose values differ (`data.adapters is 4 here, 38 in runs/first`), else the hashes."""
    if a.experiment != b.experiment:
        return f"a run of {printable(b.experiment)!r}, {folders[0]} of {printable(a.experiment)!r}"
    flat_a, flat_b = leaves(a.spec), leaves(b.spec)
    keys = [k for k in sorted(flat_a.keys() | flat_b.keys()) if flat_a.get(k) != flat_b.get(k)]
    durations = duration_keys()

    def written(key: str, flat: dict[str, object]) -> str:
        """A value as a spec writes it: a duration's seconds as `4s`, anything else as TOML's repr."""
        value = flat.get(key, "(unset)")
        shown = f"{value:g}s" if key in durations and isinstance(value, (int, float)) else repr(value)
        return printable(shown)[:40]

    said = [f"{printable(k)} is {written(k, flat_b)} here, {written(k, flat_a)} in {folders[0]}" for k in keys[:3]]
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    return ("; ".join(said) + more if said else
            f"spec hash {b.spec_hash[:12]} differs from {folders[0]}'s {a.spec_hash[:12]}")
