"""The lines of a selected top-level statement that no rule reads, emptied.

An emptied line is mapped to ``""`` (left out of the region's text) or, where a block
would be left without a statement, to the ``pass`` that keeps it valid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .lines import LineIndex, LineSet
from .statements import definition, line_range, name

if TYPE_CHECKING:
    from tree_sitter import Node

# Statements whose blocks may be emptied piecemeal, and the clauses that hold their blocks.
_NESTING = {"if_statement", "for_statement", "while_statement", "try_statement", "with_statement",
            "function_definition"}
_CLAUSES = {"elif_clause", "else_clause", "except_clause", "except_group_clause", "finally_clause"}


@dataclass(frozen=True)
class ReadLines:
    """Token lines by how much their rules read around them."""

    function: LineSet  # the whole enclosing function
    statement: LineSet  # the innermost statement holding the token, whole
    local: LineSet  # that statement, or only its header: everything but ``function``
    imports: LineSet  # import statements, kept in whatever is kept: rules resolve names through them


def unread_lines(statement: Node, reads: ReadLines, index: LineIndex, keep_method: Callable[[str], bool]) -> dict[int, str]:
    """Lines of a selected top-level statement that no rule reads, with what replaces them."""
    node = definition(statement)
    if node is not None and node.type == "function_definition":
        return _unread_in_function(node, reads, index)
    if node is not None and node.type == "class_definition":
        return _unread_in_class(node, reads, index, keep_method)
    return {}


def _unread_in_class(cls: Node, reads: ReadLines, index: LineIndex, keep_method: Callable[[str], bool]) -> dict[int, str]:
    """Methods holding no token, and class-level statements holding none, are emptied.

    Setup methods (``keep_method``) and class-level statements describe the class:
    when a rule that reads whole functions has a token in the class, they are kept
    whole. Otherwise a setup method keeps at least its header (rules ask whether a
    class defines ``__setstate__``): statement-local rules name what they read there
    through their companions."""
    body = cls.child_by_field_name("body")
    if body is None:
        return {}
    children = [child for child in body.children if child.type != "comment"]
    keep_whole = reads.function.any_within(*line_range(cls))
    blank: dict[int, str] = {} if keep_whole else _comment_lines(body, index)
    emptied = []
    for child in children:
        node = definition(child)
        first, last = line_range(child)
        held = reads.local.any_within(first, last) or reads.function.any_within(first, last)
        if node is not None and node.type == "function_definition":
            setup = keep_method(name(node))
            if setup and keep_whole:
                continue
            if held or setup:
                blank.update(_unread_in_function(node, reads, index))
                continue
        elif held or keep_whole:
            continue
        if _owns_its_lines(child, body):
            emptied.append(child)
            blank.update((line, "") for line in range(first, last + 1))
    if emptied and len(emptied) == len(children):
        blank[emptied[0].start_point[0] + 1] = _placeholder(emptied[0], index)
    return blank


def _unread_in_function(function: Node, reads: ReadLines, index: LineIndex) -> dict[int, str]:
    decorated = function.parent if function.parent is not None and function.parent.type == "decorated_definition" else function
    if reads.function.any_within(*line_range(decorated)):
        return {}  # a rule that reads the whole function has a token here
    body = function.child_by_field_name("body")
    return _unread_in_block(body, reads, index) if body is not None else {}


def _unread_in_block(block: Node, reads: ReadLines, index: LineIndex) -> dict[int, str]:
    """Statements of ``block`` that hold no token; statements that hold tokens only in
    their blocks, or only tokens of rules that read headers, are opened in turn. The
    block keeps at least a ``pass``."""
    children = [child for child in block.children if child.type != "comment"]
    blank = _comment_lines(block, index)
    emptied = []
    for child in children:
        first, last = line_range(child)
        if not reads.local.any_within(first, last) and not reads.imports.any_within(first, last):
            if _owns_its_lines(child, block):
                emptied.append(child)
                blank.update((line, "") for line in range(first, last + 1))
            continue
        for line in _comment_lines_above(child, block, index):
            blank.pop(line, None)  # a comment right above a read statement may explain it
        for inner in _blocks_to_open(child, reads.statement):
            blank.update(_unread_in_block(inner, reads, index))
    if emptied and len(emptied) == len(children):
        blank[emptied[0].start_point[0] + 1] = _placeholder(emptied[0], index)
    return blank


def _comment_lines(block: Node, index: LineIndex) -> dict[int, str]:
    """The lines of ``block`` that hold only a comment, emptied: no matcher reads comments.
    Comments above a block's first statement are the block's too (tree-sitter puts them
    before it)."""
    comments = [child for child in block.children if child.type == "comment"]
    before = block.prev_sibling
    while before is not None and before.type == "comment":
        comments.append(before)
        before = before.prev_sibling
    return {
        line: "" for comment in comments
        if index.line_text(line := comment.start_point[0] + 1).lstrip(" \t").startswith("#")
    }


def _comment_lines_above(statement: Node, block: Node, index: LineIndex) -> list[int]:
    """Lines holding only a comment right above ``statement``, with no blank line
    between (tree-sitter puts those above a block's first statement before the block).
    A comment ending the line of the code before it belongs to that code."""
    lines: list[int] = []
    below = statement.start_point[0]
    before = statement.prev_sibling if statement.prev_sibling is not None else block.prev_sibling
    while before is not None and before.type == "comment" and before.end_point[0] == below - 1:
        if not index.line_text(before.start_point[0] + 1).lstrip(" \t").startswith("#"):
            break
        lines.append(before.start_point[0] + 1)
        below = before.start_point[0]
        before = before.prev_sibling
    return lines


def _placeholder(statement: Node, index: LineIndex) -> str:
    """``pass`` where ``statement`` starts: a block must keep one statement."""
    line = statement.start_point[0] + 1
    return index.line_text(line)[: statement.start_point[1]] + "pass"


def _owns_its_lines(statement: Node, block: Node) -> bool:
    """No other code shares a line with ``statement`` (``a = 1; b = 2``, ``if x: y``)."""
    before = statement.prev_sibling or block.prev_sibling
    after = statement.next_sibling
    while after is not None and after.type == "comment":  # a trailing comment goes with it
        after = after.next_sibling
    return (before is None or before.end_point[0] < statement.start_point[0]) and (
        after is None or after.start_point[0] > statement.end_point[0]
    )


def _blocks_to_open(statement: Node, whole: LineSet) -> list[Node]:
    """The blocks of a token-holding statement worth emptying piecemeal: none when a
    token of a rule that reads whole statements sits in its header, except for a
    nested function, whose header is always kept."""
    node = definition(statement)
    if node is None or node.type not in _NESTING:
        return []
    blocks = [child for child in node.children if child.type == "block"]
    blocks += [inner for clause in node.children if clause.type in _CLAUSES
               for inner in clause.children if inner.type == "block"]
    if node.type == "function_definition":
        return blocks
    inner_ranges = [line_range(child) for block in blocks for child in block.children if child.type != "comment"]
    first, last = line_range(statement)
    for line in whole.within(first, last):
        if not any(a <= line <= b for a, b in inner_ranges):
            return []
    return blocks
