"""ARCHITECTURE.md names every package and every module of one: a module added to harness/ without
its line there fails here, and so does a line naming a module that is gone (issue 48: 21 modules
were missing and three packages misdescribed)."""

from __future__ import annotations

import re
from pathlib import Path

import harness

ROOT = Path(harness.__file__).parent
DOC = ROOT.parent / "ARCHITECTURE.md"
TOP = "Top level"


def code_modules(root: Path = ROOT) -> dict[str, set[str]]:
    """Per package folder (`cli/commands`), its modules' names; TOP: harness/'s own .py files."""
    found = {TOP: {p.name for p in root.glob("*.py") if p.name != "__init__.py"}}
    for init in root.rglob("__init__.py"):
        package = init.parent.relative_to(root).as_posix()
        if package != ".":
            found[package] = {p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py"}
    return found


def documented_modules(text: str) -> dict[str, set[str]]:
    """Per `### \\`harness/PACKAGE/\\`` section (or `### Top level`), every `name` in backticks."""
    sections = re.split(r"^### ", text, flags=re.M)[1:]
    named: dict[str, set[str]] = {}
    for section in sections:
        title, _, body = section.partition("\n")
        package = re.fullmatch(r"`harness/(.+)/`", title.strip())
        key = package.group(1) if package else title.strip()
        named[key] = set(re.findall(r"`([\w.]+)`", body))
    return named


def undescribed(root: Path, text: str) -> list[str]:
    named = documented_modules(text)
    missing = [f"{package}/ (no section)" for package in code_modules(root) if package not in named]
    missing += [f"{package}/{m}" for package, modules in code_modules(root).items()
                for m in sorted(modules - named.get(package, set()))]
    return missing


def test_every_package_and_module_is_described() -> None:
    assert undescribed(ROOT, DOC.read_text()) == []


def test_no_section_describes_a_package_that_is_gone() -> None:
    assert set(documented_modules(DOC.read_text())) <= set(code_modules())


def test_a_module_added_without_its_line_fails(tmp_path: Path) -> None:
    """The check itself, on a copy of the tree with one more module and one more package."""
    tree = tmp_path / "harness"
    for package, modules in code_modules().items():
        folder = tree if package == TOP else tree / package
        folder.mkdir(parents=True, exist_ok=True)
        if package != TOP:
            (folder / "__init__.py").touch()
        for module in modules:
            (folder / (module if package == TOP else f"{module}.py")).touch()
    assert undescribed(tree, DOC.read_text()) == []
    (tree / "run" / "sweeps.py").touch()
    (tree / "sweep").mkdir()
    (tree / "sweep" / "__init__.py").touch()
    assert undescribed(tree, DOC.read_text()) == ["sweep/ (no section)", "run/sweeps"]
