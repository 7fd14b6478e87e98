"""Which parts of a file are worth a LibCST parse.

LibCST costs ~13x a tree-sitter parse, so the engine parses only *regions*: runs of
whole top-level statements that contain a prefilter token of some rule (and, when a
diff limits the review, a changed line). Inside a region, what no selected rule reads
is left empty: methods of a class that hold no token, and, when only statement-local
rules hit a function, the statements of its body that hold none. Emptied lines are
left out of the region's text (LibCST's time grows with lines, blank ones too) and the
region keeps the file line of each line it holds; a region always starts at column 0
and its columns are the file's columns.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Literal, Mapping, Sequence, get_args

from .prefilter import AllOf, Prefilter, Token, finditer
from .syntax import DEFINITION_HOLDERS

if TYPE_CHECKING:
    import tree_sitter
    from tree_sitter import Node, Tree

_NEWLINE = re.compile("\n")
# Statements whose blocks may be emptied piecemeal, and the clauses that hold their blocks.
_NESTING = {"if_statement", "for_statement", "while_statement", "try_statement", "with_statement",
            "function_definition"}
_CLAUSES = {"elif_clause", "else_clause", "except_clause", "except_group_clause", "finally_clause"}
# Companions grow from companion lines again, this many rounds at most.
_COMPANION_ROUNDS = 4
_IMPORT_LINE = re.compile(r"[ \t]*(?:import|from)[ \t]")
Reads = Literal["function", "statement", "header"]
CompanionLines = Literal["uses", "assignments"]
Companions = Callable[[str], Iterable[str]]
# Offsets in a file's text, from a line start to a line end (the next line's start).
Stretch = tuple[int, int]


@dataclass(frozen=True)
class RuleReach:
    """How much of a file one rule reads around the places where its tokens occur."""

    tokens: Prefilter  # () when no cheap test exists: the rule may hit anywhere
    # Reads every method of a class its tokens select.
    whole_class: bool = False
    # Never reports inside a setup method (``__init__``, ...): tokens there select nothing.
    never_in_setup: bool = False
    # Never reports in code that runs once or offline (see ``execution``): tokens on the
    # lines ``plan_regions`` is told are cold select nothing.
    never_in_cold: bool = False
    # How much of a function around a token the rule reads: the whole function; or the
    # innermost statement holding the token and the headers around it (its hits lie
    # there too; a function's header counts as a statement of its own); or only that
    # statement's header, a simple statement being its own header. Whatever the rule
    # does not read may be left empty.
    reads: Reads = "function"
    # Given the text from a line holding a token (that line and the two after it), the
    # names whose uses the rule also reads (``_x`` once ``self._x = ...`` is seen):
    # lines holding them as whole words are kept. A token's line that goes on a statement
    # begun above it is asked about together with that statement's first line.
    companions: Companions | None = None
    # Which lines of a companion name are kept: every line using it, or only the lines
    # binding it (``name = ...``, ``def name``), for rules that ask where a value came from.
    companion_lines: CompanionLines = "uses"


@dataclass(frozen=True)
class MatcherReach:
    """How much of a file around its prefilter tokens a matcher reads.

    Planning (``regions.RuleReach``, which adds the tokens) leaves the rest unparsed, so
    a reach narrower than what ``find`` really reads hides hits. The defaults are the
    widest reach: whole functions, no companions.
    """

    # "function": the whole function around a token; "statement": the innermost
    # statement holding it and the headers around it; "header": only that statement's
    # header (a simple statement is its own header).
    reads: Reads = "function"
    # Reads every method of a class, not only those holding a token and the setup methods.
    whole_class: bool = False
    # Never reports inside a setup method (``__init__``, ...), so its tokens there do not
    # make the class worth parsing.
    never_in_setup: bool = False
    # Given the text from a token's line on (that line and the two after it), the names
    # whose uses the matcher also reads. Planning also asks it about the first line of the
    # statement a token's line goes on (a wrapped call's receiver sits there).
    companions: Companions | None = None
    # Which lines of a companion are kept: every use, or only its assignments.
    companion_lines: CompanionLines = "uses"


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


def file_line(line: int, offset: int, file_lines: Sequence[int] | None) -> int:
    """The file line of ``line`` of a region's text (see ``Region.file_lines``); a line
    past its last one (where a node's end may point) follows the last file line."""
    if file_lines is None:
        return line + offset
    if line <= len(file_lines):
        return file_lines[line - 1]
    return file_lines[-1] + line - len(file_lines)


_BLANKED = re.compile(r"[^\n\r]")


def code_text(text: str, tree: Tree) -> str:
    """``text`` with comments and bare string statements (docstrings) blanked: what a
    matcher can match. Same length and line breaks, so offsets and lines carry over."""
    data = text.encode("utf-8", "surrogatepass")
    spans = []
    for name, nodes in _code_free_nodes(tree).items():
        for node in nodes:
            if name == "string" and any(child.type == "interpolation" for child in node.children):
                continue  # an f-string's fields are code
            spans.append((node.start_byte, node.end_byte))
    if not spans:
        return text
    ascii_only = text.isascii()  # byte offsets are then character offsets

    def cut(start: int, end: int | None) -> str:
        return text[start:end] if ascii_only else data[start:end].decode("utf-8", "surrogatepass")

    pieces = []
    position = 0
    for start, end in sorted(spans):
        if start < position:
            continue
        pieces.append(cut(position, start))
        hidden = cut(start, end)
        one_line = "\n" not in hidden and "\r" not in hidden  # every comment, most docstrings
        pieces.append(" " * len(hidden) if one_line else _BLANKED.sub(" ", hidden))
        position = end
    pieces.append(cut(position, None))
    return "".join(pieces)


def _code_free_nodes(tree: Tree) -> dict[str, list[Node]]:
    import tree_sitter

    return tree_sitter.QueryCursor(_code_free_query()).captures(tree.root_node)


@functools.lru_cache(maxsize=1)
def _code_free_query() -> "tree_sitter.Query":
    import tree_sitter
    import tree_sitter_python

    language = tree_sitter.Language(tree_sitter_python.language())
    return tree_sitter.Query(language, "(comment) @comment (expression_statement . (string) @string .)")


class LineIndex:
    def __init__(self, text: str, starts: list[int] | None = None) -> None:
        """``starts``: the line starts of ``text`` when known (those of a text with the
        same line breaks, such as its ``code_text``)."""
        self.text = text
        self.starts = starts if starts is not None else [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def line_text(self, line: int) -> str:
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[self.starts[line - 1] : end]

    def slice(self, first: int, last: int) -> str:
        """Lines ``first..last``, ending in a newline."""
        end = self.starts[last] if last < len(self.starts) else len(self.text)
        text = self.text[self.starts[first - 1] : end]
        return text if text.endswith("\n") else text + "\n"

    def kept(self, first: int, last: int, blank: Mapping[int, str]) -> tuple[str, tuple[int, ...]]:
        """Lines ``first..last`` with a line in ``blank`` replaced by its value there (a
        line's carriage return kept) or, where that value is empty, left out; and the
        line number of each line kept."""
        rows = self.slice(first, last).split("\n")[:-1]
        kept_rows, numbers = [], []
        for number, row in enumerate(rows, start=first):
            replacement = blank.get(number)
            if replacement == "":
                continue
            if replacement is not None:
                row = replacement + ("\r" if row.endswith("\r") else "")
            kept_rows.append(row)
            numbers.append(number)
        return "\n".join(kept_rows) + "\n", tuple(numbers)


class _Lines:
    """A sorted set of line numbers with range queries."""

    def __init__(self, lines: Iterable[int]) -> None:
        self.sorted = sorted(set(lines))

    def within(self, first: int, last: int) -> list[int]:
        low = bisect.bisect_left(self.sorted, first)
        return self.sorted[low : bisect.bisect_right(self.sorted, last, low)]

    def any_within(self, first: int, last: int) -> bool:
        low = bisect.bisect_left(self.sorted, first)
        return low < len(self.sorted) and self.sorted[low] <= last


def token_lines(
    text: str, tokens: Iterable[Token], index: LineIndex, windows: Sequence[Stretch] | None = None,
    tree: Tree | None = None,
) -> set[int]:
    """Lines holding a token; with ``windows`` (sorted, disjoint offsets, each from a
    line start), only the lines that start inside one of them. With ``tree``, a token
    whose words share a statement counts only where its innermost statement holds them
    all."""
    stretches = windows if windows is not None else ((0, len(text)),)
    lines: set[int] = set()
    for token in tokens:
        if isinstance(token, str):
            for first, stop in stretches:
                _substring_lines(text, token, index, first, stop, lines)
        elif isinstance(token, (AllOf, re.Pattern)):
            for first, stop in stretches:
                _add_match_lines(token.finditer(text, first, stop) if isinstance(token, AllOf) else finditer(token, text, first),
                                 token, index, first, stop, tree, lines)
        else:  # a guarded regex finds its own few spots in the whole text, once
            _add_match_lines(token.finditer(text), token, index, 0, len(text), tree, lines, stretches)
    return lines


def _substring_lines(text: str, token: str, index: LineIndex, first: int, stop: int, lines: set[int]) -> None:
    start = text.find(token, first)
    while start != -1 and start < stop:
        line = index.line_of(start)
        lines.add(line)
        # Skip to the next line: one occurrence per line is enough.
        next_line = index.starts[line] if line < len(index.starts) else len(text)
        start = text.find(token, next_line)


def _add_match_lines(
    matches: Iterable[re.Match[str]], token: Token, index: LineIndex, first: int, stop: int, tree: Tree | None,
    lines: set[int], stretches: Sequence[Stretch] | None = None,
) -> None:
    """Lines of ``matches`` (in order of their starts) that start in ``first..stop`` and,
    given ``stretches``, inside one of them."""
    shared = tree if isinstance(token, AllOf) and token.within == "statement" else None
    for match in matches:
        if match.start() >= stop:
            break
        if match.start() < first or (stretches is not None and not _inside(stretches, match.start())):
            continue
        line = index.line_of(match.start())
        if shared is not None and isinstance(token, AllOf):
            head_first, head_last = _header_lines(shared, index, match.start())
            if not token.all_in(index.text[index.starts[head_first - 1] : _line_end(index, head_last)]):
                continue
        lines.add(line)


def _inside(stretches: Sequence[Stretch], offset: int) -> bool:
    position = bisect.bisect_right(stretches, offset, key=lambda stretch: stretch[0]) - 1
    return position >= 0 and offset < stretches[position][1]


def word_lines(index: LineIndex, names: Iterable[str]) -> set[int]:
    """Lines holding one of ``names`` as a whole word, not inside a longer identifier
    (the lines ``prefilter.whole_word`` finds, without compiling a regex per name)."""
    text = index.text
    lines: set[int] = set()
    for name in names:
        start = text.find(name)
        while start != -1:
            end = start + len(name)
            if not (start and _is_word_char(text[start - 1])) and not (end < len(text) and _is_word_char(text[end])):
                line = index.line_of(start)
                lines.add(line)
                if line >= len(index.starts):
                    break
                start = text.find(name, index.starts[line])  # one occurrence per line is enough
                continue
            start = text.find(name, start + 1)
    return lines


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"  # what ``\w`` matches in a str pattern


def _line_range(node: Node) -> tuple[int, int]:
    end_row, end_column = node.end_point
    last = end_row if end_column > 0 else end_row - 1
    return node.start_point[0] + 1, max(last, node.start_point[0]) + 1


def _line_end(index: LineIndex, line: int) -> int:
    return index.starts[line] if line < len(index.starts) else len(index.text)


def _header_lines(tree: Tree, index: LineIndex, offset: int) -> tuple[int, int]:
    """First and last line of the innermost statement holding ``offset``; of a compound
    statement or clause, its header (up to its block)."""
    line = index.line_of(offset)
    column = len(index.text[index.starts[line - 1] : offset].encode("utf-8", "surrogatepass"))
    node: Node | None = tree.root_node.descendant_for_point_range((line - 1, column), (line - 1, column))
    while node is not None and not _is_statement(node):
        node = node.parent
    if node is None:
        return line, line
    first, last = _statement_header(node)
    return first, max(last, line)


def _statement_header(node: Node) -> tuple[int, int]:
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


def _is_statement(node: Node) -> bool:
    kind = node.type
    return kind.endswith(("_statement", "_clause")) or kind in ("function_definition", "class_definition", "decorated_definition")


def _statement_nodes(tree: Tree) -> list[Node]:
    return [child for child in tree.root_node.children if child.type != "comment"]


def _definition(statement: Node) -> Node | None:
    """The function or class a (decorated) definition statement defines."""
    return statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement


def _methods(statement: Node) -> list[tuple[int, int, str]]:
    """(first, last, name) of the methods directly in a top-level class's body."""
    node = _definition(statement)
    if node is None or node.type != "class_definition":
        return []
    body = node.child_by_field_name("body")
    methods = []
    for child in body.children if body is not None else ():
        function = _definition(child)
        if function is not None and function.type == "function_definition":
            methods.append((*_line_range(child), _name(function)))
    return methods


def plan_regions(
    text: str,
    tree: Tree,
    reach: Mapping[str, RuleReach],
    *,
    lines: frozenset[int] | None,
    keep_method: Callable[[str], bool] = lambda name: False,
    is_cold_line: Callable[[int], bool] = lambda line: False,
    code: str | None = None,
    windows: ChangeWindows | None = None,
) -> list[Region]:
    """Regions to parse, each with the rules that may hit inside it.

    A rule with no tokens may hit anywhere. ``lines`` (changed lines) drops every
    statement that no change touches: findings there are outside the change anyway.
    Within a selected statement, what no rule reads is left empty (lines kept, see
    ``RuleReach.reads``): methods holding no token unless a selecting rule reads the
    whole class, and, in functions where only statement-local rules have tokens, the
    statements holding none. ``keep_method(name)`` names the methods that describe the
    class (``__init__``): they keep at least their header. ``windows``: what
    ``change_windows`` gave for ``lines``, when the caller has it.
    """
    index = LineIndex(text)
    # Tokens are searched in code only: ``code`` (see ``code_text``) has the same lines
    # and offsets as ``text``, so the index serves both.
    code_index = LineIndex(code, index.starts) if code is not None else index
    nodes = _statement_nodes(tree)
    statements = [_line_range(node) for node in nodes]
    starts = [start for start, _ in statements]
    touched = set(_statements_for(set(lines), statements, starts)) if lines is not None else None
    if touched is not None and not touched:
        return []
    # Tokens outside the touched statements or members select nothing (``search_scope``): a
    # change to a large file searches only the stretch it touches.
    if windows is None and lines is not None and touched:
        windows = _windows(lines, tree, nodes, statements, touched, index)
    wanted: dict[int, set[str]] = {}
    hits: dict[str, set[int]] = {reads: set() for reads in get_args(Reads)}  # token lines by what their rules read
    open_statements: set[int] = set()  # selected by a rule that may hit anywhere in them
    setup_lines: set[int] | None = None
    functions: list[tuple[int, int]] | None = None  # (first, last) line of every function, by first line
    assigned: dict[str, list[int]] | None = None  # name -> lines assigning it
    for rule_id, rule in reach.items():
        search = windows.for_scope(search_scope(rule)) if windows is not None else None
        hit_lines = token_lines(code_index.text, rule.tokens, code_index, search, tree) if rule.tokens else None
        if hit_lines and rule.never_in_setup:
            if setup_lines is None:
                setup_lines = _setup_method_lines(nodes, keep_method)
            hit_lines -= setup_lines
        if hit_lines and rule.never_in_cold:
            hit_lines = {line for line in hit_lines if not is_cold_line(line)}
        for position in _statements_for(hit_lines, statements, starts):
            wanted.setdefault(position, set()).add(rule_id)
            if hit_lines is None or rule.whole_class:
                open_statements.add(position)
        if hit_lines and rule.companions is not None and rule.companion_lines == "assignments":
            if assigned is None:
                # A kept assignment shares a function with a token line, which lies
                # in the touched statements when the review is limited to them.
                reached = windows.statements if windows is not None else (0, len(code_index.text))
                assigned = _assignment_lines(code_index, reached)
                functions = sorted(_function_ranges(tree.root_node, code_index.line_of(reached[0]), code_index.line_of(reached[1])))
            found = _companion_lines(code_index, tree.root_node, hit_lines, rule.companions, assigned)
            hit_lines |= _in_same_function(found, hit_lines, functions or [])  # a value is assigned in its function
        elif hit_lines and rule.companions is not None:
            hit_lines |= _companion_lines(code_index, tree.root_node, hit_lines, rule.companions)
        hits[rule.reads].update(hit_lines or ())
    if touched is not None:
        wanted = {k: v for k, v in wanted.items() if k in touched}
    blank: dict[int, str] = {}
    if not tree.root_node.has_error:
        local = hits["statement"] | hits["header"]
        imports = _Lines(_import_lines(code_index) if local else ())
        reads = _Reads(_Lines(hits["function"]), _Lines(hits["statement"]), _Lines(local), imports)
        for position in wanted.keys() - open_statements:
            blank.update(_unread_lines(nodes[position], reads, index, keep_method))
    return _merge(sorted(wanted.items()), statements, index, blank)


SearchScope = Literal["file", "statements", "members", "headers"]


def search_scope(reach: RuleReach | MatcherReach) -> SearchScope:
    """Where, in a review limited to changed lines, a rule's tokens can select a kept hit.

    A rule hits only where it reads, in the function (or class-level statement) around
    its tokens, and a kept hit touches a changed line: so only tokens in the touched
    members matter, the class members (or whole top-level statements outside classes)
    that hold changed lines. A rule that reads only the header of the statement holding
    a token hits inside that statement, so the statement itself must hold a changed
    line: its tokens matter only in the headers of the statements around each changed
    line. Companions that keep assignments stay in the token's function too. A rule
    that reads every method of a class needs the touched top-level statements whole;
    one whose companions keep every use of a name needs the file: a token elsewhere may
    name what the changed lines use.
    """
    if reach.companions is not None and reach.companion_lines == "uses":
        return "file"
    if reach.whole_class:
        return "statements"
    return "headers" if reach.reads == "header" else "members"


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
    """The stretches ``lines`` touch (see ``search_scope``); None when they touch no
    statement. ``headers``: a kept hit touches a changed line, so header rules may
    search only the headers around them."""
    nodes = _statement_nodes(tree)
    statements = [_line_range(node) for node in nodes]
    touched = set(_statements_for(set(lines), statements, [start for start, _ in statements]))
    return _windows(lines, tree, nodes, statements, touched, LineIndex(text), headers=headers) if touched else None


def _windows(
    lines: Iterable[int], tree: Tree, nodes: list[Node], statements: list[tuple[int, int]], touched: set[int],
    index: LineIndex, *, headers: bool = True,
) -> ChangeWindows:
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
        node: Node | None = _node_at_line_start(root, index, line)
        while node is not None:
            if _is_statement(node):
                if node.id in seen:
                    break
                seen.add(node.id)
                ranges.add(_statement_header(node))
            node = node.parent
    merged: list[Stretch] = []
    for first, last in sorted(ranges):
        start, stop = _offsets(first, last, index)
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return tuple(merged)


def _member_window(
    lines: Iterable[int], nodes: list[Node], statements: list[tuple[int, int]], index: LineIndex
) -> tuple[int, int]:
    """Offsets from the first touched member's first line to the last one's end.

    A member is a statement directly in a top-level class's body, or a top-level
    statement that is no class. A changed line in a class's header, its decorators or
    between its members (a comment, a blank line) touches the whole class. ``lines``
    touch at least one statement."""
    starts = [start for start, _ in statements]
    members: dict[int, list[tuple[int, int]]] = {}
    first, last = len(index.starts) + 1, 0
    for line in lines:
        position = bisect.bisect_right(starts, line) - 1
        if position < 0 or not statements[position][0] <= line <= statements[position][1]:
            continue
        inner = members.get(position)
        if inner is None:
            inner = members[position] = _members(nodes[position])
        found = bisect.bisect_right(inner, (line, len(index.starts) + 1)) - 1
        low, high = inner[found] if found >= 0 and inner[found][0] <= line <= inner[found][1] else statements[position]
        first, last = min(first, low), max(last, high)
    return _offsets(first, last, index)


def _members(statement: Node) -> list[tuple[int, int]]:
    """Line ranges of the statements directly in a top-level class's body, in order;
    none for other statements."""
    node = _definition(statement)
    if node is None or node.type != "class_definition":
        return []
    body = node.child_by_field_name("body")
    if body is None or body.start_point[0] == node.start_point[0]:
        return []  # ``class A: x = 1`` on one line
    return [_line_range(child) for child in body.children if child.type != "comment"]


def _window(touched: set[int], statements: list[tuple[int, int]], index: LineIndex) -> tuple[int, int]:
    """Offsets from the first touched statement's first line to the last one's end."""
    return _offsets(statements[min(touched)][0], max(statements[position][1] for position in touched), index)


def _offsets(first: int, last: int, index: LineIndex) -> tuple[int, int]:
    return index.starts[first - 1], index.starts[last] if last < len(index.starts) else len(index.text)


def _companion_lines(
    index: LineIndex,
    root: Node,
    hit_lines: set[int],
    companions: Callable[[str], Iterable[str]],
    assigned: Mapping[str, list[int]] | None = None,
) -> set[int]:
    """Lines holding what a rule reads besides its tokens, grown until nothing new turns up.

    Companions are asked about a line and, when that line goes on a statement begun
    above it (``).item()`` under ``lengths.max(``), about the statement's first line too.
    With ``assigned`` (name -> lines assigning it), only those lines of a companion are kept."""
    found: set[int] = set()
    sources: set[str] = set()
    fresh = hit_lines
    for _ in range(_COMPANION_ROUNDS):
        starts = {start for line in fresh for start in (line, _statement_first_line(root, index, line))}
        new = {name for line in sorted(starts) for name in companions(_from_line(index, line))} - sources
        if not new:
            break
        sources |= new
        if assigned is None:
            fresh = word_lines(index, new)
        else:
            fresh = {line for name in new for line in assigned.get(name, ())}
        fresh -= hit_lines | found
        found |= fresh
    return found


def _in_same_function(found: set[int], hit_lines: set[int], functions: list[tuple[int, int]]) -> set[int]:
    """The lines of ``found`` whose innermost function also holds a line of ``hit_lines``.
    A ``def`` line of ``found`` binds its name in the function around that definition."""

    starts = [start for start, _ in functions]

    def innermost(line: int, *, binding: bool) -> tuple[int, int] | None:
        # Functions nest: the innermost holding ``line`` is the last-starting one that does.
        for position in range(bisect.bisect_right(starts, line) - 1, -1, -1):
            start, end = functions[position]
            if line <= end and not (binding and start == line):
                return functions[position]
        return None

    wanted = {innermost(line, binding=False) for line in hit_lines}
    return {line for line in found if innermost(line, binding=True) in wanted}


def _function_ranges(root: Node, first: int, last: int) -> Iterator[tuple[int, int]]:
    """(first, last) line of every function that overlaps lines ``first..last``."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.start_point[0] + 1 > last or node.end_point[0] + 1 < first:
            continue
        if node.type == "function_definition":
            yield node.start_point[0] + 1, node.end_point[0] + 1
        stack.extend(child for child in node.children if child.type in DEFINITION_HOLDERS)


# A line that binds a plain name: ``def x(``, ``class x``, ``x = ...``, ``x: T = ...``.
_ASSIGNMENT = re.compile(
    r"^[ \t]*(?:(?:async[ \t]+)?def[ \t]+(\w+)|class[ \t]+(\w+)|([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=))", re.M
)


def _assignment_lines(index: LineIndex, window: tuple[int, int]) -> dict[str, list[int]]:
    """Lines that bind a plain name (``x = ...``, ``x: T = ...``, ``def x``, ``class x``)
    in ``window`` (offsets from a line start), by name: one pass."""
    lines: dict[str, list[int]] = {}
    for match in _ASSIGNMENT.finditer(index.text, *window):
        group = match.lastindex or 0
        lines.setdefault(match.group(group), []).append(index.line_of(match.start(group)))
    return lines


def _statement_first_line(root: Node, index: LineIndex, line: int) -> int:
    """First line of the innermost statement holding the first code of ``line``."""
    node: Node | None = _node_at_line_start(root, index, line)
    while node is not None and node.parent is not None and node.parent.type not in ("block", "module"):
        node = node.parent
    return node.start_point[0] + 1 if node is not None else line


def _node_at_line_start(root: Node, index: LineIndex, line: int) -> Node | None:
    """The innermost node at the first code of ``line`` (its start, if blank)."""
    row = index.line_text(line)
    column = len(row) - len(row.lstrip(" \t"))  # leading blanks: bytes and characters agree
    return root.descendant_for_point_range((line - 1, column), (line - 1, column))


def _from_line(index: LineIndex, line: int) -> str:
    """A token's line and the two after it: a statement may go on (``hasattr(`` ... ``self, "x")``)."""
    return "".join(index.line_text(n) for n in range(line, min(line + 3, len(index.starts) + 1)))


def _import_lines(index: LineIndex) -> set[int]:
    return {line for line in token_lines(index.text, ("import ",), index) if _IMPORT_LINE.match(index.line_text(line))}


def _setup_method_lines(nodes: list[Node], keep_method: Callable[[str], bool]) -> set[int]:
    return {
        line
        for node in nodes
        for first, last, name in _methods(node)
        if keep_method(name)
        for line in range(first, last + 1)
    }


@dataclass(frozen=True)
class _Reads:
    """Token lines by how much their rules read around them."""

    function: _Lines  # the whole enclosing function
    statement: _Lines  # the innermost statement holding the token, whole
    local: _Lines  # that statement, or only its header: everything but ``function``
    imports: _Lines  # import statements, kept in whatever is kept: rules resolve names through them


def _unread_lines(statement: Node, reads: _Reads, index: LineIndex, keep_method: Callable[[str], bool]) -> dict[int, str]:
    """Lines of a selected top-level statement that no rule reads, with what replaces them."""
    node = _definition(statement)
    if node is not None and node.type == "function_definition":
        return _unread_in_function(node, reads, index)
    if node is not None and node.type == "class_definition":
        return _unread_in_class(node, reads, index, keep_method)
    return {}


def _unread_in_class(cls: Node, reads: _Reads, index: LineIndex, keep_method: Callable[[str], bool]) -> dict[int, str]:
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
    keep_whole = reads.function.any_within(*_line_range(cls))
    blank: dict[int, str] = {} if keep_whole else _comment_lines(body, index)
    emptied = []
    for child in children:
        node = _definition(child)
        first, last = _line_range(child)
        held = reads.local.any_within(first, last) or reads.function.any_within(first, last)
        if node is not None and node.type == "function_definition":
            setup = keep_method(_name(node))
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


def _name(definition: Node) -> str:
    name = definition.child_by_field_name("name")
    return name.text.decode("utf-8", "replace") if name is not None and name.text is not None else ""


def _unread_in_function(function: Node, reads: _Reads, index: LineIndex) -> dict[int, str]:
    decorated = function.parent if function.parent is not None and function.parent.type == "decorated_definition" else function
    if reads.function.any_within(*_line_range(decorated)):
        return {}  # a rule that reads the whole function has a token here
    body = function.child_by_field_name("body")
    return _unread_in_block(body, reads, index) if body is not None else {}


def _unread_in_block(block: Node, reads: _Reads, index: LineIndex) -> dict[int, str]:
    """Statements of ``block`` that hold no token; statements that hold tokens only in
    their blocks, or only tokens of rules that read headers, are opened in turn. The
    block keeps at least a ``pass``."""
    children = [child for child in block.children if child.type != "comment"]
    blank = _comment_lines(block, index)
    emptied = []
    for child in children:
        first, last = _line_range(child)
        if not reads.local.any_within(first, last) and not reads.imports.any_within(first, last):
            if _owns_its_lines(child, block):
                emptied.append(child)
                blank.update((line, "") for line in range(first, last + 1))
            continue
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


def _blocks_to_open(statement: Node, whole: _Lines) -> list[Node]:
    """The blocks of a token-holding statement worth emptying piecemeal: none when a
    token of a rule that reads whole statements sits in its header, except for a
    nested function, whose header is always kept."""
    node = _definition(statement)
    if node is None or node.type not in _NESTING:
        return []
    blocks = [child for child in node.children if child.type == "block"]
    blocks += [inner for clause in node.children if clause.type in _CLAUSES
               for inner in clause.children if inner.type == "block"]
    if node.type == "function_definition":
        return blocks
    inner_ranges = [_line_range(child) for block in blocks for child in block.children if child.type != "comment"]
    first, last = _line_range(statement)
    for line in whole.within(first, last):
        if not any(a <= line <= b for a, b in inner_ranges):
            return []
    return blocks


def _statements_for(lines: set[int] | None, statements: list[tuple[int, int]], starts: list[int]) -> Iterable[int]:
    if lines is None:
        return range(len(statements))
    found = set()
    for line in lines:
        position = bisect.bisect_right(starts, line) - 1
        if position >= 0 and statements[position][0] <= line <= statements[position][1]:
            found.add(position)
    return found


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
