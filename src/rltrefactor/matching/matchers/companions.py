"""Companion functions: given the text from a token's line on, the names whose other
lines a rule also reads (see ``regions.MatcherReach``). Plain text in, names out, no
LibCST: planning calls them before anything is parsed."""

from __future__ import annotations

import re
from typing import Iterator

# Receivers that name the object itself.
SELF_NAMES = frozenset({"self", "cls", "mcs", "metacls"})
# What may stand before the ``=`` of an assignment (``major, minor = ...``); greedy, so
# matching never backtracks.
_TARGETS = re.compile(r"[\w\s,.*()\[\]]*")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*")
_GUARDED_NAME = re.compile(r"(?:has|get)attr\s*\(\s*self\s*,\s*[rbuRBU]?[\"'](\w+)[\"']")
_RECEIVER = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\.\s*_\w")
# ``self._x`` written (assigned, unpacked into, annotated, looped over); group 1 is ``_x``.
SELF_PRIVATE_WRITE = re.compile(r"self\s*\.\s*(_\w*)\s*(?:=(?!=)|,|:|\)|\s+in\b)")
# Identifiers that are not called (``f(``) nor reached through another name (``.f``).
_VALUE_NAME = re.compile(r"(?<![.\w])([A-Za-z_]\w*)\b(?![ \t]*\()")
_SELF_ATTRIBUTE = re.compile(r"(?<![.\w])self\.([A-Za-z_]\w*)\b(?![ \t]*\()")
_NOT_LOCAL = frozenset(
    "self cls torch np numpy math and or not in is if else for None True False return lambda await".split()
)


def probe_targets(text: str) -> Iterator[str]:
    """Uses of names assigned from a probe (``major, _ = probe()`` ... ``if major >= 9``)."""
    line = text.partition("\n")[0]
    end = found.end() if (found := _TARGETS.match(line)) else 0  # a starred pattern always matches
    if line[end : end + 1] != "=" or line[end + 1 : end + 2] == "=":
        return
    for target in line[:end].split(","):
        name = target.strip(" \t()[]*")
        if _DOTTED.fullmatch(name):
            yield name.rpartition(".")[2].strip()


def guarded_names(text: str) -> list[str]:
    """Where the guarded attribute is set: ``__init__`` and the class body."""
    return _GUARDED_NAME.findall(text)


def foreign_receivers(text: str) -> Iterator[str]:
    """The receivers, whose assignment (``own = cls()``) makes ``own._x = 1`` no finding."""
    for receiver in _RECEIVER.findall(text.partition("\n")[0]):
        if receiver not in SELF_NAMES:
            yield receiver


def written_self_names(text: str) -> list[str]:
    """``_x`` of each ``self._x`` the token's line writes."""
    return SELF_PRIVATE_WRITE.findall(text.partition("\n")[0])


def residency_companions(text: str) -> set[str]:
    """Names whose assignments residency inference reads: the values on a token's line
    and the lines its brackets continue on (``lengths`` in ``lengths.max().item()``,
    ``place`` in ``torch.zeros(n,\n device=place)``). Statement planning keeps the lines
    that mention them, so the assignment that says where a value lives is parsed; for
    ``self.x`` (named so), every assignment of it in the class."""
    line = _bracketed_line(text)
    names = {name for name in _VALUE_NAME.findall(line) if name not in _NOT_LOCAL}
    return names | {f"self.{name}" for name in _SELF_ATTRIBUTE.findall(line)}


_OPEN, _CLOSE = re.compile(r"[(\[{]"), re.compile(r"[)\]}]")
_CONTINUED_LINES = 16


def _bracketed_line(text: str) -> str:
    """The first line, and the lines after it while its brackets stay open (a bounded
    guess: brackets in strings are counted too)."""
    lines = text.split("\n", _CONTINUED_LINES)[:_CONTINUED_LINES]
    depth = 0
    for count, line in enumerate(lines, 1):
        depth += len(_OPEN.findall(line)) - len(_CLOSE.findall(line))
        if depth <= 0:
            return "\n".join(lines[:count])
    return "\n".join(lines)
