"""The matcher protocol and the per-file context every matcher reads.

A file is parsed once and walked once: the walk indexes nodes by type and records
each node's parent, so a matcher asks for the nodes it cares about instead of
walking the tree again. Positions are resolved only for nodes that hit.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Protocol, Sequence, TypeVar

import libcst as cst

from ...change.contents import ModuleTexts
from ...context.execution import ExecutionMap, FunctionExecution
from ...context.filemodel import FileModel
from ...source.kernels import AccumulatingKernel
from ...library.names import Names
from ..regions.lines import file_line
from ..regions.reach import MatcherReach
from ..prefilter import Prefilter
from ...source.syntax import DefinitionMap
from ...types import Span
from .imports import ImportTable, resolve, table_from_nodes
from .positions import AllPositions, AnchoredPositions

__all__ = ["FileContext", "Match", "Matcher", "child_nodes"]

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


_NESTED_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


def own_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node``'s subtree in source order, without what nested functions, lambdas and
    classes hold (they run at another time, or never)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed([c for c in child_nodes(current) if not isinstance(c, _NESTED_SCOPES)]))


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


@dataclass(frozen=True)
class Match:
    """A node a matcher flags, with the metavariable bindings it made."""

    node: cst.CSTNode
    bindings: Mapping[str, str] = field(default_factory=dict)
    # For a rule about device values: "device" when the function shows the value placed on
    # a device, "unknown" when it does not (nor on the host); "" when the rule does not ask.
    residency: str = ""
    residency_of: str = ""  # the value's source text, when ``residency`` is set
    residency_why: str = ""  # what placed it there, or which fact is missing ("unknown")


class FileContext:
    """One parsed file as matchers see it. Built by the engine, read-only for matchers.

    File-wide facts (definitions, where code runs, what the configuration says about the
    file) come from its ``FileModel``, built once per file; a context adds the LibCST tree
    of the region being matched."""

    def __init__(
        self,
        model: FileModel,
        module: cst.Module,
        *,
        line_offset: int = 0,
        imports: ImportTable | None = None,
        text: str | None = None,
        file_lines: Sequence[int] | None = None,
        sources: ModuleTexts | None = None,
    ) -> None:
        """``module`` may be a region of the file: its line 1 is file line ``line_offset + 1``
        or, given ``file_lines`` (the file line of each of its lines), ``file_lines[0]``.

        A region is always a run of whole top-level statements, so columns are the
        file's columns; ``imports`` then carries the file's top-level imports. ``text``,
        the source ``module`` was parsed from, lets positions be computed per statement.
        ``sources`` reads the whole file (at ``path``) and the repository modules it
        imports, for matchers that look up declarations outside the region.
        """
        self.model = model
        self.module = module
        self.line_offset = line_offset
        self.file_lines = file_lines
        self.text = text
        self.sources = sources
        self._by_type, self._parent = _index(module)
        own = table_from_nodes([*self.nodes(cst.Import), *self.nodes(cst.ImportFrom)])
        self.imports = imports.merged(own) if imports is not None else own
        self._positions: AnchoredPositions | AllPositions | None = None

    @property
    def path(self) -> str:
        return self.model.path

    @property
    def is_hot_path(self) -> bool:
        return self.model.is_hot_path

    @property
    def is_test(self) -> bool:
        return self.model.is_test

    @property
    def definitions(self) -> DefinitionMap:
        return self.model.definitions

    @property
    def execution(self) -> ExecutionMap:
        """Where each function of the whole file runs."""
        return self.model.execution

    @property
    def names(self) -> Names:
        """The name lists, as configured."""
        return self.model.names

    @property
    def accumulating_kernels(self) -> Mapping[str, AccumulatingKernel]:
        """Kernels of the whole file that accumulate into an argument (``kernel_outputs``)."""
        return self.model.accumulating_kernels

    def function_at(self, node: cst.CSTNode) -> FunctionExecution | None:
        """Where the innermost function holding ``node`` runs (found by ``node``'s line in
        the file's one definition walk); None outside functions."""
        return self.model.function_at(self.span(node).line)

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

    def value_type(self, node: cst.CSTNode) -> str | None:
        """What the type engine says a name, attribute or call is (a call: what it returns);
        ``None``: unknown. Asked at the name that ends the expression (``x``, ``self.x``, ``f``
        of ``f(...)``, ``m`` of ``a.m(...)``)."""
        if self.model.type_engine is None:
            return None
        anchor = node.func if isinstance(node, cst.Call) else node
        if isinstance(anchor, cst.Attribute):
            anchor = anchor.attr
        if not isinstance(anchor, cst.Name):
            return None
        span = self.span(anchor)
        return self.model.value_type(span.line, span.column - 1)

    def span(self, node: cst.CSTNode) -> Span:
        """Location of ``node`` in the file (1-based lines and columns)."""
        if self._positions is None:
            if self.text is None:
                self._positions = AllPositions(self.module)
            else:  # a region that is the whole file reads the file's own tree
                whole = self.line_offset == 0 and self.file_lines is None and self.text == self.model.text
                self._positions = AnchoredPositions(self.module, self.text, self._parent, self.model.tree if whole else None)
        line, column, end_line, end_column = self._positions.of(node)
        offset, lines = self.line_offset, self.file_lines
        if end_column == 0 and end_line > 1:  # ends with the line before: just after it in the file
            end = file_line(end_line - 1, offset, lines) + 1
        else:
            end = file_line(end_line, offset, lines)
        return Span(file_line(line, offset, lines), column + 1, end, end_column + 1)


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
