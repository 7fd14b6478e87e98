"""Entries of ``hot-functions`` and ``cold-functions``: which functions each one names.

An entry names a function in one of three ways, and matches when any of them does:

- a regular expression matched against the function's whole plain name (``forward_.*``,
  ``_?step``), as the keys always took;
- a dotted name, names and ``*`` wildcards joined by dots (``DeepSpeedEngine.backward``,
  ``*.step``, ``Engine.*``), matched against the function's qualified name or one of its
  dotted tails: ``Engine.backward`` names that method of every class called ``Engine``
  (a nested ``Outer.Engine`` too); ``*`` stands for any characters. A dotted name that
  is also a regex is read both ways (``forward_.*`` still names ``forward_extend``; a
  plain name has no dot, so ``Engine.backward`` names no plain name but one spelt
  ``Engine`` + one character + ``backward``);
- a regular expression with an escaped dot (``Engine\\.(forward|backward)``), which no plain
  name can match, matched against the qualified name and its dotted tails the same way.

A qualified name is the definition walk's (``A.f``, ``A.f.<locals>.g``): the same one the
execution map, the call index and the warnings read.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# Names and wildcards joined by dots.
_DOTTED = re.compile(r"[\w*]+(?:\.[\w*]+)+")


@dataclass(frozen=True)
class FunctionPattern:
    entry: str  # as written in the configuration
    plain: re.Pattern[str] | None  # fullmatched against the plain name
    qualified: re.Pattern[str] | None  # fullmatched against the qualified name or a dotted tail of it

    def matches(self, name: str, qualname: str) -> bool:
        if self.plain is not None and self.plain.fullmatch(name):
            return True
        return self.qualified is not None and any(self.qualified.fullmatch(tail) for tail in dotted_tails(qualname))


def dotted_tails(qualname: str) -> list[str]:
    """``A.f.<locals>.g`` -> the qualified name and every part of it after a dot."""
    parts = qualname.split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


def compile_entry(entry: str) -> FunctionPattern:
    """The entry's pattern; ValueError, saying what is wrong, for an entry that is neither
    a regular expression nor a dotted name."""
    problem = ""
    try:
        plain: re.Pattern[str] | None = re.compile(entry)
    except re.error as exc:
        plain, problem = None, str(exc)
    qualified = None
    if _DOTTED.fullmatch(entry):
        qualified = re.compile(".*".join(re.escape(part) for part in entry.split("*")))
    elif plain is not None and "\\." in entry:
        qualified = plain
    if plain is None and qualified is None:
        raise ValueError(f"invalid regular expression {entry!r} ({problem}), nor a dotted name such as "
                         "Engine.backward or *.step")
    return FunctionPattern(entry, plain, qualified)


@functools.lru_cache(maxsize=16)
def function_patterns(entries: tuple[str, ...]) -> tuple[FunctionPattern, ...]:
    """The entries' patterns, compiled once (entries were checked when the configuration was read)."""
    return tuple(compile_entry(entry) for entry in entries)


def first_match(entries: tuple[str, ...], name: str, qualname: str) -> str | None:
    """The first of ``entries`` that names the function, or None."""
    return next((p.entry for p in function_patterns(entries) if p.matches(name, qualname)), None)
