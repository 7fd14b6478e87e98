"""The demo defect helper reads defects.md, so tests follow the demo when it changes."""

from __future__ import annotations

from demo_defects import DEFECTS_MD, planted


def test_every_planted_defect_has_its_row_from_defects_md():
    defects = planted()
    assert sorted(defects) == ["a", "b", "c", "d", "e"]
    rows = DEFECTS_MD.read_text(encoding="utf-8").splitlines()
    row_a = next(r for r in rows if r.startswith("| (a) |"))
    assert f"| {defects['a'].path} | {defects['a'].line} |" in row_a
