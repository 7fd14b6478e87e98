"""Regions to parse: the selected top-level statements, what no rule reads emptied,
merged where they touch."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, get_args

from ..prefilter import Prefilter
from .companion_lines import assignment_lines, companion_lines, in_same_function
from .lines import LineIndex, LineSet, file_line
from .reach import MatcherReach, Reads, search_scope
from .statements import function_ranges, line_range, setup_method_lines, statement_nodes, statements_for
from .tokens import import_lines, token_lines
from .unread import ReadLines, unread_lines
from .windows import ChangeWindows, touched_windows

if TYPE_CHECKING:
    from tree_sitter import Node, Tree


@dataclass(frozen=True)
class Region:
    start_line: int  # 1-based, first line of the region
    end_line: int  # 1-based, inclusive
    text: str
    rule_ids: frozenset[str]  # rules with a prefilter token (or no prefilter) in the region
    blanked: int = 0  # emptied lines (left out of ``text``, or holding the ``pass`` that keeps a block valid)
    # The file line of each line of ``text`` where emptied lines were left out; None
    # when ``text`` holds every line from ``start_line`` to ``end_line``.
    file_lines: tuple[int, ...] | None = None

    @property
    def parsed_lines(self) -> int:
        return self.end_line - self.start_line + 1 - self.blanked

    def file_line(self, line: int) -> int:
        """The file line of ``line`` (1-based) of ``text``."""
        return file_line(line, self.start_line - 1, self.file_lines)


def plan_regions(
    text: str,
    tree: Tree,
    rules: Mapping[str, tuple[Prefilter, MatcherReach]],
    *,
    lines: frozenset[int] | None,
    keep_method: Callable[[str], bool] = lambda name: False,
    is_cold_line: Callable[[int], bool] = lambda line: False,
    code: str | None = None,
    windows: ChangeWindows | None = None,
) -> list[Region]:
    """Regions to parse, each with the rules that may hit inside it.

    ``rules``: each rule's tokens and reach, by id. A rule with no tokens may hit
    anywhere. ``lines`` (changed lines) drops every statement that no change touches:
    findings there are outside the change anyway. Within a selected statement, what no
    rule reads is left empty (lines kept, see ``MatcherReach.reads``): methods holding
    no token unless a selecting rule reads the whole class, and, in functions where
    only statement-local rules have tokens, the statements holding none.
    ``keep_method(name)`` names the methods that describe the class (``__init__``): they
    keep at least their header. ``windows``: what ``change_windows`` gave for ``lines``,
    when the caller has it.
    """
    index = LineIndex(text)
    # Tokens are searched in code only: ``code`` (see ``code_text``) has the same lines
    # and offsets as ``text``, so the index serves both.
    code_index = LineIndex(code, index.starts) if code is not None else index
    nodes = statement_nodes(tree)
    statements = [line_range(node) for node in nodes]
    starts = [start for start, _ in statements]
    touched = set(statements_for(set(lines), statements, starts)) if lines is not None else None
    if touched is not None and not touched:
        return []
    # Tokens outside the touched statements or members select nothing (``search_scope``): a
    # change to a large file searches only the stretch it touches.
    if windows is None and lines is not None and touched:
        windows = touched_windows(lines, tree, nodes, statements, touched, index)
    facts = _FileFacts(tree, nodes, code_index, windows, keep_method)
    wanted: dict[int, set[str]] = {}
    hits: dict[str, set[int]] = {reads: set() for reads in get_args(Reads)}  # token lines by what their rules read
    open_statements: set[int] = set()  # selected by a rule that may hit anywhere in them
    for rule_id, (tokens, reach) in rules.items():
        hit_lines = _hit_lines(tokens, reach, facts, is_cold_line)
        for position in statements_for(hit_lines, statements, starts):
            wanted.setdefault(position, set()).add(rule_id)
            if hit_lines is None or reach.whole_class:
                open_statements.add(position)
        hits[reach.reads].update(hit_lines or ())
    if touched is not None:
        wanted = {k: v for k, v in wanted.items() if k in touched}
    blank: dict[int, str] = {}
    if not tree.root_node.has_error:
        local = hits["statement"] | hits["header"]
        imports = LineSet(import_lines(code_index) if local else ())
        reads = ReadLines(LineSet(hits["function"]), LineSet(hits["statement"]), LineSet(local), imports)
        for position in wanted.keys() - open_statements:
            blank.update(unread_lines(nodes[position], reads, index, keep_method))
    return _merge(sorted(wanted.items()), statements, index, blank)


class _FileFacts:
    """What planning reads of one file, each worked out once and only when a rule asks."""

    def __init__(
        self, tree: Tree, nodes: list[Node], code: LineIndex, windows: ChangeWindows | None, keep_method: Callable[[str], bool]
    ) -> None:
        self.tree = tree
        self.nodes = nodes
        self.code = code
        self.windows = windows
        self.keep_method = keep_method
        self._setup_lines: set[int] | None = None
        self._assigned: dict[str, list[int]] | None = None  # name -> lines assigning it
        self._functions: list[tuple[int, int]] = []  # (first, last) line of every function, by first line

    def setup_lines(self) -> set[int]:
        if self._setup_lines is None:
            self._setup_lines = setup_method_lines(self.nodes, self.keep_method)
        return self._setup_lines

    def assignments(self) -> tuple[dict[str, list[int]], list[tuple[int, int]]]:
        """Lines assigning each name, and the functions around them."""
        if self._assigned is None:
            # A kept assignment shares a function with a token line, which lies
            # in the touched statements when the review is limited to them.
            reached = self.windows.statements if self.windows is not None else (0, len(self.code.text))
            self._assigned = assignment_lines(self.code, reached)
            self._functions = sorted(function_ranges(
                self.tree.root_node, self.code.line_of(reached[0]), self.code.line_of(reached[1])
            ))
        return self._assigned, self._functions


def _hit_lines(tokens: Prefilter, reach: MatcherReach, facts: _FileFacts, is_cold_line: Callable[[int], bool]) -> set[int] | None:
    """The lines where a rule's tokens select code, and the lines of its companions;
    None when the rule has no tokens (it may hit anywhere)."""
    if not tokens:
        return None
    search = facts.windows.for_scope(search_scope(reach)) if facts.windows is not None else None
    hit_lines = token_lines(facts.code.text, tokens, facts.code, search, facts.tree)
    if hit_lines and reach.never_in_setup:
        hit_lines -= facts.setup_lines()
    if hit_lines and reach.never_in_cold:
        hit_lines = {line for line in hit_lines if not is_cold_line(line)}
    root = facts.tree.root_node
    if hit_lines and reach.companions is not None and reach.companion_lines == "assignments":
        assigned, functions = facts.assignments()
        attributes: set[int] = set()
        found = companion_lines(facts.code, root, hit_lines, reach.companions, assigned, attributes)
        # A name is assigned in its function; ``self.x`` anywhere in its class, and the names
        # such an assignment reads in the method that makes it (``self.w = w_tensor`` in ``__init__``).
        hit_lines |= in_same_function(found - attributes, hit_lines | attributes, functions) | attributes
    elif hit_lines and reach.companions is not None:
        hit_lines |= companion_lines(facts.code, root, hit_lines, reach.companions)
    return hit_lines


def _count_within(lines: list[int], first: int, last: int) -> int:
    """How many of the sorted ``lines`` lie in ``first..last``."""
    return bisect.bisect_right(lines, last) - bisect.bisect_left(lines, first)


def _merge(
    items: list[tuple[int, set[str]]], statements: list[tuple[int, int]], index: LineIndex, blank: Mapping[int, str]
) -> list[Region]:
    regions: list[Region] = []
    first: int | None = None
    last = 0  # read only once ``first`` is set
    rules: set[str] = set()
    blank_lines = sorted(blank)

    def region(first: int, last: int, rules: set[str]) -> Region:
        blanked = _count_within(blank_lines, first, last)
        if not blanked:
            return Region(first, last, index.slice(first, last), frozenset(rules))
        text, numbers = index.kept(first, last, blank)
        return Region(first, last, text, frozenset(rules), blanked, numbers)

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
