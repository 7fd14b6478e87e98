"""The stretches of a file a change touches, where a rule's tokens are searched."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from .lines import LineIndex, Stretch
from .reach import SearchScope
from .statements import is_statement, line_range, members, node_at_line_start, statement_header, statement_nodes, statements_for

if TYPE_CHECKING:
    from tree_sitter import Node, Tree


@dataclass(frozen=True)
class ChangeWindows:
    """The stretches of a file a change touches, from the widest to the narrowest."""

    statements: Stretch  # the touched top-level statements, whole
    members: Stretch  # inside those, only the touched members of classes
    # Around each changed line, the header of every statement holding it (a simple
    # statement whole): sorted, disjoint. None where a hit is kept anywhere in a function
    # that holds a changed line (not only on the line): header rules search the members.
    headers: tuple[Stretch, ...] | None = None

    def for_scope(self, scope: SearchScope) -> tuple[Stretch, ...] | None:
        """The stretches whose tokens matter to a rule of ``scope``; None: the file."""
        if scope == "file":
            return None
        if scope == "headers" and self.headers is not None:
            return self.headers
        return (self.statements if scope == "statements" else self.members,)


def change_windows(text: str, tree: Tree, lines: frozenset[int], *, headers: bool = True) -> ChangeWindows | None:
    """The stretches ``lines`` touch (see ``reach.search_scope``); None when they touch
    no statement. ``headers``: a kept hit touches a changed line, so header rules may
    search only the headers around them."""
    nodes = statement_nodes(tree)
    statements = [line_range(node) for node in nodes]
    touched = set(statements_for(set(lines), statements, [start for start, _ in statements]))
    return touched_windows(lines, tree, nodes, statements, touched, LineIndex(text), headers=headers) if touched else None


def touched_windows(
    lines: Iterable[int], tree: Tree, nodes: list[Node], statements: list[tuple[int, int]], touched: set[int],
    index: LineIndex, *, headers: bool = True,
) -> ChangeWindows:
    """``change_windows`` for a caller that has already found the top-level ``nodes``,
    their line ranges (``statements``) and the positions of those ``lines`` touch."""
    return ChangeWindows(
        _window(touched, statements, index),
        _member_window(lines, nodes, statements, index),
        _header_window(lines, tree, index) if headers else None,
    )


def _header_window(lines: Iterable[int], tree: Tree, index: LineIndex) -> tuple[Stretch, ...]:
    """Offsets of the headers of every statement holding a changed line (see
    ``ChangeWindows.headers``), merged where they touch."""
    ranges: set[tuple[int, int]] = set()
    seen: set[int] = set()  # statements whose enclosing ones are already in, by node id
    root = tree.root_node
    for line in lines:
        if not 0 < line <= len(index.starts):
            continue
        node: Node | None = node_at_line_start(root, index, line)
        while node is not None:
            if is_statement(node):
                if node.id in seen:
                    break
                seen.add(node.id)
                ranges.add(statement_header(node))
            node = node.parent
    merged: list[Stretch] = []
    for first, last in sorted(ranges):
        start, stop = index.stretch(first, last)
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return tuple(merged)


def _member_window(
    lines: Iterable[int], nodes: list[Node], statements: list[tuple[int, int]], index: LineIndex
) -> Stretch:
    """Offsets from the first touched member's first line to the last one's end.

    A member is a statement directly in a top-level class's body, or a top-level
    statement that is no class. A changed line in a class's header, its decorators or
    between its members (a comment, a blank line) touches the whole class. ``lines``
    touch at least one statement."""
    starts = [start for start, _ in statements]
    by_statement: dict[int, list[tuple[int, int]]] = {}
    first, last = len(index.starts) + 1, 0
    for line in lines:
        position = bisect.bisect_right(starts, line) - 1
        if position < 0 or not statements[position][0] <= line <= statements[position][1]:
            continue
        inner = by_statement.get(position)
        if inner is None:
            inner = by_statement[position] = members(nodes[position])
        found = bisect.bisect_right(inner, (line, len(index.starts) + 1)) - 1
        low, high = inner[found] if found >= 0 and inner[found][0] <= line <= inner[found][1] else statements[position]
        first, last = min(first, low), max(last, high)
    return index.stretch(first, last)


def _window(touched: set[int], statements: list[tuple[int, int]], index: LineIndex) -> Stretch:
    """Offsets from the first touched statement's first line to the last one's end."""
    return index.stretch(statements[min(touched)][0], max(statements[position][1] for position in touched))
