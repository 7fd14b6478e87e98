"""Prefilter tokens: what the engine looks for in a file's raw text before parsing it.

A token is a substring or a compiled regex. Regexes should start with a literal: ``re``
then skips ahead to it, where a leading look-behind or a class makes it try every
position (several times slower on real files).
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Protocol


class Searcher(Protocol):
    """A token that is not a substring: a compiled regex, or a ``GuardedRegex``."""

    def search(self, text: str, /) -> re.Match[str] | None: ...

    def finditer(self, text: str, /) -> Iterator[re.Match[str]]: ...


Token = str | Searcher
Prefilter = tuple[Token, ...]  # at least one must occur; () when no cheap test exists


# A literal start shorter than this occurs too often for ``str.find`` to beat the regex.
_MIN_START = 3
_MAX_STARTS = 64
# Candidate offsets collected at most before the regex scans on its own.
_MAX_CANDIDATES = 4096


@functools.lru_cache(maxsize=1024)
def literal_starts(pattern: "re.Pattern[str]") -> tuple[str, ...] | None:
    """Literal strings, at least one of which every match of ``pattern`` starts with;
    None when there are none worth searching for.

    ``re`` skips ahead quickly only to a pattern's one literal prefix; alternatives
    (``depth|loop|\\biter\\b``) make it try every position, tens of times slower than
    ``str.find`` for each alternative's leading word.
    """
    if pattern.flags & re.IGNORECASE:
        return None
    try:
        items = list(_re_module("_parser").parse(pattern.pattern, pattern.flags & ~re.UNICODE).data)
    except Exception:  # an unexpected form of the parsed pattern: scan with the regex
        return None
    if items and items[0][0] is _re_module("_constants").LITERAL:
        return None  # one literal prefix: ``re`` skips ahead to it on its own
    starts, _ = _starts(items)
    if not starts or len(starts) > _MAX_STARTS or min(map(len, starts)) < _MIN_START:
        return None
    # A start that another start begins has no occurrence of its own.
    return tuple(start for start in sorted(set(starts)) if not any(start.startswith(other) and other != start for other in starts))


def _re_module(name: str) -> Any:
    """``re``'s own parser and opcodes: the parsed form that ``re`` compiles."""
    return importlib.import_module(f"re.{name}")


def _starts(items: list[tuple[object, object]]) -> tuple[list[str], bool]:
    """Literal starts of a parsed sequence, and whether the sequence is nothing else
    (so that what follows it extends every start)."""
    codes = _re_module("_constants")
    ASSERT, ASSERT_NOT, AT, BRANCH, LITERAL, SUBPATTERN = (
        codes.ASSERT, codes.ASSERT_NOT, codes.AT, codes.BRANCH, codes.LITERAL, codes.SUBPATTERN
    )
    starts = [""]
    for op, value in items:
        if op is LITERAL and isinstance(value, int):
            starts = [start + chr(value) for start in starts]
        elif op in (AT, ASSERT, ASSERT_NOT) and starts == [""]:
            continue  # zero-width before anything is consumed: the match starts after it
        elif op is BRANCH and isinstance(value, tuple):
            options = [_starts(list(branch)) for branch in value[1]]
            starts = [start + option for start in starts for found, _ in options for option in found]
            if not all(complete for _, complete in options) or len(starts) > _MAX_STARTS:
                return starts, False
        elif op is SUBPATTERN and isinstance(value, tuple) and not value[1] and not value[2]:
            inner, complete = _starts(list(value[3]))
            starts = [start + option for start in starts for option in inner]
            if not complete:
                return starts, False
        else:
            return starts, False
    return starts, True


def finditer(pattern: "re.Pattern[str]", text: str, pos: int = 0, endpos: int | None = None) -> Iterator["re.Match[str]"]:
    """``pattern.finditer(text, pos, endpos)``, the same matches, found through
    ``literal_starts`` where the pattern has them."""
    end = len(text) if endpos is None else min(endpos, len(text))
    starts = literal_starts(pattern)
    candidates = _candidates(text, starts, pos, end) if starts is not None else None
    if candidates is None:
        yield from pattern.finditer(text, pos, end)
        return
    position = pos
    for offset in candidates:
        if offset < position:
            continue
        match = pattern.match(text, offset, end)
        if match is not None:
            yield match
            position = match.end()  # a match starts with a non-empty literal: never empty


def search(pattern: "re.Pattern[str]", text: str, pos: int = 0, endpos: int | None = None) -> "re.Match[str] | None":
    """``pattern.search(text, pos, endpos)``, through ``literal_starts`` where it can."""
    return next(finditer(pattern, text, pos, endpos), None)


def _candidates(text: str, starts: tuple[str, ...], pos: int, end: int) -> list[int] | None:
    """Sorted offsets where one of ``starts`` occurs; None when there are too many."""
    found: set[int] = set()
    for start in starts:
        offset = text.find(start, pos, end)
        while offset != -1:
            found.add(offset)
            if len(found) > _MAX_CANDIDATES:
                return None
            offset = text.find(start, offset + 1, end)
    return sorted(found)


# The ``del`` keyword, not the end of a word or attribute (``model``, ``x.del``): a
# regex starting with it keeps ``del`` as its literal prefix, which ``re`` skips to.
DEL_KEYWORD = r"del(?<![\w.]del)"


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
    guards: tuple[str, ...]  # a guard holding another is dropped: the other finds its lines
    context: int = 0

    def __post_init__(self) -> None:
        needed = tuple(g for g in dict.fromkeys(self.guards) if not any(o != g and o in g for o in self.guards))
        object.__setattr__(self, "guards", needed)

    def search(self, text: str) -> "re.Match[str] | None":
        if self.context:
            return next(self.finditer(text), None)
        # One-line windows never overlap: each is searched as it is found.
        for found in self._guard_offsets(text):
            match = self.pattern.search(text, *self._window(text, found))
            if match is not None:
                return match
        return None

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


# Matches of a regex word counted at most, when no substring word bounds the count.
_REGEX_COUNT_CAP = 64
# Counts in the last text counted, by (word, pos, end): a file's AllOf tokens share words.
# A regex's count may stop at a cap: (count, cap), exact when count < cap.
_last_counts: tuple[str | None, dict[tuple[object, int, int], tuple[int, int]]] = (None, {})


def _occurrences(text: str, word: "str | re.Pattern[str]", pos: int, end: int, cap: int) -> int:
    """Occurrences of ``word`` in ``text[pos:end]``; of a regex, at most ``cap``."""
    global _last_counts
    if _last_counts[0] is not text:
        _last_counts = (text, {})
    counts = _last_counts[1]
    key = (word, pos, end)
    known = counts.get(key)
    if known is not None and (known[0] < known[1] or cap <= known[0]):
        return min(known[0], cap)
    if isinstance(word, str):
        count = text.count(word, pos, end)
        counts[key] = (count, count + 1)
        return count
    count = 0
    for _ in finditer(word, text, pos, end):
        count += 1
        if count >= cap:
            break
    counts[key] = (count, cap)
    return count


@dataclass(frozen=True)
class AllOf:
    """Words that all occur in every match of a pattern (each written at the match
    itself), so any one of them selects its lines. The one that occurs least often in
    the text searched stands for them all: which word is rare differs from file to file.

    ``calls`` are the words that every match calls (``tensor`` of ``torch.tensor(...)``):
    only their occurrences followed by ``(`` count. Duck-typed like a compiled regex.
    """

    words: tuple["str | re.Pattern[str]", ...]
    calls: frozenset[str] = frozenset()
    # Words of dotted names (``cuda`` and ``synchronize`` of ``torch.cuda.synchronize``):
    # an import may leave only an alias or the last part at the match.
    importable: frozenset[str] = frozenset()
    # "top-level": the words share the match's top-level statement; "statement": they
    # share its innermost statement (a compound statement's or clause's header), which
    # planning checks where the rarest word occurs.
    within: Literal["top-level", "statement"] = "top-level"

    def all_in(self, text: str) -> bool:
        return all(search(word, text) if isinstance(word, re.Pattern) else word in text for word in self.words)

    def search(self, text: str, /) -> "re.Match[str] | None":
        """A match of the first word when every word occurs (an import line may hold
        a called word that an alias calls)."""
        found = None
        for word in self.words:
            found = search(word, text) if isinstance(word, re.Pattern) else _word_regex(word, False).search(text)
            if found is None:
                return None
        return found

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None, /) -> Iterator["re.Match[str]"]:
        end = len(text) if endpos is None else endpos
        rarest = self._rarest(text, pos, end)
        if isinstance(rarest, re.Pattern):
            return finditer(rarest, text, pos, end)
        return _word_regex(rarest, rarest in self.calls).finditer(text, pos, end)

    def _rarest(self, text: str, pos: int, end: int) -> "str | re.Pattern[str]":
        """The word with the fewest occurrences from ``pos`` on; substrings are counted
        first, and a regex only while it could still be the rarest (any word selects
        soundly: the count only saves work)."""
        rarest, fewest = self._counted[0], None
        for word in self._counted:
            count = _occurrences(text, word, pos, end, fewest if fewest is not None else _REGEX_COUNT_CAP)
            if fewest is None or count < fewest:
                rarest, fewest = word, count
        return rarest

    @functools.cached_property
    def _counted(self) -> tuple["str | re.Pattern[str]", ...]:
        """The words in the order they are counted (substrings first); a substring
        inside one counted before it occurs at least as often, so it is never picked."""
        words = sorted(self.words, key=lambda word: isinstance(word, re.Pattern))
        return tuple(
            word for position, word in enumerate(words)
            if not (isinstance(word, str) and any(isinstance(before, str) and word in before for before in words[:position]))
        )

    def alias(self, local: str, target: str) -> "AllOf | None":
        """What selects a match that names ``target`` (a dotted import target) by the
        local name ``local``: ``from torch.cuda import synchronize as sync`` leaves
        ``sync(`` and neither ``cuda`` nor ``synchronize``. Only an import whose last
        part is one of the words can stand for part of a match's dotted name."""
        last = target.rpartition(".")[2]
        if last not in self.importable:
            return None  # the import names a module or object that no match spells out
        called = last in self.calls
        return AllOf((local,), frozenset({local}) if called else frozenset())




@functools.lru_cache(maxsize=1024)
def _word_regex(word: str, called: bool) -> "re.Pattern[str]":
    return re.compile(re.escape(word) + (r"\s*\(" if called else ""))
