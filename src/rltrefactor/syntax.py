"""tree-sitter syntax trees of whole files, and the one walk over their definitions.

Every stage that names a definition reads the names this walk gives: Python's
qualified names (``A.f``, ``A.f.<locals>.g``), one per function or class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Literal, Protocol, Sequence, TypeVar

from .types import Definition

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


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    import tree_sitter
    import tree_sitter_python

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))


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
    return _parser().parse(text.encode("utf-8", "surrogatepass"))


def definitions(text: str, tree: tree_sitter.Tree | None = None) -> DefinitionMap:
    """Functions and classes of ``text`` (whose tree ``tree`` is, when given)."""
    return walk_definitions(tree if tree is not None else parse_tree(text))


def walk_definitions(tree: tree_sitter.Tree) -> DefinitionMap:
    """The one walk over a file's definitions: each function and class with its
    Python-style qualified name, its class (for methods), the function it is nested in
    and its decorators. A decorated definition starts at its first decorator."""
    found: list[DefinitionSite] = []
    # (node, qualname prefix, class whose body holds it, innermost function, decorated start)
    stack: list[tuple[tree_sitter.Node, str, str | None, DefinitionSite | None, int | None]] = [
        (tree.root_node, "", None, None, None)
    ]
    while stack:
        node, prefix, owner, parent, decorated_start = stack.pop()
        kind = _DEFINITION_TYPES.get(node.type)
        if kind is None:
            if node.type not in _CONTAINERS:
                continue  # definitions only nest inside blocks and compound statements
            decorated = node.start_point[0] + 1 if node.type == "decorated_definition" else None
            stack.extend((child, prefix, owner, parent, decorated) for child in reversed(node.children)
                         if child.type in DEFINITION_HOLDERS)
            continue
        name = _text(node.child_by_field_name("name")) or "?"
        qualname = prefix + name
        start = decorated_start if decorated_start is not None else node.start_point[0] + 1
        site = DefinitionSite(
            Definition(qualname, kind, start, node.end_point[0] + 1), name,
            owner if kind == "function" else None, parent, _decorators(node) if decorated_start is not None else "", node,
        )
        found.append(site)
        # Inside a function: its locals, owned by no class; inside a class: its members.
        inner_prefix, inner_owner, inner_parent = (
            (qualname + ".<locals>.", None, site) if kind == "function" else (qualname + ".", qualname, parent)
        )
        body = node.child_by_field_name("body")
        if body is not None:
            stack.extend((child, inner_prefix, inner_owner, inner_parent, None)
                         for child in reversed(body.children) if child.type in DEFINITION_HOLDERS)
    found.sort(key=lambda s: (s.definition.start_line, -s.definition.end_line))
    return DefinitionMap(tuple(found))


def _decorators(node: tree_sitter.Node) -> str:
    decorated = node.parent
    if decorated is None or decorated.type != "decorated_definition":
        return ""
    return " ".join(_text(child) for child in decorated.children if child.type == "decorator")


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
