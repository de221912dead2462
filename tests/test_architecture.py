"""The house rules of ARCHITECTURE.md, checked: stages import only downwards (import-linter's
contracts in pyproject.toml), every package sits in a stage, the top level stays small, and
every module keeps short files and functions."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import harness
from harness.store import keys

ROOT = Path(harness.__file__).parent
PYPROJECT = ROOT.parent / "pyproject.toml"
LONG_FILE, LONG_FUNCTION = 400, 60


def _contracts() -> list[dict]:  # type: ignore[type-arg]
    return tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]


def test_lint_imports_keeps_every_contract() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], cwd=ROOT.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_every_package_is_a_layer() -> None:
    """A new package cannot escape the layers contract (a layer of siblings names each: `a | b`)."""
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    found = {f"harness.{p.name}" for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert found == {name.strip() for layer in layers for name in layer.split("|")}


def test_every_module_sits_in_a_stage() -> None:
    """No module at harness/'s top but the package's own and `python -m harness`'s entry."""
    assert {p.name for p in ROOT.glob("*.py")} == {"__init__.py", "__main__.py"}


def test_each_package_says_what_lives_there() -> None:
    for init in ROOT.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and "import" in doc.lower(), f"{init}: the docstring says what lives here and what it may import"


def test_every_module_keeps_files_and_functions_short() -> None:
    long = []
    for path in sorted(ROOT.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        source = path.read_text()
        if len(source.splitlines()) > LONG_FILE:
            long.append(f"{name}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LONG_FUNCTION:
                    long.append(f"{name}:{node.name}: {length} lines")
    assert long == []


def test_the_cache_fingerprint_covers_every_module_of_the_numeric_packages() -> None:
    """Derived, not hand-kept: a module added to (or moved into) a numeric package is covered."""
    covered = set(keys.numeric_modules(keys.TIMING_PACKAGES))
    for name in keys.TIMING_PACKAGES:
        modules = set((ROOT / name).rglob("*.py"))
        assert modules and modules <= covered


def test_a_numeric_package_that_is_gone_is_an_error() -> None:
    try:
        keys.numeric_modules(("linalg", "no_such_package"))
    except RuntimeError as exc:
        assert "no_such_package" in str(exc)
    else:
        raise AssertionError("a missing numeric package must not fingerprint nothing")
