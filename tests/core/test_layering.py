"""Stages import one way: types -> library -> matchers -> engine -> api -> cli and authoring tools.

Every import counts, wherever it is written: module level, inside a function, or
under ``TYPE_CHECKING``. A late import hides an edge from the reader, not from the layering.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "rltrefactor"
SOURCE = Path(__file__).resolve().parents[2] / "src" / PACKAGE


def _module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every ``rltrefactor`` module (or name in one) that ``path`` imports."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in NAMES)  # `from . import gitio`
    return {name for name in found if name == PACKAGE or name.startswith(f"{PACKAGE}.")}


NAMES = {_module_name(path) for path in SOURCE.rglob("*.py")}
MODULES = {_module_name(path): _imports(path) for path in sorted(SOURCE.rglob("*.py"))}


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == f"{PACKAGE}.{p}" or name.startswith(f"{PACKAGE}.{p}.") for p in prefixes)


CLI = ("cli", "cli_rules", "__main__")
LIBRARY_MAY_IMPORT = ("library", "errors", "types", "globs")
# (who, what they may not import, why)
RULES = [
    (("matchers",), ("engine", "executor", "api", *CLI, "authoring", "perf", "report", "preexisting", "cache"),
     "matchers see one file; the engine drives them"),
    (("cache",), ("engine", "executor", "api"), "the result cache stores records (types), whoever produced them"),
]


def _violations() -> list[str]:
    found = []
    for module, imported in MODULES.items():
        if _within(module, ("library",)):
            found += [f"{module} imports {name}: the rule model and loader import only errors, types and globs"
                      for name in sorted(imported) if name != PACKAGE and not _within(name, LIBRARY_MAY_IMPORT)]
        for who, banned, why in RULES:
            if _within(module, who):
                found += [f"{module} imports {name}: {why}" for name in sorted(imported) if _within(name, banned)]
        if not _within(module, ("api", *CLI)):
            found += [f"{module} imports {name}: only the front ends call the api"
                      for name in sorted(imported) if _within(name, ("api",))]
        if not _within(module, CLI):
            found += [f"{module} imports {name}: only cli modules import cli modules"
                      for name in sorted(imported) if _within(name, CLI)]
        if not _within(module, (*CLI, "authoring")):
            found += [f"{module} imports {name}: rule-authoring tools serve the rules command only"
                      for name in sorted(imported) if _within(name, ("authoring",))]
    return found


def test_every_module_is_read():
    assert f"{PACKAGE}.library.loader" in MODULES and f"{PACKAGE}.matchers.registry" in MODULES


def test_relative_imports_resolve_to_package_modules():
    assert f"{PACKAGE}.errors" in MODULES[f"{PACKAGE}.library.loader"]
    assert f"{PACKAGE}.gitio" in MODULES[f"{PACKAGE}.changes"]  # `from . import gitio`


def test_stages_import_one_way():
    found = _violations()
    assert not found, "\n".join(found)


@pytest.mark.parametrize("module", [f"{PACKAGE}.library", f"{PACKAGE}.matchers"])
def test_each_stage_has_modules(module):
    assert any(name.startswith(module) for name in MODULES)
