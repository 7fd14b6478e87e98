"""Path globs as users write them in configuration and rule applicability.

Gitignore semantics (pathspec), anchored at the repository root: ``*`` matches within
one path segment, ``**`` across segments (``**/`` may match no directory at all), ``?``
one character, ``[...]`` a character class, and a pattern naming a directory covers
everything beneath it. Paths are repository-relative with ``/`` separators.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern


class GlobError(ValueError):
    pass


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str]:
    if not pattern or pattern.startswith("/") or "\\" in pattern:
        raise GlobError(f"invalid glob {pattern!r}: use a non-empty repository-relative pattern with '/'")
    if _unclosed_class(pattern):
        raise GlobError(f"invalid glob {pattern!r}: unclosed '['")  # gitignore would read it literally
    try:
        # The leading '/' anchors the pattern at the root: '*.py' is not 'a/b.py'.
        regex = GitIgnoreBasicPattern("/" + pattern).regex
    except ValueError as exc:
        raise GlobError(f"invalid glob {pattern!r}: {exc}") from None
    if regex is None:
        raise GlobError(f"invalid glob {pattern!r}: matches nothing; write a path pattern")
    return regex


def _unclosed_class(pattern: str) -> bool:
    start = pattern.find("[")
    while start != -1:
        end = pattern.find("]", start + 2)  # a ']' right after '[' belongs to the class
        if end == -1:
            return True
        start = pattern.find("[", end + 1)
    return False


def matches(path: str, patterns: tuple[str, ...] | list[str]) -> bool:
    return any(compile_glob(p).match(path) for p in patterns)
