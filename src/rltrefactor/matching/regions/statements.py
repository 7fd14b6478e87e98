"""The shape of a tree-sitter tree's statements: line ranges, headers, members.

Lines are 1-based; a range ``(first, last)`` is inclusive.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from ...source.syntax import DEFINITION_HOLDERS
from .lines import LineIndex

if TYPE_CHECKING:
    from tree_sitter import Node, Tree


def statement_nodes(tree: Tree) -> list[Node]:
    """The top-level statements, comments left out."""
    return [child for child in tree.root_node.children if child.type != "comment"]


def line_range(node: Node) -> tuple[int, int]:
    end_row, end_column = node.end_point
    last = end_row if end_column > 0 else end_row - 1
    return node.start_point[0] + 1, max(last, node.start_point[0]) + 1


def statements_for(lines: set[int] | None, statements: list[tuple[int, int]], starts: list[int]) -> Iterable[int]:
    """Positions of the ``statements`` (line ranges, starting at ``starts``) that hold
    one of ``lines``; every position when ``lines`` is None."""
    if lines is None:
        return range(len(statements))
    found = set()
    for line in lines:
        position = bisect.bisect_right(starts, line) - 1
        if position >= 0 and statements[position][0] <= line <= statements[position][1]:
            found.add(position)
    return found


def is_statement(node: Node) -> bool:
    kind = node.type
    return kind.endswith(("_statement", "_clause")) or kind in ("function_definition", "class_definition", "decorated_definition")


def statement_header(node: Node) -> tuple[int, int]:
    """First and last line of a statement's header: a compound statement or clause up to
    its block, a simple statement whole."""
    body = next((child for child in node.children if child.type == "block"), None)
    if node.type == "decorated_definition":
        definition = node.child_by_field_name("definition")
        body = definition.child_by_field_name("body") if definition is not None else None
    last = body.start_point[0] if body is not None and body.start_point[0] > node.start_point[0] else node.end_point[0] + 1
    if body is not None and body.start_point[0] == node.start_point[0]:
        last = node.start_point[0] + 1  # ``if x: y`` on one line
    return node.start_point[0] + 1, last


def header_lines(tree: Tree, index: LineIndex, offset: int) -> tuple[int, int]:
    """First and last line of the innermost statement holding ``offset``; of a compound
    statement or clause, its header (up to its block)."""
    line = index.line_of(offset)
    column = len(index.text[index.starts[line - 1] : offset].encode("utf-8", "surrogatepass"))
    node: Node | None = tree.root_node.descendant_for_point_range((line - 1, column), (line - 1, column))
    while node is not None and not is_statement(node):
        node = node.parent
    if node is None:
        return line, line
    first, last = statement_header(node)
    return first, max(last, line)


def node_at_line_start(root: Node, index: LineIndex, line: int) -> Node | None:
    """The innermost node at the first code of ``line`` (its start, if blank)."""
    row = index.line_text(line)
    column = len(row) - len(row.lstrip(" \t"))  # leading blanks: bytes and characters agree
    return root.descendant_for_point_range((line - 1, column), (line - 1, column))


def statement_first_line(root: Node, index: LineIndex, line: int) -> int:
    """First line of the innermost statement holding the first code of ``line``."""
    node: Node | None = node_at_line_start(root, index, line)
    while node is not None and node.parent is not None and node.parent.type not in ("block", "module"):
        node = node.parent
    return node.start_point[0] + 1 if node is not None else line


def definition(statement: Node) -> Node | None:
    """The function or class a (decorated) definition statement defines."""
    return statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement


def name(node: Node) -> str:
    """The name a function or class definition binds."""
    found = node.child_by_field_name("name")
    return found.text.decode("utf-8", "replace") if found is not None and found.text is not None else ""


def methods(statement: Node) -> list[tuple[int, int, str]]:
    """(first, last, name) of the methods directly in a top-level class's body."""
    node = definition(statement)
    if node is None or node.type != "class_definition":
        return []
    body = node.child_by_field_name("body")
    found = []
    for child in body.children if body is not None else ():
        function = definition(child)
        if function is not None and function.type == "function_definition":
            found.append((*line_range(child), name(function)))
    return found


def members(statement: Node) -> list[tuple[int, int]]:
    """Line ranges of the statements directly in a top-level class's body, in order;
    none for other statements."""
    node = definition(statement)
    if node is None or node.type != "class_definition":
        return []
    body = node.child_by_field_name("body")
    if body is None or body.start_point[0] == node.start_point[0]:
        return []  # ``class A: x = 1`` on one line
    return [line_range(child) for child in body.children if child.type != "comment"]


def setup_method_lines(nodes: list[Node], keep_method: Callable[[str], bool]) -> set[int]:
    """Every line of the methods of the classes among ``nodes`` that ``keep_method`` names."""
    return {
        line
        for node in nodes
        for first, last, method in methods(node)
        if keep_method(method)
        for line in range(first, last + 1)
    }


def function_ranges(root: Node, first: int, last: int) -> Iterator[tuple[int, int]]:
    """(first, last) line of every function that overlaps lines ``first..last``."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.start_point[0] + 1 > last or node.end_point[0] + 1 < first:
            continue
        if node.type == "function_definition":
            yield node.start_point[0] + 1, node.end_point[0] + 1
        stack.extend(child for child in node.children if child.type in DEFINITION_HOLDERS)
