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


CLI = ("cli", "__main__")
# The stages in pipeline order, bottom to top; a module imports only from its own layer
# and the layers below. A module belongs to the layer of its longest listed prefix.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("shared types", ("errors", "severity", "types")),
    ("rule library", ("library",)),  # rule model, loading, validation, name lists, path globs
    ("configuration", ("config",)),  # what pyproject.toml says, read before any stage runs
    ("change", ("change",)),  # git, diffs, contents at a revision
    ("source", ("source",)),  # one parse per file: tree-sitter, LibCST, definitions
    ("context", ("context",)),  # where code runs: execution map, call index, file model
    ("matching", ("matching",)),  # engine, prefilter, regions, matchers, pattern compiler
    ("perf", ("perf",)),  # the perf hook: micro-checks and tests at base and head
    ("findings", ("findings",)),  # suppression, scope, pre-existing, baseline, repeats
    ("report", ("report",)),  # one module per output format
    ("api", ("api",)),
    ("front ends", (*CLI, "authoring")),
]
# The package's top level holds the API, the CLI and the shared types; everything else
# lives in the package of its stage.
TOP_LEVEL = {"__init__", "__main__", "api", "errors", "severity", "types"}
STAGES = {"authoring", "change", "cli", "config", "context", "findings", "library", "matching", "perf", "report", "source"}
LIBRARY_MAY_IMPORT = ("library", "errors", "severity", "types")
# (who, what they may not import, why)
RULES = [
    (("matching.matchers",), ("matching.engine", "matching.executor", "matching.cache", "api", *CLI, "authoring", "perf", "report", "findings"),
     "matchers see one file; the engine drives them"),
    (("matching.cache",), ("matching.engine", "matching.executor", "api"), "the result cache stores records (types), whoever produced them"),
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
            found += [f"{module} imports {name}: the rule library imports only the shared types"
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
    assert f"{PACKAGE}.library.loader" in MODULES and f"{PACKAGE}.matching.matchers.registry" in MODULES


def test_relative_imports_resolve_to_package_modules():
    assert f"{PACKAGE}.errors" in MODULES[f"{PACKAGE}.library.loader"]
    assert f"{PACKAGE}.source.syntax" in MODULES[f"{PACKAGE}.matching.engine"]  # `from ..source import syntax`


def test_top_level_holds_only_the_api_the_cli_and_shared_types():
    modules = {path.stem for path in SOURCE.glob("*.py")}
    packages = {path.parent.name for path in SOURCE.glob("*/__init__.py")}
    assert modules <= TOP_LEVEL, f"move {sorted(modules - TOP_LEVEL)} into the package of its stage"
    assert packages == STAGES


def test_stages_import_one_way():
    found = _violations()
    assert not found, "\n".join(found)


@pytest.mark.parametrize("module", sorted(f"{PACKAGE}.{stage}" for stage in STAGES))
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
    assert any(line.startswith(f"{PACKAGE}.types (shared types) imports {PACKAGE}.library.model") for line in found)


def test_modules_importing_each_other_are_reported(monkeypatch):
    monkeypatch.setitem(MODULES, f"{PACKAGE}.library.model", {f"{PACKAGE}.types"})
    monkeypatch.setitem(MODULES, f"{PACKAGE}.types", {f"{PACKAGE}.library.model"})
    assert [f"{PACKAGE}.library.model", f"{PACKAGE}.types"] in _cycles()


def _runtime_imports(path: Path) -> set[str]:
    """Top-level names of the modules ``path`` imports when it runs (``TYPE_CHECKING`` blocks left out)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name.split(".")[0] for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and not child.level and child.module:
                found.add(child.module.split(".")[0])
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_one_module_owns_tree_sitter():
    owner = SOURCE / "source" / "treesitter.py"
    users = sorted(_module_name(path) for path in SOURCE.rglob("*.py")
                   if path != owner and _runtime_imports(path) & {"tree_sitter", "tree_sitter_python"})
    assert not users, f"{users} build tree-sitter objects: ask rltrefactor.source.treesitter"
    assert {"tree_sitter", "tree_sitter_python"} <= _runtime_imports(owner)


MATCHERS = SOURCE / "matching" / "matchers"
# The matchers live in one package per area of the rule library; beside them, only what
# every area shares (the matcher protocol, options, the registry, positions, syntax helpers).
MATCHER_AREAS = {"capability", "interfaces", "lifecycle", "readability", "residency", "state"}
SHARED_MATCHER_MODULES = {
    "__init__", "base", "companions", "context", "early_returns", "fallbacks", "guard_bodies", "hook", "imports", "once", "options",
    "positions", "registry", "returned", "walk",
}


def test_matchers_are_grouped_by_the_library_areas():
    packages = {path.parent.name for path in MATCHERS.glob("*/__init__.py")}
    modules = {path.stem for path in MATCHERS.glob("*.py")}
    assert packages == MATCHER_AREAS, f"matcher packages {sorted(packages ^ MATCHER_AREAS)}: one package per area"
    assert modules == SHARED_MATCHER_MODULES, (
        f"{sorted(modules - SHARED_MATCHER_MODULES)}: a matcher belongs in the package of its area"
    )
    assert not list(MATCHERS.glob("*/*/__init__.py")), "an area package is flat"


def test_every_registered_matcher_lives_in_an_area_package():
    from rltrefactor.matching.matchers.registry import PYTHON_MATCHERS

    outside = sorted(matcher_id for matcher_id, factory in PYTHON_MATCHERS.items()
                     if factory.cls.__module__.split(".")[3] not in MATCHER_AREAS)  # type: ignore[attr-defined]
    assert not outside, f"registered matchers outside an area package: {outside}"


def _mentions_the_type_engine(path: Path) -> bool:
    """Whether ``path``'s code (not its docstrings or comments) names the type engine's program."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return any(isinstance(node, ast.Constant) and isinstance(node.value, str) and "pyrefly" in node.value.lower()
               and id(node) not in docstrings for node in ast.walk(tree))


def test_one_module_owns_the_type_engine():
    owner = SOURCE / "context" / "typeengine.py"
    users = sorted(_module_name(path) for path in SOURCE.rglob("*.py") if path != owner and _mentions_the_type_engine(path))
    assert not users, f"{users} talk to the type engine: ask rltrefactor.context.typeengine"
    assert _mentions_the_type_engine(owner)
    assert _layer(_module_name(owner)) == [name for name, _ in LAYERS].index("context")
