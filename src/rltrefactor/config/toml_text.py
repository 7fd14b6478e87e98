"""Where a key or table of the configuration lies in its TOML text, for one-line errors
that name ``file:line``; and ``[tool.*]`` tables that look like a misspelt ``[tool.rltrefactor]``.

The configuration's table sits under a *prefix*: ``tool.rltrefactor`` in pyproject.toml,
nothing in a file of its own (``rltrefactor.toml``), where its keys are top-level and its
sub-tables are ``[names]``, ``[[protocols]]``. Every locator takes that prefix.

Best effort by design: ``tomllib`` gives values without lines, so lines are found again in
the text, and an error without a line still names the file.
"""

from __future__ import annotations

import os
import re
from typing import Any


def read_text(path: str) -> str:
    if not os.path.isfile(path):
        return ""
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def table_name(prefix: str, *parts: str) -> str:
    """The dotted name of a table under ``prefix``: ``tool.rltrefactor.names``, or ``names``
    in a file of its own (an empty prefix)."""
    return ".".join(part for part in (prefix, *parts) if part)


def key_label(prefix: str, key: str) -> str:
    """How a message names a top-level key: ``[tool.rltrefactor] fail-on``, or ``fail-on``
    in a file of its own."""
    return f"[{prefix}] {key}" if prefix else key


def located(path: str, text: str, line: int | None, fallback_key: str, *, prefix: str) -> str:
    return f"{path}:{line}" if line else key_location(path, text, fallback_key, prefix=prefix)


def section_line(text: str, section: str) -> int | None:
    """Line of the ``[section]`` header (its last part may be quoted), best effort."""
    head, _, last = section.rpartition(".")
    wanted = {f"[{section}]", f'[{head}."{last}"]'}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip().replace(" ", "") in wanted:
            return number
    return None


def key_line(text: str, section: str, key: str) -> int | None:
    """Line of ``key = ...`` inside ``[section]``, best effort."""
    start = section_line(text, section)
    if start is None:
        return None
    for number, line in enumerate(text.splitlines()[start:], start=start + 1):
        stripped = line.strip()
        if stripped.startswith("["):
            return None
        if stripped.split("=")[0].strip().strip("\"'") == key:
            return number
    return None


def key_location(path: str, text: str, key: str, *, prefix: str) -> str:
    """``path:line`` of ``key`` inside the table ``prefix`` (the top level of the file when
    it is empty), or of its own ``[prefix.key...]`` table, best effort. A ``path`` that
    names its line already is returned as it is."""
    if re.search(r":\d+$", path):
        return path
    # Outside a header, keys belong to the file's top level: the table itself when unprefixed.
    in_section = not prefix
    dotted = f"{prefix}." if prefix else ""
    tables = tuple(f"{bracket}{dotted}{name}" for bracket in ("[", "[[") for name in (key, f'"{key}"'))
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.replace(" ", "").startswith(tables):
            return f"{path}:{number}"
        if stripped.startswith("["):
            in_section = bool(prefix) and stripped.startswith(f"[{prefix}")
        elif in_section and stripped.split("=")[0].strip().strip('"') == key:
            return f"{path}:{number}"
    return path


def array_headers(text: str, section: str) -> list[int]:
    """Lines of the ``[[section]]`` headers, in order: the n-th is the n-th table of the array."""
    return [number for number, row in enumerate(text.splitlines(), 1) if row.replace(" ", "").startswith(f"[[{section}]]")]



# ``[tool.*]`` tables of pyproject.toml that look like a misspelt ``[tool.rltrefactor]``:
# ignored without a word, they would leave a repository reviewed with defaults.
# A ``[tool.*]`` table this many one-character edits from ``rltrefactor`` is taken for a typo.
_TABLE_TYPO_EDITS = 2


def misspelt_tables(tools: Any, path: str, text: str) -> tuple[str, ...]:
    """A warning for each ``[tool.X]`` table that looks like a misspelt ``[tool.rltrefactor]``."""
    if not isinstance(tools, dict):
        return ()
    warnings = []
    for name in tools:
        if name != "rltrefactor" and edit_distance(name.lower(), "rltrefactor") <= _TABLE_TYPO_EDITS:
            line = next((n for n, row in enumerate(text.splitlines(), 1)
                         if row.strip().startswith(("[tool." + name, "[[tool." + name))), None)
            warnings.append(f"{path}{f':{line}' if line else ''}: [tool.{name}] is not read (did you mean "
                            f"[tool.rltrefactor]?); rename the table, or its settings are ignored")
    return tuple(warnings)


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions of one character."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return previous[-1]
