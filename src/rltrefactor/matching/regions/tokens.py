"""The lines of a text where prefilter tokens, and whole words, occur."""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Iterable, Sequence

from ..prefilter import AllOf, Token, finditer
from .lines import LineIndex, Stretch
from .statements import header_lines

if TYPE_CHECKING:
    from tree_sitter import Tree

_IMPORT_LINE = re.compile(r"[ \t]*(?:import|from)[ \t]")


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
            head_first, head_last = header_lines(shared, index, match.start())
            if not token.all_in(index.text[index.starts[head_first - 1] : index.line_end(head_last)]):
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


def import_lines(index: LineIndex) -> set[int]:
    """Lines that begin an import statement."""
    return {line for line in token_lines(index.text, ("import ",), index) if _IMPORT_LINE.match(index.line_text(line))}
