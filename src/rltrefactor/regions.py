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
from typing import Iterable, Mapping

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


class LineIndex:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def slice(self, first: int, last: int) -> str:
        end = self.starts[last] if last < len(self.starts) else len(self.text)
        text = self.text[self.starts[first - 1] : end]
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


def top_level_statements(tree) -> list[tuple[int, int]]:
    """1-based inclusive line ranges of the module's statements (comments excluded)."""
    ranges = []
    for child in tree.root_node.children:
        if child.type == "comment":
            continue
        end_row, end_column = child.end_point
        last = end_row if end_column > 0 else end_row - 1
        ranges.append((child.start_point[0] + 1, max(last, child.start_point[0]) + 1))
    return ranges


def plan_regions(
    text: str,
    tree,
    rule_tokens: Mapping[str, tuple[str, ...]],
    *,
    lines: frozenset[int] | None,
) -> list[Region]:
    """Regions to parse, each with the rules that may hit inside it.

    A rule with no tokens may hit anywhere. ``lines`` (changed lines) drops every
    statement that no change touches: findings there are outside the change anyway.
    """
    index = LineIndex(text)
    statements = top_level_statements(tree)
    starts = [start for start, _ in statements]
    wanted: dict[int, set[str]] = {}
    for rule_id, tokens in rule_tokens.items():
        hit_lines = token_lines(text, tokens, index) if tokens else None
        for position in _statements_for(hit_lines, statements, starts):
            wanted.setdefault(position, set()).add(rule_id)
    if lines is not None:
        touched = set(_statements_for(set(lines), statements, starts))
        wanted = {k: v for k, v in wanted.items() if k in touched}
    return _merge(sorted(wanted.items()), statements, index)


def _statements_for(lines: set[int] | None, statements, starts) -> Iterable[int]:
    if lines is None:
        return range(len(statements))
    found = set()
    for line in lines:
        position = bisect.bisect_right(starts, line) - 1
        if position >= 0 and statements[position][0] <= line <= statements[position][1]:
            found.add(position)
    return found


def _merge(items, statements, index: LineIndex) -> list[Region]:
    regions: list[Region] = []
    first = last = None
    rules: set[str] = set()
    for position, rule_ids in items:
        start, end = statements[position]
        if first is not None and start <= last + 1:  # adjacent or sharing a line
            last = max(last, end)
            rules |= rule_ids
            continue
        if first is not None:
            regions.append(Region(first, last, index.slice(first, last), frozenset(rules)))
        first, last, rules = start, end, set(rule_ids)
    if first is not None:
        regions.append(Region(first, last, index.slice(first, last), frozenset(rules)))
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
