"""The demo defect PR's planted defects, read from the one place that lists them.

``examples/demo_prs/defects.md`` has a table row per defect (tag, area, file, line);
tests that need a planted line ask here instead of repeating its number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DEFECTS_MD = Path(__file__).resolve().parents[1] / "examples" / "demo_prs" / "defects.md"
_ROW = re.compile(r"^\| \((?P<tag>[a-z])\) \| (?P<area>[a-z-]+) \| (?P<path>[\w/.]+) \| (?P<line>\d+) \|", re.M)


@dataclass(frozen=True)
class Defect:
    tag: str  # "a".."e", as in defects.md
    area: str
    path: str  # relative to the demo repository root
    line: int  # at the head of the defect PR


def planted() -> dict[str, Defect]:
    """Every planted defect by its tag, in the order defects.md lists them."""
    rows = _ROW.finditer(DEFECTS_MD.read_text(encoding="utf-8"))
    return {m["tag"]: Defect(m["tag"], m["area"], m["path"], int(m["line"])) for m in rows}
