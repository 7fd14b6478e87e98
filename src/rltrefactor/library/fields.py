"""Typed reads from one validated YAML mapping, each failure a ``file:line`` error."""

from __future__ import annotations

import difflib
from typing import Any, Iterable, TypeVar

from ..errors import RuleLibraryError
from .lines import LineList, LineMap

_Choice = TypeVar("_Choice", bound=str)
_TYPE_NAMES = {str: "a string", bool: "true or false", int: "an integer", list: "a list", dict: "a mapping"}


# How alike a typo and a name must be to suggest the name (difflib ratios).
WORD_LIKENESS = 0.6
PREFIX_LIKENESS = 0.8
# Longest repr of a bad value quoted in an error message.
SHOWN_VALUE_CHARS = 40

def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice ``word`` most likely misspells, or None.

    A whole-word likeness of 0.6 counts, and so does a likeness of 0.8 to the start of a
    longer choice: ``host-synk`` is a typo of ``host-sync-in-hot-path``.
    """
    best, best_score = None, 0.0
    for choice in choices:
        score = difflib.SequenceMatcher(None, word, choice).ratio()
        if len(word) >= 4 and len(choice) > len(word):
            prefix = difflib.SequenceMatcher(None, word, choice[: len(word)]).ratio()
            score = max(score, prefix if prefix >= PREFIX_LIKENESS else 0.0)
        if score >= WORD_LIKENESS and score > best_score:
            best, best_score = choice, score
    return best


def suggest(word: str, choices: Iterable[str]) -> str:
    close = closest(word, choices)
    return f" (did you mean {close!r}?)" if close else ""


class Reader:
    """Reads keys of one mapping; ``where`` prefixes every message (``rule 'x'``)."""

    def __init__(self, data: Any, file: str, where: str, line: int) -> None:
        self.file = file
        self.where = where
        if not isinstance(data, dict):
            raise self.error(line, f"expected a mapping (got {_kind(data)}); write `key: value` lines")
        self.data: dict[str, Any] = data
        self.line = getattr(data, "line", line)

    def error(self, line: int, message: str) -> RuleLibraryError:
        prefix = f"{self.where}: " if self.where else ""
        return RuleLibraryError(f"{self.file}:{line}: {prefix}{message}")

    def line_of(self, key: str) -> int:
        return self.data.line_of(key) if isinstance(self.data, LineMap) else self.line

    def value_line(self, key: str) -> int:
        if isinstance(self.data, LineMap):
            return self.data.value_lines.get(key, self.line_of(key))
        return self.line

    def check_keys(self, allowed: Iterable[str]) -> None:
        allowed = tuple(allowed)
        for key in self.data:
            if key not in allowed:
                raise self.error(
                    self.line_of(key),
                    f"unknown key {key!r}{suggest(key, allowed)}; remove it or fix the spelling",
                )

    def has(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str, kind: type, *, default: Any = None, required: bool = False) -> Any:
        if key not in self.data:
            if required:
                raise self.error(self.line, f"missing required key {key!r}; add it")
            return default
        value = self.data[key]
        if kind is int and isinstance(value, bool) or not isinstance(value, kind):
            raise self.error(
                self.line_of(key),
                f"{key}: expected {_TYPE_NAMES.get(kind, kind.__name__)} (got {_kind(value)} {_short(value)}); fix the value",
            )
        if kind is str and isinstance(value, str) and not value.strip():
            raise self.error(self.line_of(key), f"{key}: must not be empty; write the text")
        return value

    def choice(self, key: str, choices: tuple[_Choice, ...], *, default: _Choice | None = None) -> _Choice:
        value: _Choice = self.get(key, str, required=default is None, default=default)
        if value not in choices:
            raise self.error(
                self.line_of(key),
                f"{key}: unknown value {value!r}{suggest(value, choices)}; use one of {', '.join(choices)}",
            )
        return value

    def strings(self, key: str, *, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self.get(key, list, default=None)
        if value is None:
            return default
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                line = value.line_of(index) if isinstance(value, LineList) else self.line_of(key)
                raise self.error(line, f"{key}[{index}]: expected a non-empty string (got {_kind(item)} {_short(item)}); fix the item")
        return tuple(value)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_VALUE_CHARS else text[: SHOWN_VALUE_CHARS - 3] + "..."
