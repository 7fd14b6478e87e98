"""Line numbers and offsets of a text: 1-based lines, offsets into the text."""

from __future__ import annotations

import bisect
import re
from typing import Iterable, Mapping, Sequence

_NEWLINE = re.compile("\n")
# Offsets in a file's text, from a line start to a line end (the next line's start).
Stretch = tuple[int, int]


class LineIndex:
    def __init__(self, text: str, starts: list[int] | None = None) -> None:
        """``starts``: the line starts of ``text`` when known (those of a text with the
        same line breaks, such as its ``code_text``)."""
        self.text = text
        self.starts = starts if starts is not None else [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def line_text(self, line: int) -> str:
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[self.starts[line - 1] : end]

    def line_end(self, line: int) -> int:
        """The offset just past ``line``: the next line's start, or the text's end."""
        return self.starts[line] if line < len(self.starts) else len(self.text)

    def stretch(self, first: int, last: int) -> Stretch:
        """Offsets from the start of line ``first`` to the end of line ``last``."""
        return self.starts[first - 1], self.line_end(last)

    def slice(self, first: int, last: int) -> str:
        """Lines ``first..last``, ending in a newline."""
        text = self.text[self.starts[first - 1] : self.line_end(last)]
        return text if text.endswith("\n") else text + "\n"

    def kept(self, first: int, last: int, blank: Mapping[int, str]) -> tuple[str, tuple[int, ...]]:
        """Lines ``first..last`` with a line in ``blank`` replaced by its value there (a
        line's carriage return kept) or, where that value is empty, left out; and the
        line number of each line kept."""
        rows = self.slice(first, last).split("\n")[:-1]
        kept_rows, numbers = [], []
        for number, row in enumerate(rows, start=first):
            replacement = blank.get(number)
            if replacement == "":
                continue
            if replacement is not None:
                row = replacement + ("\r" if row.endswith("\r") else "")
            kept_rows.append(row)
            numbers.append(number)
        return "\n".join(kept_rows) + "\n", tuple(numbers)


class LineSet:
    """A sorted set of line numbers with range queries."""

    def __init__(self, lines: Iterable[int]) -> None:
        self.sorted = sorted(set(lines))

    def within(self, first: int, last: int) -> list[int]:
        low = bisect.bisect_left(self.sorted, first)
        return self.sorted[low : bisect.bisect_right(self.sorted, last, low)]

    def any_within(self, first: int, last: int) -> bool:
        low = bisect.bisect_left(self.sorted, first)
        return low < len(self.sorted) and self.sorted[low] <= last


def file_line(line: int, offset: int, file_lines: Sequence[int] | None) -> int:
    """The file line of ``line`` of a region's text (see ``plan.Region.file_lines``); a
    line past its last one (where a node's end may point) follows the last file line."""
    if file_lines is None:
        return line + offset
    if line <= len(file_lines):
        return file_lines[line - 1]
    return file_lines[-1] + line - len(file_lines)
