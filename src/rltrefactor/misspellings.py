"""``[tool.*]`` tables of pyproject.toml that look like a misspelt ``[tool.rltrefactor]``:
ignored without a word, they would leave a repository reviewed with defaults."""

from __future__ import annotations

from typing import Any


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
