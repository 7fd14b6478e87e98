"""tree-sitter syntax trees of whole files, and the line -> definition map."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

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


@dataclass(frozen=True)
class DefinitionMap:
    """Innermost enclosing function or class for each line of one file."""

    definitions: tuple[Definition, ...]  # sorted by start line, outer before inner

    def enclosing(self, line: int) -> Definition:
        best: Definition | None = None
        for definition in self.definitions:
            if definition.start_line > line:
                break  # sorted by start line
            if line <= definition.end_line:
                best = definition  # later starts are nested deeper
        return best or Definition("<module>", "module", 1, max(line, 1))


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    import tree_sitter
    import tree_sitter_python

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))


# Trees are never edited, so one tree stands for its text: the engine and the review's
# changed-function summary share the parse of a file (and, through it, its execution map).
# Two entries: a tree of a 400 KB file holds about 8 MiB, and a scan's workers keep theirs.
@lru_cache(maxsize=2)
def parse_tree(text: str) -> tree_sitter.Tree:
    """tree-sitter syntax tree of ``text``; error-tolerant, rows are ``\n``-separated lines."""
    return parse_fresh(text)


def parse_fresh(text: str) -> tree_sitter.Tree:
    """``parse_tree`` without keeping the tree, for texts parsed once (a region of a file)."""
    return _parser().parse(text.encode("utf-8", "surrogatepass"))


def definitions(text: str, tree: tree_sitter.Tree | None = None) -> DefinitionMap:
    """Functions and classes with Python-style qualified names (``A.f.<locals>.g``)."""
    tree = tree if tree is not None else parse_tree(text)
    found: list[Definition] = []
    stack: list[tuple[tree_sitter.Node, str, int | None]] = [(tree.root_node, "", None)]
    while stack:
        node, prefix, decorated_start = stack.pop()
        kind = _DEFINITION_TYPES.get(node.type)
        child_prefix = prefix
        if kind is not None:
            name_node = node.child_by_field_name("name")
            name = name_node.text.decode("utf-8", "replace") if name_node is not None and name_node.text is not None else "?"
            qualname = prefix + name
            start = decorated_start if decorated_start is not None else node.start_point[0] + 1
            found.append(Definition(qualname, kind, start, node.end_point[0] + 1))
            child_prefix = qualname + (".<locals>." if kind == "function" else ".")
        if kind is None and node.type not in _CONTAINERS:
            continue  # definitions only nest inside blocks and compound statements
        decorated = node.start_point[0] + 1 if node.type == "decorated_definition" else None
        stack.extend((child, child_prefix, decorated) for child in reversed(node.children) if child.type in DEFINITION_HOLDERS)
    found.sort(key=lambda d: (d.start_line, -d.end_line))
    return DefinitionMap(tuple(found))


def enclosing_definition(tree: tree_sitter.Tree, line: int) -> Definition:
    """``definitions(...).enclosing(line)``, found by descending from the root through
    the statements that hold ``line`` instead of walking every definition of the file."""
    row = line - 1
    found: Definition | None = None
    prefix = ""
    node: tree_sitter.Node | None = tree.root_node
    decorated_start: int | None = None
    while node is not None:
        kind = _DEFINITION_TYPES.get(node.type)
        if kind is not None:
            name_node = node.child_by_field_name("name")
            name = name_node.text.decode("utf-8", "replace") if name_node is not None and name_node.text is not None else "?"
            start = decorated_start if decorated_start is not None else node.start_point[0] + 1
            found = Definition(prefix + name, kind, start, node.end_point[0] + 1)
            prefix = found.qualname + (".<locals>." if kind == "function" else ".")
        elif node.type not in _CONTAINERS:
            break
        decorated_start = node.start_point[0] + 1 if node.type == "decorated_definition" else None
        node = _holder_of(node, row, decorated=decorated_start is not None)
    return found or Definition("<module>", "module", 1, max(line, 1))


def _holder_of(node: tree_sitter.Node, row: int, *, decorated: bool) -> tree_sitter.Node | None:
    """The child of ``node`` that is or may hold a definition around ``row``; a
    decorated definition holds its decorators' rows."""
    if decorated:
        definition = node.child_by_field_name("definition")
        return definition if definition is not None and row <= definition.end_point[0] else None
    # The last child starting at or before ``row``, by bisection: a module may hold
    # thousands of statements.
    low, high = 0, node.child_count
    while low < high:
        middle = (low + high) // 2
        child = node.child(middle)
        if child is not None and child.start_point[0] <= row:
            low = middle + 1
        else:
            high = middle
    # Children before it hold ``row`` only where they end on it: the last that does wins.
    for position in range(low - 1, -1, -1):
        child = node.child(position)
        if child is None or child.end_point[0] < row:
            break
        if child.type in DEFINITION_HOLDERS:
            return child
    return None


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
