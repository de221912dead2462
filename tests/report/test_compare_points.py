"""`harness compare` pairs a point only with the same point: the strategy at the same precision,
compiled or not, in the same environment, on the same shape group. Keyed by the strategy alone, it
compared A's plain numpy with B's numpy in an environment of its own, and gram_eigh@float32 with
gram_eigh@float64; what does not pair is listed by name, never compared."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli
from harness.record.run_record import RECORD, UNTIMED
from harness.report.compare import CompareOutput
from tests.report.test_run_screen import RECORDS

Raw = dict[str, Any]


def _timing(raw: Raw, strategy: str, analysis: str = "spectrum") -> Raw:
    an = next(a for a in raw["analyses"] if a["name"] == analysis)
    return next(t for t in an["timings"] if t["strategy"] == strategy)


def _env(raw: Raw) -> None:
    _timing(raw, "numpy").update(env={"OPENBLAS_THREAD_TIMEOUT": "18"}, variant="+OPENBLAS_THREAD_TIMEOUT=18")


def _precision(raw: Raw) -> None:
    _timing(raw, "torch").update(precision="bfloat16")


def _compiled(raw: Raw) -> None:
    _timing(raw, "torch").update(compiled=True)


def _group(raw: Raw) -> None:
    _timing(raw, "numpy")["groups"][0]["group"] = "3072x768r32"


def _slower(t: Raw, factor: float) -> None:
    for g in t["groups"]:
        m = g["measurement"]
        m["samples_s"] = [s * factor for s in m["samples_s"]]
        m["median_s"] *= factor


def _two_precisions(slower: float) -> Callable[[Raw], None]:
    """numpy@float32 and numpy@float64 in one analysis, its float64 point `slower` times slower."""
    def edit(raw: Raw) -> None:
        plain = _timing(raw, "numpy")
        wide = json.loads(json.dumps(plain))
        _slower(wide, slower)
        plain["variant"], wide["variant"], wide["precision"] = "@float32", "@float64", "float64"
        raw["analyses"][0]["timings"].append(wide)
    return edit


def _picked_torch(raw: Raw) -> None:
    """B's plan picked torch for spectrum, and so never timed A's pick, factored."""
    an = next(a for a in raw["analyses"] if a["name"] == "spectrum")
    an["strategy"], an["timings"] = "torch", [t for t in an["timings"] if t["strategy"] != "factored"]


def _untimed_torch(raw: Raw) -> None:
    """B's run ran out of time before torch's first round: it lists torch as not timed."""
    an = next(a for a in raw["analyses"] if a["name"] == "spectrum")
    an["timings"] = [t for t in an["timings"] if t["strategy"] != "torch"]
    an["skipped"] = [*an.get("skipped", []), {"strategy": "torch", "reason": UNTIMED}]


# (edit of A, edit of B, what is listed as not compared, the rows left out ("analysis/label" or
# "analysis/label on group"), and rows whose B/A is not 1 with theirs (by label)); a point is named as its
# run's table names it (walk 12: `geometry/dual_gram@float32` was a third form), with its precision,
# compilation and environment in words only where the name stands for two points
CASES: dict[str, tuple[Callable[[Raw], None] | None, Callable[[Raw], None], list[str], set[str], dict[str, float]]] = {
    "B's numpy in an environment of its own": (
        None, _env, ["spectrum numpy: only in A", "spectrum numpy+OPENBLAS_THREAD_TIMEOUT=18: only in B"],
        {"spectrum/numpy"}, {}),
    "B's torch at another precision": (
        None, _precision, ["spectrum torch (float32): only in A", "spectrum torch (bfloat16): only in B"],
        {"spectrum/torch"}, {}),
    "B's torch compiled": (
        None, _compiled, ["spectrum torch (float32): only in A", "spectrum torch (float32, compiled): only in B"],
        {"spectrum/torch"}, {}),
    "B's numpy on another shape group": (
        None, _group, ["spectrum numpy on 3072x768r16: only in A", "spectrum numpy on 3072x768r32: only in B"],
        {"spectrum/numpy on 3072x768r16"}, {}),
    "B's plan picked another strategy": (  # a newcomer's compare listed A's pick "only in A", no why
        None, _picked_torch, ["spectrum factored: only in A (the pick of A's plan; B's picked torch)"],
        {"spectrum/factored"}, {}),
    "B ran out of time for torch": (  # it said "only in A" of a strategy B has, untimed
        None, _untimed_torch, [f"spectrum torch: timed in A only (B: {UNTIMED})"], {"spectrum/torch"}, {}),
    "two precisions a side, B's float64 3x slower": (
        _two_precisions(1.0), _two_precisions(3.0), [], set(), {"numpy@float64": 3.0}),
}


def _saved(raw: Raw, folder: Path) -> str:
    """The record as a run of its own in `folder`, its run id the folder's name: compare refuses one run twice."""
    folder.mkdir()
    raw["bench"]["run_id"] = folder.name
    (folder / RECORD).write_text(json.dumps(raw))
    return str(folder)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_only_the_same_point_pairs(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_a, edit_b, unmatched, left_out, ratios = CASES[case]
    base = json.loads((RECORDS / "main_job.json").read_text())
    raw_a, raw_b = json.loads(json.dumps(base)), json.loads(json.dumps(base))
    for edit, raw in ((edit_a, raw_a), (edit_b, raw_b)):
        if edit:
            edit(raw)
    a, b = _saved(raw_a, tmp_path / "A"), _saved(raw_b, tmp_path / "B")
    assert cli.main(["compare", a, b, "--json"]) == 0
    captured = capsys.readouterr()
    c = CompareOutput.model_validate(json.loads(captured.out)).comparisons[0]
    assert c.unmatched == unmatched
    assert all(f"not compared: {u}" in captured.err.splitlines() for u in unmatched)
    timed = {(an["name"], t["strategy"] + t["variant"], g["group"])
             for an in raw_a["analyses"] for t in an["timings"] for g in t["groups"]}
    rows = {(r.analysis, r.strategy + r.variant, r.group): r for r in c.rows}
    expected = {(an, label, group) for an, label, group in timed
                if f"{an}/{label}" not in left_out and f"{an}/{label} on {group}" not in left_out}
    assert set(rows) == expected
    for (_, label, _), r in rows.items():  # the same rounds, scaled: B/A the scale, untested
        assert r.ratio == pytest.approx(ratios.get(label, 1.0)), r.label


def test_a_strategy_timed_in_neither_run_is_said_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """geometry dual_gram, out of time in both runs, had no row and no "only in" line: it was absent
    from the comparison without a word."""
    base = json.loads((RECORDS / "main_job.json").read_text())
    raw_a, raw_b = json.loads(json.dumps(base)), json.loads(json.dumps(base))
    for raw in (raw_a, raw_b):
        _untimed_torch(raw)
    a, b = _saved(raw_a, tmp_path / "A"), _saved(raw_b, tmp_path / "B")
    assert cli.main(["compare", a, b, "--json"]) == 0
    captured = capsys.readouterr()
    c = CompareOutput.model_validate(json.loads(captured.out)).comparisons[0]
    assert (c.untimed, c.unmatched) == (["spectrum torch"], [])
    assert "spectrum/torch" not in {f"{r.analysis}/{r.strategy}" for r in c.rows}
    assert [line for line in captured.err.splitlines() if "torch" in line] == ["not timed in either run: spectrum torch"]


def test_the_html_says_what_neither_run_timed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal said `not timed in either run: geometry dual_gram`; compare.html had no word of it."""
    raw = json.loads((RECORDS / "main_job.json").read_text())
    _untimed_torch(raw)
    a, b = _saved(raw, tmp_path / "A"), _saved(raw, tmp_path / "B")
    page = tmp_path / "compare.html"
    assert cli.main(["compare", a, b, "--html", str(page)]) == 0
    assert "Not timed in either run: spectrum torch" in page.read_text()
