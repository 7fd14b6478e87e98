"""Qualified names through import aliases, read from LibCST nodes (a region's own
imports; the module-level table comes from ``aliases.import_table``)."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from ...source.aliases import ImportTable, bind_import, bind_import_from

__all__ = ["ImportTable", "dotted_name", "resolve", "table_from_module", "table_from_nodes"]


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a chain of Name/Attribute nodes, else None."""
    parts: list[str] = []
    current: cst.BaseExpression = node
    while isinstance(current, cst.Attribute):
        parts.append(current.attr.value)
        current = current.value
    if isinstance(current, cst.Name):
        parts.append(current.value)
        return ".".join(reversed(parts))
    return None


def _module_name(node: cst.BaseExpression | None, relative: int) -> str:
    base = dotted_name(node) if node is not None else ""
    return "." * relative + (base or "")


def table_from_module(module: cst.Module) -> ImportTable:
    return table_from_nodes(n for n in _walk_statements(module) if isinstance(n, (cst.Import, cst.ImportFrom)))


def table_from_nodes(nodes: "Iterable[cst.Import | cst.ImportFrom]") -> ImportTable:
    """Aliases bound by these import statements, later ones winning."""
    aliases: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, cst.Import):
            _bind_import(node, aliases)
        else:
            _bind_import_from(node, aliases)
    return ImportTable(aliases)


def resolve(table: ImportTable, node: cst.CSTNode) -> str | None:
    """Dotted name an expression refers to, through ``table``."""
    if not isinstance(node, cst.BaseExpression):
        return None
    dotted = dotted_name(node)
    return table.qualify(dotted) if dotted is not None else None


def _walk_statements(module: cst.Module) -> Iterator[cst.BaseSmallStatement]:
    """Small statements of the module, nested blocks included (no expression walk)."""
    stack: list[cst.CSTNode] = list(reversed(module.body))
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleStatementLine):
            yield from node.body
        elif isinstance(node, cst.BaseCompoundStatement):
            bodies = [node.body] + [getattr(node, name) for name in ("orelse", "finalbody") if getattr(node, name, None)]
            bodies += list(getattr(node, "handlers", ()))
            for body in reversed(bodies):
                inner = getattr(body, "body", body)
                if isinstance(inner, cst.BaseSuite):
                    inner = inner.body
                if isinstance(inner, (list, tuple)):
                    stack.extend(reversed(inner))
                elif isinstance(inner, cst.CSTNode):
                    stack.append(inner)


def _asname(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None


def _bind_import(node: cst.Import, aliases: dict[str, str]) -> None:
    for alias in node.names:
        full = dotted_name(alias.name)
        if full is not None:
            bind_import(full, _asname(alias), aliases)


def _bind_import_from(node: cst.ImportFrom, aliases: dict[str, str]) -> None:
    if isinstance(node.names, cst.ImportStar):
        return
    module = _module_name(node.module, len(node.relative))
    for alias in node.names:
        name = dotted_name(alias.name)
        if name is not None:
            bind_import_from(module, name, _asname(alias), aliases)
