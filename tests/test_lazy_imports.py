"""Every `from harness... import name` names something that exists, nested imports too: a function's
own import runs only when the function does, so moving a name (peak_share, out of report.terminal)
broke the asv suite's setup while the whole test suite passed."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for folder in ("harness", "benchmarks") for p in (ROOT / folder).rglob("*.py"))


def _imported(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of every `from harness... import name` in the file, at any depth."""
    return [(node.lineno, node.module, alias.name) for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None
            and node.module.split(".")[0] == "harness" for alias in node.names]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_imported_from_harness_exists(path: Path) -> None:
    missing = []
    for line, module, name in _imported(path):
        found = importlib.import_module(module)
        if not hasattr(found, name) and not (hasattr(found, "__path__") and importlib.util.find_spec(f"{module}.{name}")):
            missing.append(f"{path.relative_to(ROOT)}:{line}: {module} has no {name}")
    assert missing == []
