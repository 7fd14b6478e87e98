"""The demo line helper reads defects.md, so tests follow the demo when it changes."""

from __future__ import annotations

from demo_lines import DEFECTS_MD, defect_lines


def test_every_planted_defect_has_its_line_from_defects_md():
    lines = defect_lines()
    assert sorted(lines) == ["a", "b", "c", "d", "e"]
    rows = DEFECTS_MD.read_text(encoding="utf-8").splitlines()
    row_a = next(r for r in rows if r.startswith("| (a) |"))
    assert f"| {lines['a']} |" in row_a
