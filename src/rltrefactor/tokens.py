"""Prefilter tokens: what the engine looks for in a file's raw text before parsing it.

A token is a substring or a compiled regex. Regexes should start with a literal: ``re``
then skips ahead to it, where a leading look-behind or a class makes it try every
position (several times slower on real files).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterator, Protocol


class Searcher(Protocol):
    """A token that is not a substring: a compiled regex, or a ``GuardedRegex``."""

    def search(self, text: str, /) -> re.Match[str] | None: ...

    def finditer(self, text: str, /) -> Iterator[re.Match[str]]: ...


Token = str | Searcher
Prefilter = tuple[Token, ...]  # at least one must occur; () when no cheap test exists


@functools.lru_cache(maxsize=4096)
def whole_word(name: str) -> "re.Pattern[str]":
    """``name`` not inside a longer identifier (``version`` but not ``version_info``)."""
    word = re.escape(name)
    return re.compile(rf"{word}(?<![\w]{word})(?![\w])")


@dataclass(frozen=True)
class GuardedRegex:
    """A regex whose every match lies near a line holding one of ``guards`` (within
    ``context`` lines of it). ``str.find`` locates the guards far faster than the regex
    scans a file, so the regex only runs on those few lines.

    Duck-typed like a compiled regex for the engine: ``search`` and ``finditer``.
    """

    pattern: "re.Pattern[str]"
    guards: tuple[str, ...]
    context: int = 0

    def search(self, text: str) -> "re.Match[str] | None":
        return next(self.finditer(text), None)

    def finditer(self, text: str) -> Iterator["re.Match[str]"]:
        merged: list[list[int]] = []  # overlapping windows are searched as one
        for start, end in sorted({self._window(text, found) for found in self._guard_offsets(text)}):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        for start, end in merged:
            yield from self.pattern.finditer(text, start, end)

    def _guard_offsets(self, text: str) -> Iterator[int]:
        for guard in self.guards:
            found = text.find(guard)
            while found != -1:
                yield found
                # The rest of this line is covered by the same window.
                line_end = text.find("\n", found)
                found = -1 if line_end == -1 else text.find(guard, line_end)

    def _window(self, text: str, offset: int) -> tuple[int, int]:
        start = text.rfind("\n", 0, offset) + 1
        for _ in range(self.context):
            start = text.rfind("\n", 0, max(start - 1, 0)) + 1 if start else 0
        end = text.find("\n", offset)
        for _ in range(self.context):
            end = text.find("\n", end + 1) if end != -1 else -1
        return start, len(text) if end == -1 else end
