"""Which parts of a file are worth a LibCST parse.

LibCST costs ~13x a tree-sitter parse, so the engine parses only *regions*: runs of
whole top-level statements that contain a prefilter token of some rule (and, when a
diff limits the review, a changed line). A region always starts at column 0, so its
columns are the file's columns and only its lines are offset.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

_NEWLINE = re.compile("\n")
_IMPORT_TYPES = {"import_statement", "import_from_statement", "future_import_statement"}
_IMPORT_CONTAINERS = {"if_statement", "try_statement", "with_statement", "block", "else_clause",
                      "elif_clause", "except_clause", "finally_clause"}


@dataclass(frozen=True)
class Region:
    start_line: int  # 1-based, first line of the region
    end_line: int  # 1-based, inclusive
    text: str
    rule_ids: frozenset[str]  # rules with a prefilter token (or no prefilter) in the region
    blanked: int = 0  # lines of idle methods left empty

    @property
    def parsed_lines(self) -> int:
        return self.end_line - self.start_line + 1 - self.blanked


class LineIndex:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def slice(self, first: int, last: int, blank: set[int] | frozenset[int] = frozenset()) -> str:
        """Lines ``first..last``; lines in ``blank`` come out empty (line numbers kept)."""
        end = self.starts[last] if last < len(self.starts) else len(self.text)
        text = self.text[self.starts[first - 1] : end]
        if blank and any(first <= line <= last for line in blank):
            rows = text.split("\n")
            text = "\n".join("" if first + i in blank else row for i, row in enumerate(rows))
        return text if text.endswith("\n") else text + "\n"


def token_lines(text: str, tokens: Iterable["str | re.Pattern[str]"], index: LineIndex) -> set[int]:
    lines: set[int] = set()
    for token in tokens:
        if not isinstance(token, str):
            lines.update(index.line_of(match.start()) for match in token.finditer(text))
            continue
        start = text.find(token)
        while start != -1:
            line = index.line_of(start)
            lines.add(line)
            # Skip to the next line: one occurrence per line is enough.
            next_line = index.starts[line] if line < len(index.starts) else len(text)
            start = text.find(token, next_line)
    return lines


def _line_range(node) -> tuple[int, int]:
    end_row, end_column = node.end_point
    last = end_row if end_column > 0 else end_row - 1
    return node.start_point[0] + 1, max(last, node.start_point[0]) + 1


def _statement_nodes(tree) -> list:
    return [child for child in tree.root_node.children if child.type != "comment"]


def top_level_statements(tree) -> list[tuple[int, int]]:
    """1-based inclusive line ranges of the module's statements (comments excluded)."""
    return [_line_range(node) for node in _statement_nodes(tree)]


def _methods(statement) -> list[tuple[int, int, str]]:
    """(first, last, name) of the methods directly in a top-level class's body."""
    node = statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement
    if node is None or node.type != "class_definition":
        return []
    body = node.child_by_field_name("body")
    methods = []
    for child in body.children if body is not None else ():
        function = child.child_by_field_name("definition") if child.type == "decorated_definition" else child
        if function is not None and function.type == "function_definition":
            name = function.child_by_field_name("name")
            methods.append((*_line_range(child), name.text.decode("utf-8", "replace") if name else ""))
    return methods


def plan_regions(
    text: str,
    tree,
    rule_tokens: Mapping[str, tuple[str, ...]],
    *,
    lines: frozenset[int] | None,
    whole_class: frozenset[str] = frozenset(),
    keep_method: Callable[[str], bool] = lambda name: False,
    never_in_setup: frozenset[str] = frozenset(),
) -> list[Region]:
    """Regions to parse, each with the rules that may hit inside it.

    A rule with no tokens may hit anywhere. ``lines`` (changed lines) drops every
    statement that no change touches: findings there are outside the change anyway.
    Inside a class, methods holding no token are blanked out (their lines kept empty),
    unless a selecting rule reads the whole class (``whole_class``) or
    ``keep_method(name)`` says the method describes the class (``__init__``). A token
    inside such a method selects nothing for rules in ``never_in_setup``, which never
    report there.
    """
    index = LineIndex(text)
    nodes = _statement_nodes(tree)
    statements = [_line_range(node) for node in nodes]
    starts = [start for start, _ in statements]
    wanted: dict[int, set[str]] = {}
    token_hits: set[int] = set()
    open_statements: set[int] = set()  # selected by a rule that may hit anywhere in them
    setup_lines: set[int] | None = None
    for rule_id, tokens in rule_tokens.items():
        hit_lines = token_lines(text, tokens, index) if tokens else None
        if hit_lines and rule_id in never_in_setup:
            if setup_lines is None:
                setup_lines = _setup_method_lines(nodes, keep_method)
            hit_lines -= setup_lines
        token_hits |= hit_lines or set()
        for position in _statements_for(hit_lines, statements, starts):
            wanted.setdefault(position, set()).add(rule_id)
            if hit_lines is None or rule_id in whole_class:
                open_statements.add(position)
    if lines is not None:
        touched = set(_statements_for(set(lines), statements, starts))
        wanted = {k: v for k, v in wanted.items() if k in touched}
    blank: set[int] = set()
    if not tree.root_node.has_error:
        for position in wanted.keys() - open_statements:
            blank |= _idle_method_lines(nodes[position], token_hits, keep_method)
    return _merge(sorted(wanted.items()), statements, index, blank)


def _setup_method_lines(nodes, keep_method) -> set[int]:
    return {
        line
        for node in nodes
        for first, last, name in _methods(node)
        if keep_method(name)
        for line in range(first, last + 1)
    }


def _idle_method_lines(statement, token_hits: set[int], keep_method) -> set[int]:
    """Lines of the class's methods that no rule can hit (none holds a token)."""
    methods = _methods(statement)
    idle = [
        (first, last)
        for first, last, name in methods
        if not keep_method(name) and not any(first <= line <= last for line in token_hits)
    ]
    if not idle or len(idle) == len(methods) and not _has_other_statements(statement, len(methods)):
        return set()  # a class body must keep at least one statement
    return {line for first, last in idle for line in range(first, last + 1)}


def _has_other_statements(statement, method_count: int) -> bool:
    node = statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement
    body = node.child_by_field_name("body")
    return sum(1 for child in body.children if child.type != "comment") > method_count


def _statements_for(lines: set[int] | None, statements, starts) -> Iterable[int]:
    if lines is None:
        return range(len(statements))
    found = set()
    for line in lines:
        position = bisect.bisect_right(starts, line) - 1
        if position >= 0 and statements[position][0] <= line <= statements[position][1]:
            found.add(position)
    return found


def _merge(items, statements, index: LineIndex, blank: set[int]) -> list[Region]:
    regions: list[Region] = []
    first = last = None
    rules: set[str] = set()
    def region(first: int, last: int, rules: set[str]) -> Region:
        blanked = sum(1 for line in blank if first <= line <= last)
        return Region(first, last, index.slice(first, last, blank), frozenset(rules), blanked)

    for position, rule_ids in items:
        start, end = statements[position]
        if first is not None and start <= last + 1:  # adjacent or sharing a line
            last = max(last, end)
            rules |= rule_ids
            continue
        if first is not None:
            regions.append(region(first, last, rules))
        first, last, rules = start, end, set(rule_ids)
    if first is not None:
        regions.append(region(first, last, rules))
    return regions


def module_imports_text(tree, text: str) -> str:
    """Source of the module-level import statements (also inside top-level if/try)."""
    data = text.encode("utf-8", "surrogatepass")
    pieces = []
    stack = list(reversed(tree.root_node.children))
    while stack:
        node = stack.pop()
        if node.type in _IMPORT_TYPES:
            pieces.append(data[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass"))
        elif node.type in _IMPORT_CONTAINERS:
            stack.extend(reversed(node.children))
    return "\n".join(pieces) + "\n"
