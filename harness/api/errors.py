"""What the API raises, each a ValueError of one line in the API's words (`output=`, `force=True`,
not the command line's flags): SpecProblem for a spec or an override, FolderProblem for an output
folder; DataError (a bad input file) and RecordError (a folder without a readable run) the
engine's, raised as the API's own subclasses: they print as `harness.api.errors.…` like the others,
and the engine's classes still catch them."""

from __future__ import annotations

import re
from pathlib import Path

from harness.data import workload
from harness.record import run_record


__all__ = ["DataError", "FolderProblem", "RecordError", "SpecProblem", "our_words"]

OVERRIDE = re.compile(r"^--set ('[^']*'|\"[^\"]*\"): ")  # the engine's name of the override a problem came from
SPEC_KEY = re.compile(r"[A-Za-z_][\w.\[\]]*")  # `data.adapters`, `analysis[2].components`
FLAGS = {"leave -o out": "leave output out", "-o": "output=", "--force": "force=True"}  # the engine's words -> ours


class SpecProblem(ValueError):
    """What the harness refuses a spec for: `message` the first problem in one line, `key` the
    spec key it names (None for the file as a whole), `problems` every line."""

    def __init__(self, spec: str | Path, problems: list[str], keywords: dict[str, str] | None = None) -> None:
        line = problems[0].removeprefix(f"{spec}: ")
        given = OVERRIDE.match(line)  # an override is a keyword here, named as passed (`keywords`: its --set -> it)
        first = line[given.end():] if given else line
        key, sep, rest = first.partition(": ")
        self.key: str | None = key if sep and SPEC_KEY.fullmatch(key) else None
        # walk 21: `configs/smoke.toml: data.adaptrs: unknown key` for data__adaptrs=2, which the file never said
        keyword = (keywords or {}).get(given.group(1)) if given else None
        where = keyword or spec
        if keyword and self.key is not None:
            first = keyword_suggestion(first, self.key, keyword.partition("=")[0])
        self.message = first.partition(": ")[2] if self.key is not None else first
        self.problems = problems
        more = f" (and {len(problems) - 1} more: .problems)" if len(problems) > 1 else ""
        super().__init__(f"{where}: {first}{more}")


SUGGESTION = re.compile(r"did you mean '([^']*)'\?")  # harness.base.suggest's words


def keyword_suggestion(problem: str, key: str, keyword: str) -> str:
    """A keyword's problem with its did-you-mean as a keyword to type: `did you mean data__adapters?`
    where the spec's form `did you mean 'adapters'?` (walk 22) left the keyword user to rebuild it;
    a keyword passed dotted (`**{"analysis[2].components": 3}`) gets the dotted key."""
    parent = key.rpartition(".")[0]
    joined = "__" if "__" in keyword else "."
    return SUGGESTION.sub(lambda m: f"did you mean {parent + joined if parent else ''}{m.group(1)}?", problem)


class FolderProblem(ValueError):
    """An output folder `run` refuses (one that holds files, or cannot be written), in one line."""


class DataError(workload.DataError):
    """A bad input file or tensor, named with what was expected (the engine's DataError)."""


class RecordError(run_record.RecordError):
    """A folder without a readable run record (the engine's RecordError)."""


def our_words(line: str) -> str:
    """The engine's line with its command-line flags said as the API's keywords."""
    flags = "|".join(re.escape(flag) for flag in FLAGS)  # a flag as a word of its own, never inside a path
    return re.sub(rf"(?<!\S)(?:{flags})\b", lambda m: FLAGS[m.group(0)], line)
