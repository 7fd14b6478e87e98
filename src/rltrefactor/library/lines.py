"""Mappings and lists read from YAML that remember the lines they were written on.

Kept apart from the YAML reader so that a saved library (see ``rule_index``) loads
without importing it.
"""

from __future__ import annotations

from typing import Any


class LineMap(dict[str, Any]):
    """A mapping with the 1-based line of itself, each key, and each value's text."""

    line: int = 0
    key_lines: dict[str, int]
    value_lines: dict[str, int]  # first line of a value's content (block scalars: next line)

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class LineList(list[Any]):
    line: int = 0
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if index < len(self.item_lines) else self.line
