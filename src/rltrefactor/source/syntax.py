"""tree-sitter syntax trees of whole files, and the one walk over their definitions.

Every stage that names a definition reads the names this walk gives: Python's
qualified names (``A.f``, ``A.f.<locals>.g``), one per function or class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Iterable, Iterator, Literal, Protocol, Sequence, TypeVar

from . import treesitter
from ..types import Definition, Span

if TYPE_CHECKING:
    import tree_sitter

_DEFINITION_TYPES: dict[str, Literal["function", "class"]] = {"function_definition": "function", "class_definition": "class"}
# Node types whose children can hold a definition; everything else is skipped whole.
_CONTAINERS = {
    "module", "block", "decorated_definition", "if_statement", "elif_clause", "else_clause",
    "for_statement", "while_statement", "try_statement", "except_clause", "except_group_clause",
    "finally_clause", "with_statement", "match_statement", "case_clause", "ERROR",
}
# Nodes that are, or may hold, a definition: walks that look for definitions enter nothing else.
DEFINITION_HOLDERS = frozenset(_CONTAINERS | _DEFINITION_TYPES.keys())


@dataclass(frozen=True, eq=False)
class DefinitionSite:
    """One function or class as the definition walk found it."""

    definition: Definition  # qualified name and lines, decorators included
    name: str  # as written after ``def``/``class``
    owner: str | None  # a method's class (qualified); None for every other definition
    parent: DefinitionSite | None  # the innermost function this one is defined in, through classes
    decorators: str  # the decorators' text, joined by spaces
    node: tree_sitter.Node = field(repr=False)  # the function_definition or class_definition


class _Lines(Protocol):
    @property
    def start_line(self) -> int: ...

    @property
    def end_line(self) -> int: ...


L = TypeVar("L", bound=_Lines)


def innermost(spans: Sequence[L], line: int) -> L | None:
    """The innermost of ``spans`` (sorted by start line, outer before inner, nested
    properly) that holds ``line``; None when none does."""
    best: L | None = None
    for span in spans:
        if span.start_line > line:
            break  # sorted by start line
        if line <= span.end_line:
            best = span  # later starts are nested deeper
    return best


@dataclass(frozen=True)
class DefinitionMap:
    """Every function and class of one file, and the innermost one around each line."""

    sites: tuple[DefinitionSite, ...]  # sorted by start line, outer before inner

    @cached_property
    def definitions(self) -> tuple[Definition, ...]:
        return tuple(site.definition for site in self.sites)

    @cached_property
    def functions(self) -> tuple[DefinitionSite, ...]:
        return tuple(site for site in self.sites if site.definition.kind == "function")

    def enclosing(self, line: int) -> Definition:
        found = innermost(self.definitions, line)
        return found or Definition("<module>", "module", 1, max(line, 1))


# Trees are never edited, so one tree stands for its text. A review reads the files it
# reviews through ``filemodel.FileModel``, which holds their trees; this cache serves the
# stages that read a file once more after its review (reports, the perf hook).
# Two entries: a tree of a 400 KB file holds about 8 MiB, and a scan's workers keep theirs.
@lru_cache(maxsize=2)
def parse_tree(text: str) -> tree_sitter.Tree:
    """tree-sitter syntax tree of ``text``; error-tolerant, rows are ``\n``-separated lines."""
    return parse_fresh(text)


def parse_fresh(text: str) -> tree_sitter.Tree:
    """``parse_tree`` without keeping the tree, for texts parsed once (a region of a file)."""
    return treesitter.parse(text)


def definitions(text: str, tree: tree_sitter.Tree | None = None) -> DefinitionMap:
    """Functions and classes of ``text`` (whose tree ``tree`` is, when given)."""
    return walk_definitions(tree if tree is not None else parse_tree(text))


def walk_definitions(tree: tree_sitter.Tree, nodes: Iterable[tree_sitter.Node] | None = None) -> DefinitionMap:
    """The one naming of a file's definitions: each function and class with its
    Python-style qualified name, its class (for methods), the function it is nested in
    and its decorators. A decorated definition starts at its first decorator.

    ``nodes``: the function_definition and class_definition nodes of ``tree``, where the
    caller's own query already found them (the call index); otherwise found by walking
    the statements that can hold a definition."""
    found = sorted(nodes if nodes is not None else _definition_nodes(tree), key=lambda n: (n.start_byte, -n.end_byte))
    sites: list[DefinitionSite] = []
    around: list[DefinitionSite] = []  # the definitions holding the current one, outermost first
    for node in found:
        while around and around[-1].node.end_byte <= node.start_byte:
            around.pop()
        outer = around[-1] if around else None
        kind = _DEFINITION_TYPES[node.type]
        name = _text(node.child_by_field_name("name")) or "?"
        if outer is None:
            qualname, owner, parent = name, None, None
        elif outer.definition.kind == "function":
            qualname, owner, parent = f"{outer.definition.qualname}.<locals>.{name}", None, outer
        else:  # in a class body: a member, nested in the function around the class
            qualname, owner, parent = f"{outer.definition.qualname}.{name}", outer.definition.qualname, outer.parent
        decorated = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else None
        site = DefinitionSite(
            Definition(qualname, kind, (decorated or node).start_point[0] + 1, node.end_point[0] + 1), name,
            owner if kind == "function" else None, parent, _decorators(decorated), node,
        )
        sites.append(site)
        around.append(site)
    sites.sort(key=lambda s: (s.definition.start_line, -s.definition.end_line))
    return DefinitionMap(tuple(sites))


def _definition_nodes(tree: tree_sitter.Tree) -> Iterator[tree_sitter.Node]:
    """Every function_definition and class_definition, visiting only statements that can
    hold one (cheaper than a query, which visits every node)."""
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in _DEFINITION_TYPES:
            yield node
            body = node.child_by_field_name("body")
            children = body.children if body is not None else []
        elif node.type in _CONTAINERS:
            children = node.children
        else:
            continue
        stack.extend(child for child in children if child.type in DEFINITION_HOLDERS)


def _decorators(decorated: tree_sitter.Node | None) -> str:
    if decorated is None:
        return ""
    return " ".join(_text(child) for child in decorated.children if child.type == "decorator")


def parameter_names(parameters: tree_sitter.Node | None) -> tuple[str, ...]:
    """The names of a ``parameters`` node's parameters in order; ``*`` stands for ``*args``
    and for the bare ``*`` that starts keyword-only parameters."""
    names: list[str] = []
    for parameter in parameters.named_children if parameters is not None else ():
        if parameter.type in ("list_splat_pattern", "keyword_separator"):
            names.append("*")
        elif parameter.type == "identifier":
            names.append(_text(parameter))
        elif parameter.type in ("default_parameter", "typed_parameter", "typed_default_parameter"):
            name = parameter.child_by_field_name("name") or next((c for c in parameter.named_children if c.type == "identifier"), None)
            if name is not None:
                names.append(_text(name))
            elif any(c.type == "list_splat_pattern" for c in parameter.named_children):
                names.append("*")  # ``*args: int``
    return tuple(names)


def parameter_annotations(parameters: tree_sitter.Node | None) -> tuple[str, ...]:
    """The annotations of a ``parameters`` node's typed parameters, as written, in order."""
    found: list[str] = []
    for parameter in parameters.named_children if parameters is not None else ():
        if parameter.type in ("typed_parameter", "typed_default_parameter"):
            annotation = parameter.child_by_field_name("type")
            if annotation is not None:
                found.append(_text(annotation))
    return tuple(found)


def _text(node: tree_sitter.Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def first_syntax_error(tree: tree_sitter.Tree) -> int | None:
    """1-based line of the first ERROR or MISSING node, or None for a clean tree."""
    if not tree.root_node.has_error:
        return None
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return node.start_point[0] + 1
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return tree.root_node.start_point[0] + 1


def byte_column(lines: Sequence[str], span: Span) -> int:
    """``span``'s start column as tree-sitter counts it: 0-based, in UTF-8 bytes (a lone
    surrogate, left by undecodable bytes, counts as it was read)."""
    row = lines[span.line - 1] if 0 < span.line <= len(lines) else ""
    return len(row[: span.column - 1].encode("utf-8", "surrogatepass"))
