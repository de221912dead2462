"""One sweep run twice on one machine (walk 16: configs/sweep_rank.toml, load 8-10) says the same findings,
each with its basis: the class from its RMS's interval, not a hard 25% cut (`no class fits within 25% (RMS
25%)`, then `class constant (RMS 23%)`); the crossing's words from its interval (`meet at rank 384 (271-512,
clipped ...)`, then `would meet at rank ~767 ...`); the point that does not bear a crossover out with its paired
rounds; fits.csv with the text's decision. On the two runs' sweep records, refitted."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from harness.record.sweep_fits import fit_sweep
from harness.record.sweep_record import SweepRecord, point_record
from tests.report.test_run_screen import real
from tests.report.test_sweep_views import known_sweep, sweep_of

RECORDS = Path(__file__).parent / "records"


def walk16(run: int, walk: int = 16) -> SweepRecord:
    """Walk 16's (or `walk`'s) sweep `run` (1 or 2), its points as recorded, its fits made anew."""
    return fit_sweep(SweepRecord.model_validate_json((RECORDS / f"sweep_walk{walk}_{run}.json").read_text()))


def _shape(text: str) -> str:
    """A sentence with its numbers out: what two runs of one finding share."""
    return re.sub(r"~?\d[\d,.]*", "#", text)


def test_a_class_near_the_bound_is_said_alike_in_both_runs_with_its_rms_interval() -> None:
    from harness.report.sweep import fit_sentence, sweep_lines

    said = {}
    for run in (1, 2):
        record = walk16(run)
        said[run] = fit_sentence(record.fits[0]).split("; ")[-1]
        assert not any(re.search(r"RMS 25%[,)]", line) for line in sweep_lines(record))  # never the bound itself
        assert fit_sentence(record.fits[1]).split("; ")[-1].startswith("closest class")
    assert said[1].startswith("closest classes constant (RMS 25.3%, ") and said[2].startswith("closest classes constant (RMS 23%, ")
    assert _shape(said[1]) == _shape(said[2]) == "closest classes constant (RMS #%, #-#%), log rank (RMS #%, #-#%) straddle the #% bound"


def test_each_class_outcome_follows_its_rms_interval_against_the_bound() -> None:
    from harness.record.sweep_classes import APART, FITS, NONE, STRADDLES, class_verdict
    from harness.report.sweep import fit_sentence

    quiet = known_sweep().fits[0]  # numpy flat within 3%, each point +-10%: wholly under the bound
    assert class_verdict(quiet) == FITS and re.search(r"; class constant \(RMS 3%, 0-\d%\)$", fit_sentence(quiet))
    ranks = [8, 16, 32, 64, 128]
    far = sweep_of([1e-6 * r**1.6 * off for r, off in zip(ranks, [1.0, 1.3, 0.75, 1.2, 0.85])], [1.1] * 5).fits[1]
    low, high = far.rms_interval["n log n"]
    assert class_verdict(far) == NONE and 0.25 < low <= far.rms <= high  # wholly over it
    assert fit_sentence(far).endswith(f"; no class fits within 25% (RMS {far.rms:.0%}, {low * 100:.0f}-{high:.0%})")
    numpy = walk16(1).fits[0]  # RMS 25.3%, its points' intervals +-50%: across it
    low, high = numpy.rms_interval["1"]
    assert low < 0.25 < numpy.rms < high and class_verdict(numpy) == STRADDLES
    lone = numpy.model_copy(update={"within": {"1": numpy.within["1"]}, "close": {"1": numpy.within["1"]}})
    assert fit_sentence(lone).endswith(f"; closest class constant, RMS 25.3% ({low * 100:.0f}-{high:.0%}) straddles the 25% bound")
    both = quiet.model_copy(update={"within": {"1": 0.03, "log n": 0.05}, "rms_interval": {"1": (0.0, 0.07), "log n": (0.0, 0.3)}})
    assert class_verdict(both) == APART and fit_sentence(both).endswith(
        "; classes not told apart: constant (RMS 3%, 0-7%), log rank (RMS 5%, 0-30%)")


def test_a_crossing_reaching_past_the_largest_rank_is_said_one_way_in_both_runs() -> None:
    from harness.report.sweep import sweep_lines

    form = re.compile(r"spectrum: by their fitted costs, factored is cheaper than numpy over the swept rank 16-256 \(.*\); "
                      r"their fits meet at rank (~?)(\S+) \((\S+) to past 512, the largest rank of a 512x512 delta: they may "
                      r"not meet within it\), (\S+)x above the swept range \(largest 256\)")
    said = {}
    for run in (1, 2):
        record = walk16(run)
        [c] = record.crossovers
        assert c.reaches_past and not c.past
        [line] = [line for line in sweep_lines(record) if "cheaper" in line]
        said[run] = form.fullmatch(line)
        assert said[run] and float(said[run][3]) <= c.crossing.size, line
    assert (said[1][1], said[1][2], said[1][3]) == ("", "384", "271") and (said[2][1], said[2][2], said[2][3]) == ("~", "767", "358")


@pytest.mark.parametrize(("run", "basis"), [(1, "factored 2.32x (0.570-9.42)"), (2, "factored 4.15x (0.333-51.8)")])
def test_a_point_that_does_not_bear_a_crossover_out_says_its_basis(run: int, basis: str) -> None:
    from harness.report.sweep import sweep_lines, sweep_markdown

    record = walk16(run)
    [line] = [line for line in sweep_lines(record) if "cheaper" in line]
    assert (f"(the points' own measurements show it at 4 of 5, not at data.rank=256: {basis} over numpy in paired rounds, "
            "too wide to tell)") in line, line
    note = sweep_markdown(record).rstrip().splitlines()[-1]  # the Points table's intervals, whose they are
    assert note.startswith("95% interval: each strategy's own") and "paired rounds' ratio" in note


def test_the_picks_table_does_not_call_a_fastest_apart_that_its_clause_does_not() -> None:
    """Walk 19: the picks table said `factored factored yes` at a rank whose crossover clause read `factored
    2.74x (0.0600-125) over numpy in paired rounds, too wide to tell`: `yes` now names what it is not told from."""
    from harness.report.sweep import pick_rows, sweep_lines

    record = walk16(2)
    rows = {row["point"]: row["agrees"] for row in pick_rows(record)}
    assert "not at data.rank=256: factored 4.15x (0.333-51.8) over numpy in paired rounds, too wide to tell" in " ".join(
        sweep_lines(record))
    assert rows["data.rank=256"].startswith("yes, not told apart from numpy (") and rows["data.rank=16"] == "yes"


def test_a_point_keeps_its_runs_paired_speedup(tmp_path: Path) -> None:
    run = real("main_job", tmp_path)
    kept = {(t.analysis, t.strategy): t for t in point_record({"data.rank": 8}, "rank-8", run).timings}
    assert [kept[(a.name, t.label)].speedup for a in run.analyses for t in a.timings] == [
        t.speedup for a in run.analyses for t in a.timings]
    assert any(t.speedup is not None for t in kept.values())


def test_fits_csv_carries_the_texts_decision() -> None:
    from harness.record.exports import csv_text
    from harness.record.sweep_classes import NONE, STRADDLES, class_verdict, percent
    from harness.report.sweep import FIT_COLUMNS, fit_rows, fit_sentence

    ranks = [8, 16, 32, 64, 128]
    far = sweep_of([1e-6 * r**1.6 * off for r, off in zip(ranks, [1.0, 1.3, 0.75, 1.2, 0.85])], [1.1] * 5)
    for record in (walk16(1), walk16(2), known_sweep(), far):
        rows = list(csv.DictReader(io.StringIO(csv_text(FIT_COLUMNS, fit_rows(record)))))
        for fit, row in zip(record.fits, rows, strict=True):
            said = fit_sentence(fit).split("; ")[-1]
            assert row["class_verdict"] == class_verdict(fit) == fit.class_verdict  # sweep.json's too
            assert (row["complexity"] == "") == (row["class_verdict"] == NONE) == said.startswith("no class"), (row, said)
            assert f"RMS {percent(float(row['rms']))}" in said, (row, said)
            assert float(row["rms_low"]) <= float(row["rms"]) <= float(row["rms_high"])
    assert [(r["class_verdict"], r["complexity"]) for r in fit_rows(walk16(1))] == [(STRADDLES, "1 / log n"), (STRADDLES, "n^2")]


def test_the_classes_named_are_the_same_in_both_runs_of_walk_17() -> None:
    """Walk 17: `closest class rank^2, RMS 29% (0-51%)`, then `closest class rank log rank, RMS 36% (5-56%)`:
    each run named the one class its own exponent's interval held (2 lay outside 1.22 to 1.98)."""
    from harness.report.sweep import fit_sentence

    said = {run: [fit_sentence(fit).split("; ")[-1] for fit in walk16(run, 17).fits if fit.power.points > 2] for run in (1, 2)}
    assert [_shape(line) for line in said[1]] == [_shape(line) for line in said[2]] == [
        "closest classes constant (RMS #%, #-#%), log rank (RMS #%, #-#%) straddle the #% bound",
        "closest classes rank log rank (RMS #%, #-#%), rank^# (RMS #%, #-#%) straddle the #% bound"], said


def test_one_runs_exponent_interval_holds_the_next_runs_exponent_and_no_finding_flips() -> None:
    """Walk 17: factored's rank^1.77 (1.33 to 2.21), then rank^1.60 (1.22 to 1.98) and a `finding:` that the cost
    model's 2.10 lies outside it: the interval was the exponent's alone, not the next run's."""
    from harness.report.sweep import sweep_lines

    runs = [walk16(run, 17) for run in (1, 2)]
    for mine, other in (runs, runs[::-1]):
        for fit in (f for f in mine.fits if f.power.points > 2):
            [theirs] = [f for f in other.fits if f.strategy == fit.strategy]
            assert fit.power.covers(theirs.power.exponent), (fit.power, theirs.power.exponent)
            assert fit.model is not None and fit.power.covers(fit.model.exponent) and fit.finding is None
        assert not any(line.startswith("finding:") for line in sweep_lines(mine))


def test_a_crossing_the_fits_cannot_place_is_said_without_a_figure() -> None:
    """Walk 17: two flat fits, torch's on two points, `meet at rank 0.000667 (0 to past 512, ...), 23,989x below
    the swept range`; factored's with torch's `at rank ~532 (0 to past 512, ...)`."""
    from harness.report.sweep import sweep_lines

    record = walk16(1, 17)
    lines = [line for line in sweep_lines(record) if "torch is cheaper" in line or "cheaper than torch" in line]
    assert len(lines) == 2 and all(line.endswith("; the fits do not tell where they meet: torch has 2 points") for line in lines)
    assert not any("0.000667" in line or "532" in line for line in sweep_lines(record))
    assert [c.located for c in record.crossovers] == [True, False, False]


def test_a_crossing_far_past_the_swept_range_or_spanning_it_is_not_placed() -> None:
    from harness.bench.scaling import Crossover
    from harness.report.sweep import crossover_sentence, unlocated_why

    record = walk16(1, 17)
    c = record.crossovers[0].model_copy(update={"limit": None})  # factored and numpy, both on 5 points
    far = c.model_copy(update={"crossing": Crossover(size=5000.0, low=4000.0, high=6000.0, a_faster_above=True)})
    assert crossover_sentence(far, None, unlocated_why(record, far)).endswith(
        "; the fits do not tell where they meet: they would cross more than 10x above the swept range, where no point was measured")
    wide = c.model_copy(update={"inside": True, "crossing": Crossover(size=100.0, low=3.0, high=900.0, a_faster_above=True)})
    assert crossover_sentence(wide, None, unlocated_why(record, wide)) == (
        "spectrum: the fits of numpy and factored cross within the swept rank 16-256 but do not tell where they meet: "
        "the interval of their crossing holds all the swept rank and more")
