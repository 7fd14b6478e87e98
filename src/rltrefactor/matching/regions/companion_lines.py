"""The lines a rule reads besides its tokens: those of its companions (see
``reach.MatcherReach.companions``)."""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Mapping

from .lines import LineIndex, Stretch
from .reach import Companions
from .statements import statement_first_line
from .tokens import word_lines

if TYPE_CHECKING:
    from tree_sitter import Node

# Companions grow from companion lines again, this many rounds at most.
_ROUNDS = 4
# A line that binds a plain name or an attribute of ``self``: ``def x(``, ``class x``,
# ``x = ...``, ``x: T = ...``, ``self.x = ...``.
_ASSIGNMENT = re.compile(
    r"^[ \t]*(?:(?:async[ \t]+)?def[ \t]+(\w+)|class[ \t]+(\w+)|(self\.[A-Za-z_]\w*|[A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=))",
    re.M,
)


def companion_lines(
    index: LineIndex,
    root: Node,
    hit_lines: set[int],
    companions: Companions,
    assigned: Mapping[str, list[int]] | None = None,
    class_wide: set[int] | None = None,
) -> set[int]:
    """Lines holding what a rule reads besides its tokens, grown until nothing new turns up.

    Companions are asked about a line and, when that line goes on a statement begun
    above it (``).item()`` under ``lengths.max(``), about the statement's first line too.
    With ``assigned`` (name -> lines assigning it), only those lines of a companion are kept;
    ``class_wide`` then collects those that assign an attribute of ``self``."""
    found: set[int] = set()
    sources: set[str] = set()
    fresh = hit_lines
    for _ in range(_ROUNDS):
        starts = {start for line in fresh for start in (line, statement_first_line(root, index, line))}
        new = {name for line in sorted(starts) for name in companions(_from_line(index, line))} - sources
        if not new:
            break
        sources |= new
        if assigned is None:
            fresh = word_lines(index, new)
        else:
            fresh = {line for name in new for line in assigned.get(name, ())}
            if class_wide is not None:  # ``self.x`` is assigned in other methods of its class
                class_wide.update(line for name in new if name.startswith("self.") for line in assigned.get(name, ()))
        fresh -= hit_lines | found
        found |= fresh
    return found


def in_same_function(found: set[int], hit_lines: set[int], functions: list[tuple[int, int]]) -> set[int]:
    """The lines of ``found`` whose innermost function also holds a line of ``hit_lines``.
    A ``def`` line of ``found`` binds its name in the function around that definition."""

    starts = [start for start, _ in functions]

    def innermost(line: int, *, binding: bool) -> tuple[int, int] | None:
        # Functions nest: the innermost holding ``line`` is the last-starting one that does.
        for position in range(bisect.bisect_right(starts, line) - 1, -1, -1):
            start, end = functions[position]
            if line <= end and not (binding and start == line):
                return functions[position]
        return None

    wanted = {innermost(line, binding=False) for line in hit_lines}
    return {line for line in found if innermost(line, binding=True) in wanted}


def assignment_lines(index: LineIndex, window: Stretch) -> dict[str, list[int]]:
    """Lines that bind a plain name (``x = ...``, ``x: T = ...``, ``def x``, ``class x``)
    in ``window`` (offsets from a line start), by name: one pass."""
    lines: dict[str, list[int]] = {}
    for match in _ASSIGNMENT.finditer(index.text, *window):
        group = match.lastindex or 0
        lines.setdefault(match.group(group), []).append(index.line_of(match.start(group)))
    return lines


def _from_line(index: LineIndex, line: int) -> str:
    """A token's line and the two after it: a statement may go on (``hasattr(`` ... ``self, "x")``)."""
    return "".join(index.line_text(n) for n in range(line, min(line + 3, len(index.starts) + 1)))
