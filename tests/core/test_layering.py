"""Stages import one way, down the layers listed in ``LAYERS``, and no module imports itself
back through others.

Every import counts, wherever it is written: module level, inside a function, or
under ``TYPE_CHECKING``. A late import hides an edge from the reader, not from the layering.
Every module belongs to a layer: a new module fails here until it is given one.
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


CLI = ("cli", "cli_rules", "cli_perf", "__main__")
# Bottom to top; a module imports only from its own layer and the layers below. A module
# belongs to the layer of its longest listed prefix (``perf.records`` before ``perf``).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundations", ("errors", "severity", "globs", "prefilter", "aliases", "cstprivate", "fileio", "gitio")),
    ("records", ("types",)),
    ("rule library", ("library",)),
    ("names", ("names",)),  # the versioned name lists: read by the source stages and the matchers
    ("source", ("syntax", "regions", "file_functions", "execution", "filemodel", "module_kinds", "kernel_outputs", "parsing", "contents", "changes", "cache")),
    ("matchers", ("matchers",)),
    ("configuration", ("config", "misspellings")),  # checks rule options against the matchers
    ("call index", ("callfacts", "calllinks", "callcontexts", "callindex")),  # where functions run, read across the repository
    ("engine", ("rule_findings", "suppressions", "rule_index", "engine", "executor", "preexisting", "repeats")),
    ("review records", ("perf.records", "result", "baseline")),
    ("reports and perf", ("report", "perf")),
    ("final pass", ("finishing",)),  # every source of findings, once: static, measured, baselined
    ("api", ("api",)),
    ("front ends", (*CLI, "authoring")),
]
LIBRARY_MAY_IMPORT = ("library", "errors", "severity", "types", "globs")
# (who, what they may not import, why)
RULES = [
    (("matchers",), ("engine", "executor", "api", *CLI, "authoring", "perf", "report", "preexisting", "cache"),
     "matchers see one file; the engine drives them"),
    (("cache",), ("engine", "executor", "api"), "the result cache stores records (types), whoever produced them"),
]


def _layer(module: str) -> int | None:
    """Position in ``LAYERS`` of ``module``'s longest listed prefix; the package's own
    ``__init__`` (its version) is a foundation."""
    if module == PACKAGE:
        return 0
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for position, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if _within(module, (prefix,)) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), position)
    return best[1] if best is not None else None


def _layer_violations() -> list[str]:
    found = []
    for module, imported in MODULES.items():
        own = _layer(module)
        if own is None:
            found.append(f"{module} is in no layer: add it to LAYERS in tests/core/test_layering.py")
            continue
        for name in sorted(imported):
            theirs = _layer(name)
            if theirs is not None and theirs > own:
                found.append(f"{module} ({LAYERS[own][0]}) imports {name} ({LAYERS[theirs][0]}): layers import downwards")
    return found


def _cycles() -> list[list[str]]:
    """Groups of modules that import each other, directly or through others."""
    graph = {module: sorted(name for name in imported if name in MODULES and name != module)
             for module, imported in MODULES.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        order[module] = low[module] = len(order)
        stack.append(module)
        for name in graph[module]:
            if name not in order:
                visit(name)
                low[module] = min(low[module], low[name])
            elif name in stack:
                low[module] = min(low[module], order[name])
        if low[module] == order[module]:
            group = [stack.pop()]
            while group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def _violations() -> list[str]:
    found = []
    for module, imported in MODULES.items():
        if _within(module, ("library",)):
            found += [f"{module} imports {name}: the rule model and loader import only errors, severity, types and globs"
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


def test_every_module_is_in_a_layer_and_imports_downwards():
    found = _layer_violations()
    assert not found, "\n".join(found)


def test_no_modules_import_each_other():
    found = _cycles()
    assert not found, "\n".join(" <-> ".join(group) for group in found)


def test_a_module_in_no_layer_or_importing_upwards_is_reported(monkeypatch):
    monkeypatch.setitem(MODULES, f"{PACKAGE}.newcomer", set())
    monkeypatch.setitem(MODULES, f"{PACKAGE}.types", {f"{PACKAGE}.library.model"})
    found = _layer_violations()
    assert f"{PACKAGE}.newcomer is in no layer: add it to LAYERS in tests/core/test_layering.py" in found
    assert any(line.startswith(f"{PACKAGE}.types (records) imports {PACKAGE}.library.model") for line in found)


def test_modules_importing_each_other_are_reported(monkeypatch):
    monkeypatch.setitem(MODULES, f"{PACKAGE}.library.model", {f"{PACKAGE}.types"})
    monkeypatch.setitem(MODULES, f"{PACKAGE}.types", {f"{PACKAGE}.library.model"})
    assert [f"{PACKAGE}.library.model", f"{PACKAGE}.types"] in _cycles()
