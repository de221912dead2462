"""A stored record is data from elsewhere, read as the pool and the wisdom are: a number edited or
damaged into NaN, -5, inf, 1e400 or a word, or an interval out of order, printed "nanx
(-5-100,000,000)" with exit 0. Every command that loads a record refuses it in one line naming
the file and the field, exit 2; api.open_run raises RecordError with that line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import api
from harness.cli.main import main
from harness.record.run_record import RECORD, RecordError
from tests.cli.test_bad_inputs import one_line
from tests.report.test_run_screen import RECORDS

Raw = dict[str, Any]
TORCH = "analyses[0].timings[2]"  # spectrum/torch: speedup 2.28, interval (1.86, 2.80)
GROUP = f"{TORCH}.groups[0]"


def _set(*path: str | int, value: object) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        node: Any = raw
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return edit


def _torch(field: str, value: object) -> Callable[[Raw], None]:
    return _set("analyses", 0, "timings", 2, field, value=value)


def _measurement(field: str, value: object) -> Callable[[Raw], None]:
    return _set("analyses", 0, "timings", 2, "groups", 0, "measurement", field, value=value)


HUGE = 7.25e-300  # stands for 1e400 in the text, which json.dumps cannot write (it reads back as inf)
# the edit of main_job.json's record, and the line's text after "record.json: "
CASES: dict[str, tuple[Callable[[Raw], None], str]] = {
    "NaN speedup": (_torch("speedup", float("nan")), f"{TORCH}.speedup: Input should be a finite number (nan)"),
    "negative speedup": (_torch("speedup", -5), f"{TORCH}.speedup: Input should be greater than 0 (-5)"),
    "zero speedup": (_torch("speedup", 0), f"{TORCH}.speedup: Input should be greater than 0 (0)"),
    "inf speedup": (_torch("speedup", float("inf")), f"{TORCH}.speedup: Input should be a finite number (inf)"),
    "1e400 speedup": (_torch("speedup", HUGE), f"{TORCH}.speedup: Input should be a finite number (inf)"),
    "a word for the speedup": (_torch("speedup", "fast"), (f"{TORCH}.speedup: Input should be a valid number, "
                                                           "unable to parse string as a number ('fast')")),
    "interval low > high": (_torch("speedup_ci", [2.8, 1.86]), f"{TORCH}.speedup_ci: low 2.8 above high 1.86"),
    "interval missing its speedup": (_torch("speedup_ci", [3.0, 4.0]), (
        f"{TORCH}.speedup_ci: (3, 4) misses the speedup 2.27874; expected low <= speedup <= high")),
    "negative interval bound": (_torch("speedup_ci", [-1, 2.8]), f"{TORCH}.speedup_ci[0]: Input should be greater than 0"),
    "NaN estimate": (_torch("estimate_total_s", float("nan")), f"{TORCH}.estimate_total_s: Input should be a finite"),
    "negative median": (_measurement("median_s", -1e-3), f"{GROUP}.measurement.median_s: Input should be greater than 0"),
    "inf sample": (_measurement("samples_s", [1e-3, float("inf")]),
                   f"{GROUP}.measurement.samples_s[1]: Input should be a finite number (inf)"),
    "NaN IQR": (_measurement("iqr_s", float("nan")), f"{GROUP}.measurement.iqr_s: Input should be a finite number"),
    "no matrix sampled": (_set("analyses", 0, "timings", 2, "groups", 0, "sampled", value=0),
                          f"{GROUP}.sampled: Input should be greater than or equal to 1 (0)"),
    "load of -3": (_measurement("conditions", {"cores": 2, "load_before": -3}),
                   f"{GROUP}.measurement.conditions.load_before: Input should be greater than or equal to 0"),
    "others' share of 5": (_measurement("conditions", {"cores": 2, "others_cpu": 5}),
                           f"{GROUP}.measurement.conditions.others_cpu: Input should be less than or equal to 1"),
    "a round id short": (_set("analyses", 0, "timings", 2, "groups", 0, "rounds", value=["r#spectrum#0"]),
                         f"{GROUP}.rounds: 1 round ids for 2 samples; expected one per sample"),
    "a group twice": (lambda raw: raw["analyses"][0]["timings"][2]["groups"].append(
        raw["analyses"][0]["timings"][2]["groups"][0]), f"{TORCH}.groups: group '3072x768r16' timed twice"),
    "a point twice": (lambda raw: raw["analyses"][0]["timings"].append(raw["analyses"][0]["timings"][2]),
                      "analyses[0].timings: torch@float32 timed twice; expected one timing per point"),
    "NaN wall time": (_set("analyses", 1, "wall_s", value=float("nan")), "analyses[1].wall_s: Input should be a finite"),
    "negative budget": (_set("bench", "budget_s", value=-60), "bench.budget_s: Input should be greater than or equal"),
}


def _bad(tmp_path: Path, case: str) -> str:
    raw = json.loads((RECORDS / "main_job.json").read_text())
    CASES[case][0](raw)
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / RECORD).write_text(json.dumps(raw).replace(repr(HUGE), "1e400"))
    return str(folder)


@pytest.mark.parametrize("command", ["compare", "report"])
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_nonsense_number_is_refused_in_one_line(case: str, command: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = _bad(tmp_path, case)
    good = tmp_path / "good"
    good.mkdir()
    (good / RECORD).write_text((RECORDS / "main_job.json").read_text())
    argv = ["compare", str(good), bad] if command == "compare" else ["report", bad, "-o", str(tmp_path / "r.html")]
    assert main(argv) == 2
    assert one_line(capsys.readouterr().err).startswith(f"{bad}/{RECORD}: {CASES[case][1]}")
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("case", ["NaN speedup", "interval low > high", "a word for the speedup"])
def test_open_run_refuses_it_too(case: str, tmp_path: Path) -> None:
    bad = _bad(tmp_path, case)
    with pytest.raises(RecordError) as raised:
        api.open_run(bad)
    assert str(raised.value).startswith(f"{bad}/{RECORD}: {CASES[case][1]}")


@pytest.mark.parametrize("command", ["compare", "report", "api"])
def test_a_spec_or_another_file_where_a_run_is_meant_is_named_as_such(command: str, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 20: `harness compare RUN configs/smoke.toml`, `harness report configs/smoke.toml` and
    api.open_run of it said "not valid JSON (Expecting value: line 1 column 1 (char 0))"."""
    from tests.conftest import CONFIGS

    good = tmp_path / "good"
    good.mkdir()
    (good / RECORD).write_text((RECORDS / "main_job.json").read_text())
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    expected = {CONFIGS / "smoke.toml": f"{CONFIGS / 'smoke.toml'}: a spec, not a run; `harness run "
                                        f"{CONFIGS / 'smoke.toml'}` makes a run folder, and that folder is what this takes",
                notes: f"{notes}: not valid JSON (Expecting value: line 1 column 1 (char 0)); expected a run folder "
                       "from `harness run`, or its record.json"}
    for path, line in expected.items():
        if command == "api":
            with pytest.raises(RecordError) as raised:
                api.open_run(path)
            assert str(raised.value) == line
            continue
        argv = ["compare", str(good), str(path)] if command == "compare" else ["report", str(path)]
        assert main(argv) == 2
        assert one_line(capsys.readouterr().err) == line
