"""The matcher protocol and the per-file context every matcher reads.

A file is parsed once and walked once: the walk indexes nodes by type and records
each node's parent, so a matcher asks for the nodes it cares about instead of
walking the tree again. Positions are resolved only for nodes that hit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Protocol, TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..types import Definition, Span
from .imports import ImportTable

N = TypeVar("N", bound=cst.CSTNode)


class _Indexer(cst.CSTVisitor):
    def __init__(self) -> None:
        self.by_type: dict[type, list[cst.CSTNode]] = defaultdict(list)
        self.parent: dict[int, cst.CSTNode] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.by_type[type(node)].append(node)
        if self._stack:
            self.parent[id(node)] = self._stack[-1]
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


@dataclass(frozen=True)
class Match:
    """A node a matcher flags, with the metavariable bindings it made."""

    node: cst.CSTNode
    bindings: Mapping[str, str] = field(default_factory=dict)


class FileContext:
    """One parsed file as matchers see it. Built by the engine, read-only for matchers."""

    def __init__(
        self,
        path: str,
        module: cst.Module,
        *,
        is_hot_path: bool,
        is_test: bool,
        definitions: "DefinitionLookup",
    ) -> None:
        self.path = path
        self.module = module
        self.is_hot_path = is_hot_path
        self.is_test = is_test
        self.definitions = definitions
        self.imports = ImportTable.from_module(module)
        indexer = _Indexer()
        module.visit(indexer)
        self._by_type = indexer.by_type
        self._parent = indexer.parent
        self._positions: Mapping[cst.CSTNode, object] | None = None

    def nodes(self, node_type: type[N]) -> list[N]:
        """Every node of exactly this type, in source order."""
        return self._by_type.get(node_type, [])  # type: ignore[return-value]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parent.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self._parent.get(id(node))
        while current is not None:
            yield current
            current = self._parent.get(id(current))

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                return ancestor
        return None

    def enclosing_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.ClassDef):
                return ancestor
        return None

    def in_loop(self, node: cst.CSTNode, *, stop_at_function: bool = True) -> bool:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.For, cst.While, cst.CompFor)):
                return True
            if stop_at_function and isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                return False
        return False

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def qualified_name(self, node: cst.CSTNode) -> str | None:
        """Dotted name an expression refers to, through the file's imports."""
        return self.imports.resolve(node)

    def span(self, node: cst.CSTNode) -> Span:
        if self._positions is None:
            # The module was parsed by us and is never mutated, so positions can be
            # computed on it directly without LibCST's defensive deep copy.
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        pos = self._positions[node]  # type: ignore[index]
        return Span(
            line=pos.start.line,  # type: ignore[attr-defined]
            column=pos.start.column + 1,  # type: ignore[attr-defined]
            end_line=pos.end.line,  # type: ignore[attr-defined]
            end_column=pos.end.column + 1,  # type: ignore[attr-defined]
        )


class DefinitionLookup(Protocol):
    def enclosing(self, line: int) -> Definition: ...


class Matcher(Protocol):
    """What both compiled YAML patterns and registered Python matchers implement."""

    rule_id: str
    # Substrings of which at least one must occur in a file's text for the matcher to
    # possibly hit; empty means no cheap test exists and the file is always parsed.
    prefilter: tuple[str, ...]

    def find(self, ctx: FileContext) -> Iterable[Match]: ...
