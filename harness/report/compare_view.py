"""What `harness compare` prints: asv's summary line first (N slower, M faster, K not
significant), the table of groups, and each kind of warning once, its groups counted by cause."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from rich.markup import escape

from harness.base.units import format_p, format_seconds, plural
from harness.bench.noise import EARLIER, grouped_by, cause_key, cause_rank, reason_range  # noise's own notion of one cause
from harness.report.compare import FACTOR
from harness.report.fitting import Fitted, rule_table, value
from harness.report.labels import APART_MARK
from harness.report.unstable import NOTE, POOLED_SOURCE, ROW_KINDS

if TYPE_CHECKING:  # scipy.stats is slow to import; the CLI loads compare only when asked
    from harness.report.compare import Change, Comparison

CHANGE_STYLE = {"slower": "bold red", "faster": "green", "not significant": "", "too few rounds": "yellow"}
CHANGES: tuple[Change, ...] = ("slower", "faster", "not significant", "too few rounds")
# The time columns hold each row's figure as its run's table shows it (the median over every round
# its record holds, pooled ones too); the ratio is the test's, from each run's own rounds, and says so
TIME_A, TIME_B = "A median", "B median"
ROUNDS = "rounds A, B"
# the rounds cells in the run tables' notation (labels.ROUNDS_NOTE), said by --explain and the HTML page alike
ROUNDS_CELLS = ("each shape group's rounds as its run's table writes them (a round times each strategy once; 3+6: the "
                "run's own 3 and 6 pooled from earlier runs; 0+3: all pooled; 3+6 r: resumed, taken over from the "
                "stopped run it resumed); rounds both runs hold count only for the run that timed them (for neither where both "
                "pooled them from an earlier run)")
P_VALUE = "p-value"  # not "p": a caption's "left out at this width: p" named a letter
# what a narrow terminal leaves out first: the medians (B / A is the comparison), both or neither (walk 20:
# `B median` alone at 100 columns), and the p-value (the change column says what it decided), then the rounds;
# the group last, as it tells a strategy's rows apart (walk 9: at 100 columns two `spectrum numpy` rows differed
# by nothing shown)
COMPARE_OPTIONAL: tuple[str | tuple[str, ...], ...] = ((TIME_A, TIME_B), P_VALUE, ROUNDS, "group")


NAMED = 3  # rows a footnote names; beyond, it counts them (18 names filled 6 lines)


def ratio_header(c: Comparison) -> str:
    """`B / A (99% CI)`: two runs' rounds are not paired (walk 21 read `paired rounds` over Welch's unpaired t),
    and a header in two lines at 100 columns (its 4 pushed the rows down)."""
    return f"B / A {_level_words(c)}"


def _level_words(c: Comparison) -> str:
    return f"({c.level} CI)"


def level_rule(c: Comparison) -> str:
    """`at 99%: a change needs p < 0.01 and B / A beyond 1.1x`: what a row's change column decided by."""
    return f"at {c.level}: a change needs p < {c.alpha:g} and B / A beyond {c.factor:g}x"


def summary_line(c: Comparison, several: bool = False) -> str:
    """`B against A, 16 groups: 2 slower, 1 faster, 13 not significant (at 99%: a change needs p < 0.01
    and B / A beyond 1.1x)`, asv compare's count and the test's level; the groups the test could not judge are named as such, never a count of "too few". A gate
    that could not judge leads the line: `gate INCONCLUSIVE, none of 11 groups could be gated (11
    unstable); ungated: 8 not significant, ...`."""
    counts = Counter(r.change for r in c.rows)
    # a change whose groups were measured unstably says so in the line that counts it (walk 19: `1 slower`
    # headlined a run of 16 unstable groups; the gate skips them)
    shaky = Counter(r.change for r in c.rows if r.unstable)
    judged = [f"{counts[change]} {change}" + ("" if not shaky[change] else " (unstable)" if shaky[change] == counts[change]
                                             else f" ({shaky[change]} unstable)") for change in CHANGES[:2] if counts[change]]
    if counts["not significant"]:
        judged.append(f"{counts['not significant']} not significant")  # the rows' words (walk 12)
    if judged:  # the test's level, in the line every width keeps: "0.037 not significant" read as a fault (walk 12)
        judged[-1] += f" ({level_rule(c)})"
    if counts["too few rounds"]:
        # as the rows say it: a row of rounds enough reads `too wide (...)` (walk 11 met both words)
        # a run that timed none of them itself is why, not its rounds' number (walk 21 read it last, under `too few`)
        why = c.pooled_alone or "too few rounds" + (" or too wide an interval" if any(r.wide for r in c.rows) else "")
        judged.append(f"{counts['too few rounds']} not judged ({why}, below)" if judged else f"none judged ({why}, below)")
    where = f"{c.b.folder} against {c.a.folder}" if several else "B against A"
    unmatched = f"; {len(c.unmatched):,} not compared: in one run only (below)" if c.unmatched else ""
    # a gate that cannot judge says so first: "8 not significantly different" read as a pass
    gate = f"gate INCONCLUSIVE, {'; '.join(c.inconclusive)}; ungated: " if c.inconclusive else ""
    # without a gate, a run that did not finish is said too (walk 22: B stopped after 0 of 3 read `only in A`)
    unfinished = "" if c.gate is not None else "".join(
        f"; {side} did not finish: its record is marked incomplete (`harness run` of its spec with -o its folder "
        "resumes it)" for side in c.incomplete)
    return (f"{where}, {plural(len(c.rows), 'group')}: {gate}{', '.join(judged) or 'nothing to compare'}{unmatched}"
            f"{unfinished}")


def _caption(c: Comparison) -> str:
    """--explain's: which statistic each column is, and the test."""
    return (f"A: {c.a.machine}, {c.a.started}\nB: {c.b.machine}, {c.b.started}\nA, B median: per matrix, the median "
            "over every round the run's record holds, pooled ones too: the figure its run table shows. B / A: the "
            "geometric mean of B's own rounds in the test over A's, with a "
            f"{c.level} interval; changed: Welch's unpaired t on the rounds' log seconds, each run a replicate (rounds "
            f"of two runs are not paired), p < {c.alpha} (so the interval "
            f"excludes 1) and B/A beyond {c.factor}x either way. {ROUNDS}: {ROUNDS_CELLS}. A point pairs only with the "
            "same strategy, precision, compilation and environment.")


def named(items: list[str], total: int) -> str:
    """The rows a note is about, by name, to end a sentence: all of them up to NAMED (`a, b`), else a count
    and the first NAMED (`5 of 20 rows: a, b, c and 2 more`); `all 20 rows` when it is every row. A count
    alone (`2 rows with B / A and ...`, `4 rows`) left the user to find them at a width without the medians."""
    if len(items) == total > NAMED:
        return f"all {plural(total, 'row')}"
    if len(items) <= NAMED:
        return ", ".join(items)
    return f"{len(items)} of {plural(total, 'row')}: {', '.join(items[:NAMED])} and {len(items) - NAMED} more"


# why a row's medians and its B / A may disagree, said after either note on them
WHY_APART = ("The medians use every round each record holds, pooled ones too. B / A takes each run's own rounds "
             "alone, and is the comparison.")


def apart_note(c: Comparison, verbose: bool = False) -> str | None:
    """The line under the table when a row's B / A disagrees with its medians' ratio, naming the rows and the rule
    that marked them: only the rules of the rows marked (walk 24 read the interval's rule over rows of too few
    rounds, which have none), the too wide rows' exemption with `verbose` alone."""
    marked = [r for r in c.rows if r.times_apart]
    # within B / A's interval, yet on the other side of 1: "A 76 µs, B 73 µs, B / A 1.24" read as a fault
    crossed = [r.label for r in c.rows if not r.times_apart and (r.time_b_s / r.time_a_s - 1) * (r.ratio - 1) < 0]
    if marked:  # the gate's own factor beside asv's, where they differ (walk 16: 1.2x and 1.1x, unexplained)
        gate = f" (asv's {FACTOR:g}x, not the gate's {c.factor:g}x)" if c.factor != FACTOR else ""
        within = [r for r in marked if r.ratio_ci is not None]
        rules = [(within, "the medians' ratio lies outside B / A's interval"),
                 ([r for r in marked if r.ratio_ci is None], f"the medians' ratio is over {FACTOR:g}x from B / A{gate}, "
                                                             "which has no interval (too few rounds)")]
        said = [(rows, rule) for rows, rule in rules if rows]
        text = f"{APART_MARK} marks {named([r.label for r in marked], len(c.rows))}. " + (
            f"On {'it' if len(marked) == 1 else 'each'}, {said[0][1]}." if len(said) == 1 else " ".join(
                f"On {named([r.label for r in rows], len(c.rows))}, {rule}." for rows, rule in said))
        never = " A too wide row is never marked." if verbose and any(r.wide for r in c.rows) else ""
        return f"{text}{never} {WHY_APART}"
    return None if not crossed else (f"B / A and the medians' ratio lie on either side of 1 on {named(crossed, len(c.rows))}. "
                                     f"Each lies within B / A's interval. {WHY_APART}")


def rounds_note(c: Comparison, verbose: bool = False) -> str | None:
    """The line under the table where a row's rounds need a word, in plain words (walk 23 read four sentences of
    `pooled` and `count for`): the cells are the row's own group's; rounds a run reused from the other, or both from
    earlier runs, are left out of its side of the test. With `verbose`, the rows whose run's table writes their
    rounds otherwise (its fewest over a strategy's groups)."""
    reused = [(side, other) for side, other in (("B", "A"), ("A", "B"))
              if any(getattr(r, f"shared_{other.lower()}") for r in c.rows)]
    earlier = any(r.shared > r.shared_a + r.shared_b for r in c.rows)
    said = [f"Rounds {side} reused from {other} count as {other}'s alone" for side, other in reused]
    said += ["Rounds both reused from earlier runs count for neither"] * earlier
    said = [". ".join(said) + ", so no round is compared with itself."] if said else []
    if verbose and c.table_rounds:
        said.append("A run's table gives a strategy's fewest rounds over its groups, so it differs on "
                    f"{named(c.table_rounds, len(c.rows))}.")
    return f"{ROUNDS}: each row's own group's rounds in A and in B. {' '.join(said)}" if said else None


def table_notes(c: Comparison, verbose: bool = False) -> list[tuple[str, str]]:
    """(column, line): the lines under the table that explain its cells, the terminal's and the HTML page's (one
    source: the page lacked the terminal's `1 row with B / A and the medians on either side of 1`)."""
    notes = ((ratio_header(c), apart_note(c, verbose)), (ROUNDS, rounds_note(c, verbose)))
    return [(column, line) for column, line in notes if line]


def compare_table(comparison: Comparison, explain: bool = False, verbose: bool = False) -> Fitted:
    c = comparison
    table = rule_table()
    if explain:
        table.caption = _caption(c)
    for column in ("analysis", "strategy", "group", TIME_A, TIME_B, ratio_header(c), ROUNDS, P_VALUE, "change"):
        table.add_column(column)
    for i, r in enumerate(c.rows):
        style = CHANGE_STYLE[r.change]
        last = i + 1 == len(c.rows) or c.rows[i + 1].analysis != r.analysis
        first = i == 0 or c.rows[i - 1].analysis != r.analysis
        table.add_row(
            escape(r.analysis) if first else "", escape(r.strategy + r.variant), escape(r.group),
            *map(value, (format_seconds(r.time_a_s), format_seconds(r.time_b_s),
                         r.ratio_text + (f" {APART_MARK}" if r.times_apart else ""),
                         f"{r.rounds_a}, {r.rounds_b}",
                         format_p(r.p_value),
                         f"[{style}]{r.change_text}[/]" if style else r.change_text)),
            end_section=last,
        )
    # the ratio's header and `rounds A, B` each on one line, never `B / A (99%` over `CI)` nor `rounds A,` over a
    # lone `B` (walks 21, 23): where a column is too narrow for its header, another column leaves
    floors = {ratio_header(c): len(ratio_header(c)), ROUNDS: len(ROUNDS)}
    return Fitted(table, COMPARE_OPTIONAL, footnotes=tuple((column, escape(line)) for column, line in table_notes(c, verbose)),
                  floors=floors)


Flag = tuple[int, str, str, bool]  # (its group's row, its run: A or B, its reason, whether earlier runs' rounds gave it)


def unstable_lines(c: Comparison, verbose: bool = False) -> list[str]:
    """The groups flagged unstable, counted once, in a lead line, then one short line per cause with
    the runs it flags, their figures and its count of groups (`  A, B: other processes took 58-68% of
    the 2 CPUs (18 groups)`), as the run report's HTML lists them: walk 23 read 15 lines of one `; `
    chain naming groups and clusters. Which groups, and a bimodal group's clusters, with `verbose`:
    one line per group and reason."""
    gated = ", not gated" if c.gate else ""
    if verbose:
        return [f"unstable{gated}: {u}" for u in c.unstable]
    head, causes = unstable_summary(c)
    return [head, *(f"  {cause}" for cause in causes)] if head else []


def unstable_summary(c: Comparison) -> tuple[str, list[str]]:
    """(lead, a line per cause) as unstable_lines says them, the HTML page's headline and its list;
    ("", []) where no group is unstable. A cause is each reason's cause_key, a row's own clusters
    (bimodal, drifting) its kind, in the one order of causes every page gives (bench.noise)."""
    flags: list[Flag] = [(i, side, reason.removeprefix(EARLIER), reason.startswith(EARLIER))
                         for i, r in enumerate(c.rows) for side, _, reason in (f.partition(": ") for f in r.unstable)]
    if not flags:
        return "", []
    sides = sorted({flag[1] for flag in flags})
    whose = "both runs" if len(sides) > 1 else f"{sides[0]} only"
    flagged = len({flag[0] for flag in flags})
    head = f"{flagged} of {plural(len(c.rows), 'group')} unstable{', not gated' if c.gate else ''} ({whose}{_source(flags)}):"
    causes = grouped_by(flags, lambda flag: _kind(flag[2]))
    return head, [_cause_line(same) for same in sorted(causes.values(), key=lambda same: cause_rank(same[0][2]))]


def _kind(reason: str) -> str:
    """A reason's cause: a row's own figures by their kind (`bimodal calls (two clusters of times)`), else the
    reason with its figures blanked."""
    return next((kind for start, kind in ROW_KINDS.items() if reason.startswith(start)), None) or cause_key(reason)


def _cause_line(flags: list[Flag]) -> str:
    """`A, B: load 4.8-5.2 on 2 cores (18 groups)`; each run's own figures where they differ (walk 14: `load 10.0`
    claimed for A's 7.6-8.1): `A: load 7.6-8.1 on 2 cores, B: load 9.6-10.0 on 2 cores (16 groups)`."""
    kind = _kind(flags[0][2])
    texts = {side: kind if kind in ROW_KINDS.values() else reason_range([f[2] for f in flags if f[1] == side])
             for side in sorted({flag[1] for flag in flags})}
    said = (f"{', '.join(texts)}: {next(iter(texts.values()))}" if len(set(texts.values())) == 1
            else ", ".join(f"{side}: {text}" for side, text in texts.items()))
    what, note = found.groups() if (found := NOTE.fullmatch(said)) else (said, "")
    return f"{what} ({plural(len({flag[0] for flag in flags}), 'group')}{f'; {note}' if note else ''})"


def _source(flags: list[Flag]) -> str:
    """`; some of A's from earlier runs' pooled rounds` in the lead where earlier runs' rounds gave a run's flags
    (walk 12: said of a --fresh B that pooled none)."""
    pooled = [f"{'all' if all(f[3] for f in flags if f[1] == side) else 'some'} of {side}'s"
              for side in sorted({flag[1] for flag in flags if flag[3]})]
    return f"; {' and '.join(pooled)} from {POOLED_SOURCE}" if pooled else ""
