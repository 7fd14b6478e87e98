"""Where the demo PR's planted defects are: read from examples/demo_prs/defects.md only.

Tests that name a demo line ask here instead of repeating the number, so editing the
demo means editing defects.md and nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path

DEFECTS_MD = Path(__file__).resolve().parents[1] / "examples" / "demo_prs" / "defects.md"
_ROW = re.compile(r"^\| \((?P<tag>[a-z])\) \| [a-z-]+ \| [\w/.]+ \| (?P<line>\d+) \|", re.M)


def defect_lines() -> dict[str, int]:
    """Head line of each planted defect, by its tag in defects.md: {"a": 87, ...}."""
    lines = {m["tag"]: int(m["line"]) for m in _ROW.finditer(DEFECTS_MD.read_text(encoding="utf-8"))}
    if not lines:
        raise ValueError(f"{DEFECTS_MD}: no defect rows found; keep the table's '| (a) | area | path | line |' form")
    return lines
