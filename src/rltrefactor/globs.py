"""Path globs as users write them in configuration and rule applicability.

``*`` matches within one path segment, ``**`` across segments (``**/`` may match no
directory at all), ``?`` one character, ``[...]`` a character class. Paths are
repository-relative with ``/`` separators.
"""

from __future__ import annotations

import re
from functools import lru_cache


class GlobError(ValueError):
    pass


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str]:
    if not pattern or pattern.startswith("/") or "\\" in pattern:
        raise GlobError(f"invalid glob {pattern!r}: use a non-empty repository-relative pattern with '/'")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                raise GlobError(f"invalid glob {pattern!r}: unclosed '['")
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    # A pattern naming a directory also covers everything beneath it.
    return re.compile("".join(out) + "(?:/.*)?")


def matches(path: str, patterns: tuple[str, ...] | list[str]) -> bool:
    return any(compile_glob(p).fullmatch(path) for p in patterns)
