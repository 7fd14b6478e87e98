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
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping, Protocol, Sequence, TypeVar

import libcst as cst
from libcst.metadata.position_provider import PositionProvidingCodegenState

from ..execution import EMPTY as NO_FUNCTIONS, ExecutionMap
from ..names import Names, bundled_names
from ..regions import MatcherReach, file_line
from ..prefilter import Prefilter
from ..types import Definition, Span
from .imports import ImportTable, resolve, table_from_nodes

if TYPE_CHECKING:
    import tree_sitter

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
# Fields that only ever hold formatting (the trivia above, or strings such as an indent):
# skipped by name, which is cheaper than reading them and finding nothing.
TRIVIA_FIELDS = ("whitespace", "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators",
                 "header", "footer", "trailing_whitespace", "newline", "indent")


def _is_node(kind: type) -> bool:
    # A dict lookup instead of isinstance(): CSTNode is an ABC, and ABC checks are slow.
    flag = _IS_NODE.get(kind)
    if flag is None:
        flag = _IS_NODE[kind] = issubclass(kind, cst.CSTNode) and kind not in _TRIVIA
    return flag


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Child nodes read straight from the dataclass fields, trivia left out.

    Several times faster than ``CSTNode.children``, which runs a visitor per node; it
    runs for every node of every parsed region, hence the plain loops.
    """
    kind = type(node)
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(node) if not f.name.startswith(TRIVIA_FIELDS))
    is_node = _IS_NODE
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        value_kind = type(value)
        if value_kind is list or value_kind is tuple:
            for item in value:
                flag = is_node.get(type(item))
                if flag if flag is not None else _is_node(type(item)):
                    out.append(item)
        else:
            flag = is_node.get(value_kind)
            if flag if flag is not None else _is_node(value_kind):
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
    return _positions_of(module, module, ())


def _positions_of(
    module: cst.Module, node: cst.CSTNode, indents: tuple[str, ...]
) -> dict[int, tuple[int, int, int, int]]:
    """Positions of ``node``'s subtree, codegen starting at line 1, column 0, inside the
    blocks whose indents are ``indents``."""
    sink = _PositionSink()
    state = _PositionState(default_indent=module.default_indent, default_newline=module.default_newline, provider=sink)  # type: ignore[arg-type]  # the sink stands in for a provider
    state.indent_tokens.extend(indents)
    node._codegen(state)
    return sink._computed


class _AllPositions:
    """Positions of every node, from one codegen of the whole module."""

    def __init__(self, module: cst.Module) -> None:
        self._computed = positions(module)

    def of(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        return self._computed[id(node)]


class _AnchoredPositions:
    """Positions of a region's nodes, each computed from its *anchor* alone: the
    top-level statement holding it or, inside a class, the class member holding it.

    An anchor's subtree is generated on its own (a method, not its whole class) and
    shifted to the line where tree-sitter, parsing the same text, starts that
    statement: the i-th top-level statement (statements sharing a line are one) and the
    j-th member of a class body. Where the two parsers do not agree on the count, the
    whole module is generated, as ``positions`` does."""

    def __init__(self, module: cst.Module, text: str, parent: Mapping[int, cst.CSTNode]) -> None:
        """``text``: what ``module`` was parsed from."""
        self._module = module
        self._text = text
        self._parent = parent
        self._by_anchor: dict[int, dict[int, tuple[int, int, int, int]]] = {}
        self._rows: _StatementRows | None = None
        self._whole: dict[int, tuple[int, int, int, int]] | None = None

    def of(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        if self._whole is None:
            found = self._anchored(node)
            if found is not None:
                return found
            self._whole = positions(self._module)
        return self._whole[id(node)]

    def _anchored(self, node: cst.CSTNode) -> tuple[int, int, int, int] | None:
        chain = [node]
        while (above := self._parent.get(id(chain[-1]))) is not None:
            chain.append(above)
        if len(chain) < 2 or chain[-1] is not self._module:
            return None
        statement = chain[-2]
        # Inside a class body the anchor is the member: ClassDef -> IndentedBlock -> member.
        block = statement.body if isinstance(statement, cst.ClassDef) else None
        member = chain[-4] if isinstance(block, cst.IndentedBlock) and len(chain) >= 4 and chain[-3] is block else None
        anchor = member if member is not None else statement
        computed = self._by_anchor.get(id(anchor))
        if computed is None:
            indents: tuple[str, ...] = ()
            if member is not None and isinstance(block, cst.IndentedBlock):
                row = self._member_row(statement, block, member)
                indents = (self._module.default_indent if block.indent is None else block.indent,)
            else:
                row = self._row(statement)
            if row is None:
                return None
            local = _positions_of(self._module, anchor, indents)
            shift = row + 1 - local[id(anchor)][0]
            computed = {key: (a + shift, b, c + shift, d) for key, (a, b, c, d) in local.items()}
            self._by_anchor[id(anchor)] = computed
        return computed.get(id(node))

    def _row(self, statement: cst.CSTNode) -> int | None:
        """0-based row where tree-sitter starts the top-level ``statement``."""
        return self._statement_rows().top_level(_index_of(self._module.body, statement), len(self._module.body))

    def _member_row(self, statement: cst.CSTNode, block: cst.IndentedBlock, member: cst.CSTNode) -> int | None:
        """0-based row where tree-sitter starts ``member`` of ``block``, the top-level class ``statement``'s body."""
        position = _index_of(self._module.body, statement)
        return self._statement_rows().member(position, len(self._module.body), _index_of(block.body, member), len(block.body))

    def _statement_rows(self) -> _StatementRows:
        if self._rows is None:
            self._rows = _StatementRows(self._text)
        return self._rows


def _index_of(items: Sequence[cst.CSTNode], node: cst.CSTNode) -> int:
    return next(i for i, item in enumerate(items) if item is node)


class _StatementRows:
    """Where tree-sitter starts the statements of a text, grouped as LibCST groups
    them: statements sharing a line (``a = 1; b = 2``) make one."""

    def __init__(self, code: str) -> None:
        from ..syntax import parse_fresh

        tree = parse_fresh(code)
        self._ok = not tree.root_node.has_error
        self._top = _grouped(tree.root_node.children)

    def top_level(self, position: int, count: int) -> int | None:
        if not self._ok or len(self._top) != count:
            return None
        return _syntactic_row(self._top[position])

    def member(self, position: int, count: int, index: int, members: int) -> int | None:
        if not self._ok or len(self._top) != count:
            return None
        definition = self._top[position]
        if definition.type == "decorated_definition":
            definition = definition.child_by_field_name("definition") or definition
        body = definition.child_by_field_name("body") if definition.type == "class_definition" else None
        grouped = _grouped(body.children) if body is not None else []
        if len(grouped) != members:
            return None
        return _syntactic_row(grouped[index])


def _grouped(children: Sequence[tree_sitter.Node]) -> list[tree_sitter.Node]:
    """The first statement of each line that starts statements, comments left out."""
    grouped: list[tree_sitter.Node] = []
    for child in children:
        if child.type == "comment":
            continue
        if grouped and child.start_point[0] <= grouped[-1].end_point[0]:
            continue  # shares a line with the statement before it
        grouped.append(child)
    return grouped


def _syntactic_row(statement: tree_sitter.Node) -> int:
    """A definition starts at its ``def``/``class`` line, after its decorators, as LibCST counts it."""
    if statement.type == "decorated_definition":
        definition = statement.child_by_field_name("definition")
        if definition is not None:
            return definition.start_point[0]
    return statement.start_point[0]


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
        text: str | None = None,
        file_lines: Sequence[int] | None = None,
        names: Names | None = None,
    ) -> None:
        """``module`` may be a region of the file: its line 1 is file line ``line_offset + 1``
        or, given ``file_lines`` (the file line of each of its lines), ``file_lines[0]``.

        A region is always a run of whole top-level statements, so columns are the
        file's columns; ``imports`` then carries the file's top-level imports. ``text``,
        the source ``module`` was parsed from, lets positions be computed per statement.
        """
        self.path = path
        self.module = module
        self.is_hot_path = is_hot_path
        self.is_test = is_test
        self.definitions = definitions
        self.line_offset = line_offset
        self.file_lines = file_lines
        self.text = text
        self.execution = execution  # where each function of the whole file runs
        self.names = names if names is not None else bundled_names()  # name lists, as configured
        self._by_type, self._parent = _index(module)
        own = table_from_nodes([*self.nodes(cst.Import), *self.nodes(cst.ImportFrom)])
        self.imports = imports.merged(own) if imports is not None else own
        self._positions: _AnchoredPositions | _AllPositions | None = None

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
            self._positions = _AnchoredPositions(self.module, self.text, self._parent) if self.text is not None \
                else _AllPositions(self.module)
        line, column, end_line, end_column = self._positions.of(node)
        offset, lines = self.line_offset, self.file_lines
        if end_column == 0 and end_line > 1:  # ends with the line before: just after it in the file
            end = file_line(end_line - 1, offset, lines) + 1
        else:
            end = file_line(end_line, offset, lines)
        return Span(file_line(line, offset, lines), column + 1, end, end_column + 1)


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
