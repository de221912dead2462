"""Reading a spec file: its TOML, capped in size, with `--set` overrides applied, validated into a
Spec, and every problem said at once, one `FILE: key.path: message` line each."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.base.bounded import TooLarge, read_capped
from harness.base.units import plural
from harness.base.suggest import did_you_mean
from harness.data.registry import DATA_MODELS
from harness.specs.sections import ANALYSIS_MODELS, Benchmark, Execution, Experiment, Spec


class SpecError(Exception):
    """Every problem of one spec, one `FILE: key.path: message` line each."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


SPEC_CAP = 1 << 20  # bytes: a spec is a page of TOML; anything larger is not one


Origins = dict[tuple[str, ...], str]  # a key an override put into the spec -> the override, as its lines name it


def load_spec(path: str | Path, overrides: list[str] | None = None) -> Spec:
    return validate_raw(path, *read_overridden(path, overrides))


def validate_raw(path: str | Path, raw: dict[str, Any], origins: Origins | None = None) -> Spec:
    """The spec of a file's TOML (`read_raw`'s); SpecError with every problem, `FILE: key: message`,
    or `--set 'KEY=VALUE': key: message` where an override put the key there."""
    try:
        return Spec.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(located(path, origins or {}, in_file_order(_describe(exc), raw))) from None


def located(path: str | Path, origins: Origins, lines: list[str]) -> list[str]:
    """`key: message` lines, each after where its key came from: the `--set` that put it into the
    spec (the file has no such key), else the file."""
    return [f"{origin(path, origins, line.split(': ', 1)[0])}: {line}" for line in lines]


def labels(path: str | Path, origins: Origins) -> tuple[str, ...]:
    """What `located` puts before a line: its overrides (the longer first), the file."""
    return (*sorted(set(origins.values()), key=len, reverse=True), str(path))


def origin(path: str | Path, origins: Origins, key: str) -> str:
    """The override whose key `key` is, or sits under; else the spec file."""
    parts = tuple(key_parts(key))
    return next((label for owned, label in reversed(origins.items()) if parts[:len(owned)] == owned), str(path))


def read_raw(path: str | Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """The spec file's TOML with the overrides applied, not yet validated; SpecError when the
    file cannot be read or parsed, or an override names no key."""
    return read_overridden(path, overrides)[0]


def read_overridden(path: str | Path, overrides: list[str] | None = None) -> tuple[dict[str, Any], Origins]:
    """`read_raw`'s TOML, and the keys the overrides put into it."""
    path = Path(path)
    try:
        raw = tomllib.loads(read_capped(path, SPEC_CAP).decode("utf-8"))
    except TooLarge as exc:
        raise SpecError([f"{path}: {exc}; a spec file (TOML) is small"]) from None
    except RecursionError:
        raise SpecError([f"{path}: invalid TOML: nested too deeply"]) from None
    except FileNotFoundError:
        raise SpecError([f"{path}: file not found"]) from None
    except IsADirectoryError:
        raise SpecError([f"{path}: is a folder; expected a spec file (TOML)"]) from None
    except UnicodeDecodeError as exc:  # binary garbage, or another encoding: TOML is UTF-8
        raise SpecError([f"{path}: not UTF-8 text (byte {exc.start}); expected a spec file (TOML)"]) from None
    except OSError as exc:  # unreadable: permissions, a FIFO gone, an I/O error
        raise SpecError([f"{path}: cannot read the spec ({exc.strerror or exc})"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError([f"{path}: invalid TOML: {exc}"]) from None
    origins: Origins = {}
    if problems := apply_overrides(raw, overrides or [], origins):  # each names its --set, not the file
        raise SpecError(problems)
    return raw, origins


def apply_overrides(raw: dict[str, Any], overrides: list[str], origins: Origins) -> list[str]:
    """Apply `dotted.key=value` in place (values parsed as TOML, else taken as strings); `origins`
    gets each one's key: the first part of it the spec lacked (`nonsense` of `nonsense.key`), or all of it."""
    problems = []
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            problems.append(f"--set {item!r}: expected dotted.key=value")
            continue
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text
        owned = _first_new(raw, key_parts(key))
        if not set_key(raw, key, value):
            problems.append(f"--set {item!r}: {unsettable(raw, key)}")
        else:
            origins[owned] = f"--set {item!r}"
    return problems


def _first_new(raw: dict[str, Any], parts: list[str]) -> tuple[str, ...]:
    """The shortest start of `parts` that names nothing in `raw` yet; all of them when each does."""
    node: Any = raw
    for i, part in enumerate(parts):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return tuple(parts[:i + 1])
    return tuple(parts)


def unsettable(raw: dict[str, Any], key: str) -> str:
    """Why `set_key` refused `key`: an index past its list's end says how many items there are
    (`analysis[9]: the spec has 4 analyses (analysis[0]-analysis[3])`), anything else that the key
    names nothing settable."""
    node: Any = raw
    shown = ""
    for part in key_parts(key):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                return f"{shown}[{part}]: the spec has {_items(shown, len(node))}"
            node, shown = node[int(part)], f"{shown}[{part}]"
        elif isinstance(node, dict) and part in node:
            node, shown = node[part], f"{shown}.{part}" if shown else part
        else:
            break
    return f"{key} does not name a settable key"


def _items(name: str, n: int) -> str:
    """`4 analyses (analysis[0]-analysis[3])`: how many items the list `name` holds, and their keys."""
    count = plural(n, "analysis", "analyses") if name.endswith("analysis") else plural(n, "entry", "entries")
    return count + ("" if n == 0 else f" ({name}[0])" if n == 1 else f" ({name}[0]-{name}[{n - 1}])")


def set_key(raw: dict[str, Any], key: str, value: Any) -> bool:
    """Set `dotted.key` (or `analysis[2].components`) of a spec's TOML in place; False when a
    part of the key names no table or list item."""
    node: Any = raw
    parts = key_parts(key)
    try:
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if isinstance(node, list):
            node[int(parts[-1])] = value
        else:
            node[parts[-1]] = value
    except (ValueError, IndexError, TypeError, AttributeError):
        return False
    return True


def leaves(tree: Any, key: str = "", lists: bool = True) -> dict[str, Any]:
    """A spec's TOML tree as dotted keys to values, the keys `set_key` takes: tables nested by
    dots, lists of tables indexed (`analysis[1].k`) unless `lists` is off (then such a list is a
    value, as any other list is: a shape)."""
    if isinstance(tree, dict):
        return {k: v for name, sub in tree.items()
                for k, v in leaves(sub, f"{key}.{name}" if key else str(name), lists).items()}
    if lists and isinstance(tree, list) and any(isinstance(x, dict) for x in tree):
        return {k: v for i, sub in enumerate(tree) for k, v in leaves(sub, f"{key}[{i}]").items()}
    return {key: tree}


def in_file_order(lines: list[str], raw: dict[str, Any], labels: tuple[str, ...] = ()) -> list[str]:
    """`key: message` lines (each after one of `labels`: the file, an override) in the order their
    keys appear in the spec's TOML (pydantic's is its models' field order, and the plan's refusals
    came after it: `analysis[1].k` after `benchmark.sample`); a key the file lacks after its table's
    own, a line of no key last."""
    return sorted(lines, key=lambda line: _position(raw, problem_key(line, labels)))


def problem_key(line: str, labels: tuple[str, ...] = ()) -> str:
    """The key a problem line is about, after the label (`located`'s) it starts with."""
    label = next((label for label in labels if line.startswith(f"{label}: ")), None)
    return (line.removeprefix(f"{label}: ") if label else line).split(": ", 1)[0]


def _position(raw: dict[str, Any], key: str) -> tuple[int, ...]:
    """Where `key` sits in the TOML: its index among its table's keys (or its list's items), level by level."""
    node: Any = raw
    place: list[int] = []
    for part in key_parts(key):
        if isinstance(node, dict) and part in node:
            place.append(list(node).index(part))
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            place.append(int(part))
            node = node[int(part)]
        else:
            place.append(len(node) if isinstance(node, (dict, list)) else 0)
            break
    return tuple(place)


def key_parts(key: str) -> list[str]:
    """`analysis[2].components` (the notation errors print) or `analysis.2.components` as
    `["analysis", "2", "components"]`: a key copied from an error line must work as an override."""
    return re.sub(r"\[\s*(\d+)\s*\]", r".\1", key.strip()).split(".")


SECTION_MODELS: dict[str, type[BaseModel]] = {
    "experiment": Experiment,
    "execution": Execution,
    "benchmark": Benchmark,
}


BOUNDS = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"), "less_than_equal": ("<=", "le"),
          "less_than": ("<", "lt")}  # pydantic's error type: the bound's symbol and its key in the error's ctx


def _worded(err: Any) -> str:
    """pydantic's message in the harness's words, beside its own: lowercase, a bound as a symbol,
    what was given (`should be >= 0, got -1`, not `Input should be greater than or equal to 0`)."""
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] in BOUNDS:
        symbol, key = BOUNDS[err["type"]]
        bound = err["ctx"][key]
        message = f"should be {symbol} {f'{bound:g}' if isinstance(bound, float) else bound}"
    message = message.removeprefix("Input ")
    if message[1:2].islower():  # a sentence's capital, not an acronym's (CUDA)
        message = message[0].lower() + message[1:]
    given = err.get("input")
    if message.startswith("should") and isinstance(given, (int, float, str)):
        message += f", got {str(given).lower() if isinstance(given, bool) else repr(given)[:40]}"
    return message


def _describe(exc: ValidationError) -> list[str]:
    lines = []
    for err in exc.errors():
        path, parent = _locate(list(err["loc"]))
        message = _worded(err)
        if err["type"] == "extra_forbidden":
            key = path.rsplit(".", 1)[-1]
            hint = did_you_mean(key, parent.model_fields if parent else []) or _elsewhere(key, parent)
            message = "unknown key" + (f"; {hint}" if hint else "")
        elif err["type"] == "missing":
            message = "required key is missing"
        elif err["type"] in ("int_type", "float_type"):  # strict: `threads = true` ran as 1 thread
            given = err.get("input")
            shown = f"{str(given).lower()} is a boolean" if isinstance(given, bool) else f"{given!r}"
            message = f"{shown}; expected a {'whole ' * (err['type'] == 'int_type')}number"
        elif err["type"] in ("byte_size", "byte_size_unit"):  # pydantic's "could not parse value and unit from
            # byte string" named neither the form that parses nor, in the harness's words, what was given
            message = f"should be a size such as 256MiB or 2GB, got {err.get('input')!r}"
        elif err["type"] == "union_tag_not_found":
            key = err["ctx"]["discriminator"].strip("'")
            message = f"required key {key!r} is missing"
        elif err["type"] == "union_tag_invalid":  # pydantic's loc stops at the union: name its tag key
            path += "." + err["ctx"]["discriminator"].strip("'")
            message = f"unknown value {err['ctx']['tag']!r}; expected one of {err['ctx']['expected_tags']}"
        lines.append(f"{path or '(top level)'}: {message}")
    return lines


SHOWN_KEY = r"[\w.-]{1,64}"  # a key an error line prints as it is


def _elsewhere(key: str, parent: type[BaseModel] | None) -> str:
    """`did you mean 'benchmark.threads'?` for a key of another section given in this one (walk 24:
    `execution.threads: unknown key`, and nothing more)."""
    if parent not in SECTION_MODELS.values():
        return ""
    other = [f"{name}.{key}" for name, model in SECTION_MODELS.items() if model is not parent and key in model.model_fields]
    return f"did you mean {other[0]!r}?" if len(other) == 1 else ""


def _locate(loc: list[Any]) -> tuple[str, type[BaseModel] | None]:
    """pydantic's loc as `analysis[1].k`, without the union tag it inserts, and the model that
    holds the last key (for suggesting a valid key in place of an unknown one)."""
    model: type[BaseModel] | None = None
    depth = 1
    if len(loc) > 1 and loc[0] == "data" and loc[1] in DATA_MODELS:
        model = DATA_MODELS[loc.pop(1)]
    elif len(loc) > 2 and loc[0] == "analysis" and isinstance(loc[1], int) and loc[2] in ANALYSIS_MODELS:
        model, depth = ANALYSIS_MODELS[loc.pop(2)], 2
    elif loc and loc[0] in SECTION_MODELS:
        model = SECTION_MODELS[loc[0]]
    parent = Spec if len(loc) == 1 else model if len(loc) == depth + 1 else None
    path = ""
    for item in loc:
        if item == "[key]":  # pydantic's mark of a dict key's own error: the key is the item before
            continue
        if isinstance(item, str) and not re.fullmatch(SHOWN_KEY, item):  # a hostile key: quoted, its controls escaped
            item = f"[{item[:40]!r}]"
        path += f"[{item}]" if isinstance(item, int) else (f".{item}" if path and item[0] != "[" else str(item))
    return path, parent
