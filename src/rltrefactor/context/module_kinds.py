"""What kind of module a file is, read from its content, never from its path.

- *kernel*: it defines GPU kernels (a top-level function decorated by one of the
  ``kernel-decorators`` of ``rules/names.yaml``: ``@triton.jit``, ``@triton.autotune``,
  CuTe's ``@cute.kernel``/``@cute.jit``). Its branches pick launch parameters (block
  sizes, warps, stages) from tuning, not from unexplained numbers.
- *configuration*: it turns environment variables into settings at import: at least
  two module-level (or settings-class-level) assignments read the environment, and
  they are at least half of its top-level statements (imports and docstrings aside).

A rule leaves modules of a kind alone with ``applies-to: {exclude-modules: [KIND]}``.

The body of a function such a decorator compiles (``kernel_bodies``) is not Python that
runs: it is traced into a device kernel or a DSL program, where a subscript store is a
memory write and an allocation is a register or shared-memory tile. No rule reads it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

from ..library.model import ModuleKind

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

    from ..library.names import Names
    from ..source.syntax import DefinitionMap

_ENV_READ = re.compile(r"\b(environ|getenv)\b")
_SKIPPED = {"import_statement", "import_from_statement", "future_import_statement", "comment"}
# Fewest environment-reading assignments that make a settings module.
_MIN_SETTINGS = 2


def module_kinds(tree: Tree, names: Names) -> frozenset[ModuleKind]:
    kinds: set[ModuleKind] = set()
    root = tree.root_node
    kernel = names.regex("kernel-decorators")
    if any(kernel.search(_text(d)) for d in _top_level_decorators(root)):
        kinds.add("kernel")
    if _is_settings_module(root):
        kinds.add("configuration")
    return frozenset(kinds)


def kernel_bodies(definitions: DefinitionMap, names: Names) -> tuple[tuple[int, int], ...]:
    """Lines (first, last) of every function, nested or a method, that a kernel decorator compiles."""
    kernel = names.regex("kernel-decorators")
    return tuple(
        (site.definition.start_line, site.definition.end_line)
        for site in definitions.functions
        if site.decorators and kernel.search(site.decorators)
    )


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def _top_level_decorators(root: Node) -> Iterator[Node]:
    for statement in root.children:
        if statement.type == "decorated_definition":
            yield from (c for c in statement.children if c.type == "decorator")


def _is_settings_module(root: Node) -> bool:
    reads = total = 0
    for statement in _settings_statements(root):
        total += 1
        assignment = statement.children[0] if statement.type == "expression_statement" else None
        value = assignment.child_by_field_name("right") if assignment is not None and assignment.type == "assignment" else None
        reads += value is not None and bool(_ENV_READ.search(_text(value)))
    return reads >= _MIN_SETTINGS and 2 * reads >= total


def _settings_statements(root: Node) -> Iterator[Node]:
    """Top-level statements, a class without methods standing for its body's statements."""
    for statement in root.children:
        if statement.type in _SKIPPED or _is_docstring(statement):
            continue
        body = statement.child_by_field_name("body") if statement.type == "class_definition" else None
        if body is not None and not any(c.type in ("function_definition", "decorated_definition") for c in body.children):
            yield from (c for c in body.children if c.type not in _SKIPPED and not _is_docstring(c))
        else:
            yield statement


def _is_docstring(statement: Node) -> bool:
    return statement.type == "expression_statement" and statement.children[0].type == "string"
