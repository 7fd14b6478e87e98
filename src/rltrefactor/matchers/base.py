"""The matcher protocol and the per-file context every matcher reads.

A file is parsed once and walked once: the walk indexes nodes by type and records
each node's parent, so a matcher asks for the nodes it cares about instead of
walking the tree again. Positions are resolved only for nodes that hit.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Protocol, TypeVar

import libcst as cst
from libcst.metadata.position_provider import PositionProvidingCodegenState

from ..execution import EMPTY as NO_FUNCTIONS, ExecutionMap
from ..regions import MatcherReach
from ..prefilter import Prefilter
from ..types import Definition, Span
from .imports import ImportTable, resolve, table_from_nodes

__all__ = ["DefinitionLookup", "FileContext", "Match", "Matcher", "MatcherReach", "child_nodes", "positions"]

N = TypeVar("N", bound=cst.CSTNode)


# Formatting-only nodes: never asked for by a matcher and never holding code, so the
# index neither records them nor looks inside them (they are most of a CST's nodes).
_TRIVIA = frozenset({
    cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.Newline,
    cst.EmptyLine, cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Comma, cst.Dot, cst.Colon, cst.Semicolon,
    cst.AssignEqual, cst.ImportStar,
})
_FIELDS: dict[type, tuple[str, ...]] = {}
_IS_NODE: dict[type, bool] = {}


def _is_node(kind: type) -> bool:
    # A dict lookup instead of isinstance(): CSTNode is an ABC, and ABC checks are slow.
    flag = _IS_NODE.get(kind)
    if flag is None:
        flag = _IS_NODE[kind] = issubclass(kind, cst.CSTNode) and kind not in _TRIVIA
    return flag


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Child nodes read straight from the dataclass fields, trivia left out.

    Several times faster than ``CSTNode.children``, which runs a visitor per node.
    """
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            out.extend(item for item in value if _is_node(type(item)))
        elif _is_node(kind):
            out.append(value)
    return out


def _index(module: cst.Module) -> tuple[dict[type, list[cst.CSTNode]], dict[int, cst.CSTNode]]:
    by_type: dict[type, list[cst.CSTNode]] = defaultdict(list)
    parent: dict[int, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        by_type[type(node)].append(node)
        children = child_nodes(node)
        for child in children:
            parent[id(child)] = node
        children.reverse()  # pre-order: source order within each type
        stack.extend(children)
    return by_type, parent


class _PositionState(PositionProvidingCodegenState):
    """LibCST's syntactic positions, keyed by ``id(node)`` and stored as plain tuples.

    Same numbers as ``PositionProvider`` (tested), several times cheaper: no metadata
    wrapper, no hashing of nodes, no newline regex for tokens without a newline.
    """

    _stack: list[tuple[int, int]]  # type: ignore[assignment]  # plain tuples: cheaper than CodePosition
    provider: _PositionSink  # type: ignore[assignment]  # only ``_computed`` is read, and the sink holds it

    @contextmanager
    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> Iterator[None]:
        start_line, start_column = self.line, self.column
        try:
            yield
        finally:
            computed = self.provider._computed
            end_line, end_column = self.line, self.column
            if start_node is not None:
                start_line, start_column = computed[id(start_node)][:2]
            if end_node is not None:
                end_line, end_column = computed[id(end_node)][2:]
            computed[id(node)] = (start_line, start_column, end_line, end_column)

    def add_token(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            self._update_position(value)
        else:
            self.column += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.column += len(token)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start_line, start_column = self._stack.pop()
        computed = self.provider._computed
        computed.setdefault(id(node), (start_line, start_column, self.line, self.column))


class _PositionSink:
    __slots__ = ("_computed",)

    def __init__(self) -> None:
        self._computed: dict[int, tuple[int, int, int, int]] = {}


def positions(module: cst.Module) -> dict[int, tuple[int, int, int, int]]:
    """``id(node) -> (line, column0, end_line, end_column0)`` for every node of ``module``."""
    sink = _PositionSink()
    state = _PositionState(default_indent=module.default_indent, default_newline=module.default_newline, provider=sink)  # type: ignore[arg-type]  # the sink stands in for a provider
    module._codegen(state)
    return sink._computed


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
        line_offset: int = 0,
        imports: ImportTable | None = None,
        execution: ExecutionMap = NO_FUNCTIONS,
    ) -> None:
        """``module`` may be a region of the file: its line 1 is file line ``line_offset + 1``.

        A region is always a run of whole top-level statements, so columns are the
        file's columns; ``imports`` then carries the file's top-level imports.
        """
        self.path = path
        self.module = module
        self.is_hot_path = is_hot_path
        self.is_test = is_test
        self.definitions = definitions
        self.line_offset = line_offset
        self.execution = execution  # where each function of the whole file runs
        self._by_type, self._parent = _index(module)
        own = table_from_nodes([*self.nodes(cst.Import), *self.nodes(cst.ImportFrom)])
        self.imports = imports.merged(own) if imports is not None else own
        self._positions: dict[int, tuple[int, int, int, int]] | None = None

    def nodes(self, node_type: type[N]) -> list[N]:
        """Every node of exactly this type, in source order."""
        return self._by_type.get(node_type, [])  # type: ignore[return-value]  # keyed by exact type: all are N

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
        return resolve(self.imports, node)

    def span(self, node: cst.CSTNode) -> Span:
        """Location of ``node`` in the file (1-based lines and columns)."""
        if self._positions is None:
            self._positions = positions(self.module)
        line, column, end_line, end_column = self._positions[id(node)]
        offset = self.line_offset
        return Span(line + offset, column + 1, end_line + offset, end_column + 1)


class DefinitionLookup(Protocol):
    def enclosing(self, line: int) -> Definition: ...


class Matcher(Protocol):
    """What both compiled YAML patterns and registered Python matchers implement."""

    rule_id: str
    # Substrings (or compiled regexes) of which at least one must occur in a statement's
    # text for the matcher to possibly hit there; empty means no cheap test exists and
    # every statement is parsed. Precise tokens are what keeps full scans fast.
    prefilter: Prefilter
    # What planning may leave unparsed around the tokens.
    reach: MatcherReach

    def find(self, ctx: FileContext) -> Iterable[Match]: ...
