"""What `harness compare` prints: asv's summary line first (N slower, M faster, K not
significant), the table of groups, and each kind of warning once, its groups counted by cause."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from rich.markup import escape

from harness.base.units import format_p, format_seconds, plural
from harness.bench.noise import BIMODAL, EARLIER, grouped_by, cause_key, cause_rank, reason_range  # noise's own notion of one cause
from harness.report.compare import FACTOR, groups_named
from harness.report.fitting import Fitted, rule_table, value
from harness.report.labels import APART_MARK
from harness.report.unstable import POOLED_SOURCE

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


def apart_note(c: Comparison) -> str | None:
    """The line under the table when a row's B / A disagrees with its medians' ratio, naming the rows and why,
    in short sentences (walk 20 read `(or, on a row of too few rounds without one, beyond asv's 1.1x from it, the
    mark; a too wide row has none)` as hard going)."""
    apart = [r.label for r in c.rows if r.times_apart]
    # within B / A's interval, yet on the other side of 1: "A 76 µs, B 73 µs, B / A 1.24" read as a fault
    crossed = [r.label for r in c.rows if not r.times_apart and (r.time_b_s / r.time_a_s - 1) * (r.ratio - 1) < 0]
    if apart:  # the gate's own factor beside asv's, where they differ (walk 16: 1.2x and 1.1x, unexplained)
        gate = f" This {FACTOR:g}x is asv's, not the gate's {c.factor:g}x." if c.factor != FACTOR else ""
        return (f"{APART_MARK} marks {named(apart, len(c.rows))}. On each, the medians' ratio disagrees with B / A: "
                "it lies outside B / A's interval. A row of too few rounds has no interval. It is marked when the "
                f"medians' ratio is over {FACTOR:g}x from B / A.{gate} A too wide row is never marked. {WHY_APART}")
    return None if not crossed else (f"B / A and the medians' ratio lie on either side of 1 on {named(crossed, len(c.rows))}. "
                                     f"Each lies within B / A's interval. {WHY_APART}")


def rounds_note(c: Comparison) -> str | None:
    """The line under the table where a row's rounds need a word: rounds both runs hold, tested only on the
    side of the run that timed them (A may be the one that pooled), and rows whose run's table writes their
    rounds otherwise (its fewest over a strategy's groups). Short sentences, one fact each (walk 20)."""
    said = []
    for side, other in (("B", "A"), ("A", "B")):
        rows = [r.label for r in c.rows if getattr(r, f"shared_{other.lower()}")]
        if rows:
            said.append(f"{side} pooled {other}'s rounds on {named(rows, len(c.rows))}. They count for {other} only, "
                        "so no round is tested against itself.")
    earlier = [r.label for r in c.rows if r.shared > r.shared_a + r.shared_b]
    if earlier:
        said.append(f"Both runs pooled rounds from earlier runs on {named(earlier, len(c.rows))}. "
                    "Those count for neither run.")
    if c.table_rounds:
        said.append("A run's table gives a strategy's fewest rounds over its shape groups. A row here gives its own "
                    f"group's. Their run's table says otherwise on {named(c.table_rounds, len(c.rows))}.")
    return f"{ROUNDS}: {' '.join(said)}" if said else None


def table_notes(c: Comparison) -> list[tuple[str, str]]:
    """(column, line): the lines under the table that explain its cells, the terminal's and the HTML page's (one
    source: the page lacked the terminal's `1 row with B / A and the medians on either side of 1`)."""
    notes = ((ratio_header(c), apart_note(c)), (ROUNDS, rounds_note(c)))
    return [(column, line) for column, line in notes if line]


def compare_table(comparison: Comparison, explain: bool = False) -> Fitted:
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
    # the ratio's header on two lines at most, `B / A` over `(99% CI)`, where its cells are narrower (walk 21: 4)
    floors = {ratio_header(c): len(_level_words(c))}
    return Fitted(table, COMPARE_OPTIONAL, footnotes=tuple((column, escape(line)) for column, line in table_notes(c)),
                  floors=floors)


Flag = tuple[int, str, str, bool]  # (its group's row, its run: A or B, its reason, whether earlier runs' rounds gave it)


def unstable_lines(c: Comparison, verbose: bool = False) -> list[str]:
    """The groups flagged unstable, counted once, then each cause with the groups it flags, `; `
    apart as a run's line says them (`16 of 20 groups unstable: A: load 5.1-5.2 on 2 cores; A: IQR
    37-667% of median in 9 groups (e.g. svd numpy on 48x32r4, svd torch on 32x48r4); B: 2 samples differ
    by 4.2x in 1 group (svd torch on 48x32r4)`): one line per set of groups read as overlapping counts a
    reader summed, and a one-group cause named none.
    With `verbose` one line per group and reason."""
    gated = ", not gated" if c.gate else ""
    if verbose:
        return [f"unstable{gated}: {u}" for u in c.unstable]
    flags: list[Flag] = [(i, side, reason.removeprefix(EARLIER), reason.startswith(EARLIER))
                         for i, r in enumerate(c.rows) for side, _, reason in (f.partition(": ") for f in r.unstable)]
    if not flags:
        return []
    # one cause, said once per run ("A: earlier runs' rounds: load 4.8-5.7" stood beside "A: load 5.2"); a run's
    # causes that flag the same groups share an item ("A: other processes took 69-72% ..." and "A: load 4.8-4.9
    # ..." stood apart); a row's own clusters are its cause alone, their figures that row's
    causes = grouped_by(flags, lambda flag: (flag[1], flag[0] if flag[2].startswith(BIMODAL) else -1, cause_key(flag[2])))
    items = grouped_by(causes.values(), lambda same: (same[0][1], frozenset(flag[0] for flag in same)))
    flagged = {flag[0] for flag in flags}
    # A's, then B's (walk 15: A, B, B, A), each run's in the one order of causes every page gives (bench.noise)
    ranked = sorted(items.items(), key=lambda item: (item[0][0], min(_rank(same) for same in item[1])))
    head = f"{len(flagged)} of {plural(len(c.rows), 'group')} unstable{gated}"
    return [f"{head}: " + "; ".join(f"{_said(side, same)}{_where(c, groups, len(flagged))}"
                                    for (side, groups), same in ranked)]


def _rank(flags: list[Flag]) -> int:
    """One cause's place in the order of causes (its flags are of one cause)."""
    return cause_rank(flags[0][2])


def _where(c: Comparison, groups: frozenset[int], flagged: int) -> str:
    """Which groups a cause flags: none said where it flags every unstable one, else counted and some
    named, as every cause of the line (`in 4 groups (e.g. svd numpy on 48x32r4, svd torch on 32x48r4)`)."""
    return "" if len(groups) == flagged else " in " + groups_named([c.rows[i].label for i in sorted(groups)])


def _said(side: str, causes: list[list[Flag]]) -> str:
    """One run's causes of the same groups, each its figures' range over their flags (`A: load
    7.6-8.1 on 2 cores, IQR 40-42% of median`), a run whose flags earlier runs' pooled rounds gave
    saying so beside its name (walk 12: said after B's causes, of a --fresh B that pooled none)."""
    texts = ", ".join(reason_range([flag[2] for flag in flags]) for flags in sorted(causes, key=_rank))
    return f"{side}{_source([flag for flags in causes for flag in flags])}: {texts}"


def _source(flags: list[Flag]) -> str:
    """` (some from earlier runs' pooled rounds)` after a run's name where any of its flags came from them."""
    pooled = [flag[3] for flag in flags]
    return f" ({'all' if all(pooled) else 'some'} from {POOLED_SOURCE})" if any(pooled) else ""
