"""Name lists as data: the words and patterns that are evidence of where code runs.

They live in ``rules/names.yaml``, versioned with the rule library and validated as
strictly (unknown keys are ``file:line`` errors). The configuration adds and removes
values (``[tool.rltrefactor.names]``, see ``config``); ``Names.overridden`` applies that.
How each entry's values are compared is data too (``match``):

- ``words``: words of a name split at ``_`` (a value of several words needs all);
- ``names``: whole (dotted) names inside a text, such as a decorator;
- ``substrings``: anywhere inside a text;
- ``patterns``: regular expressions, joined into one.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import Literal

MatchKind = Literal["words", "names", "substrings", "patterns", "paths"]
MATCH_KINDS: tuple[MatchKind, ...] = ("words", "names", "substrings", "patterns", "paths")
EVIDENCE = ("per-step", "one-time", "offline", "host memory", "kernel module", "acknowledged sync")
_ENTRY_KEYS = ("evidence", "match", "description", "ignore-case", "values")


@dataclass(frozen=True)
class NameEntry:
    key: str
    evidence: str  # what a match is evidence for: one of EVIDENCE
    match: MatchKind
    values: tuple[str, ...]
    ignore_case: bool = False


@dataclass(frozen=True)
class NameChange:
    """``extend-<entry>`` / ``remove-<entry>`` of the configuration, for one entry."""

    entry: str
    extend: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()


@dataclass(frozen=True)
class Names:
    entries: tuple[NameEntry, ...]

    def entry(self, key: str) -> NameEntry:
        for entry in self.entries:
            if entry.key == key:
                return entry
        raise KeyError(key)

    def regex(self, key: str) -> re.Pattern[str]:
        """The entry's values as one regular expression (``words`` entries: one word each)."""
        return _compiled(self.entry(key))

    def pattern_text(self, key: str) -> str:
        """``regex(key)`` as text with its flags inline, for an option's default."""
        compiled = self.regex(key)
        return ("(?i)" if compiled.flags & re.IGNORECASE else "") + compiled.pattern

    def has_word(self, key: str, words: frozenset[str]) -> bool:
        """Whether ``words`` (of one name) hold one of the entry's values."""
        single, several = _words(self.entry(key))
        return not single.isdisjoint(words) or any(all(w in words for w in group) for group in several)

    def overridden(self, changes: tuple[NameChange, ...]) -> Names:
        """These names with the configuration's changes; ``check_change`` has vetted them."""
        if not changes:
            return self
        by_key = {entry.key: entry for entry in self.entries}
        for change in changes:
            entry = by_key[change.entry]
            kept = tuple(v for v in entry.values if v not in change.remove)
            by_key[change.entry] = replace(entry, values=kept + tuple(v for v in change.extend if v not in kept))
        return Names(tuple(by_key[entry.key] for entry in self.entries))

    def check_change(self, action: str, key: str, values: tuple[str, ...]) -> str | None:
        """Why ``<action>-<key> = values`` cannot apply, or None."""
        from .fields import suggest

        keys = [entry.key for entry in self.entries]
        if key not in keys:
            return f"unknown name list {key!r}{suggest(key, keys)}; the lists are {', '.join(keys)}"
        entry = self.entry(key)
        if action == "remove":
            missing = [v for v in values if v not in entry.values]
            if missing:
                return f"{missing[0]!r} is not in {key} (its values: {', '.join(entry.values)}); remove only listed values"
        elif entry.match == "patterns":
            for value in values:
                problem = _regex_problem(value)
                if problem:
                    return f"invalid regular expression {value!r} ({problem}); fix it"
        return None


def name_words(name: str) -> frozenset[str]:
    return frozenset(w for w in name.lower().split("_") if w)


@functools.lru_cache(maxsize=None)
def _compiled(entry: NameEntry) -> re.Pattern[str]:
    flags = re.IGNORECASE if entry.ignore_case else 0
    if entry.match == "patterns":
        return re.compile("|".join(f"(?:{v})" for v in entry.values), flags)
    escaped = "|".join(re.escape(v) for v in entry.values)
    if entry.match == "substrings":
        return re.compile(escaped, flags)
    return re.compile(rf"\b(?:{escaped})\b", flags)


@functools.lru_cache(maxsize=None)
def _words(entry: NameEntry) -> tuple[frozenset[str], tuple[tuple[str, ...], ...]]:
    single = frozenset(v for v in entry.values if " " not in v)
    several = tuple(tuple(v.split()) for v in entry.values if " " in v)
    return single, several


def _regex_problem(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as exc:
        return str(exc)
    return None


@functools.lru_cache(maxsize=1)
def bundled_names() -> Names:
    """The names shipped with the rule library."""
    from .location import NAMES_FILE, bundled_rules_dir

    path = bundled_rules_dir() / NAMES_FILE
    return parse_names(path.read_text(encoding="utf-8"), f"rules/{NAMES_FILE}")


def parse_names(text: str, display: str) -> Names:
    from .fields import Reader
    from .yamlsafe import load_yaml

    top = Reader(load_yaml(text, display), display, "", 1)
    top.check_keys(("names",))
    table = top.get("names", dict, required=True)
    entries = []
    for key in table:
        r = Reader(table[key], display, f"names: {key}", table.line_of(key))
        r.check_keys(_ENTRY_KEYS)
        evidence = r.choice("evidence", EVIDENCE)
        match = r.choice("match", MATCH_KINDS)
        r.get("description", str, required=True)
        values = r.strings("values")
        if not values:
            raise r.error(r.line_of("values"), "values: expected a non-empty list of strings; list the values")
        if match == "patterns":
            for value in values:
                problem = _regex_problem(value)
                if problem:
                    raise r.error(r.line_of("values"), f"values: invalid regular expression {value!r} ({problem}); fix it")
        ignore_case = bool(r.get("ignore-case", bool, default=False))
        entries.append(NameEntry(key, evidence, match, values, ignore_case))
    return Names(tuple(entries))
