"""Baselines: accept today's findings by fingerprint, report stale entries, count duplicates."""

from __future__ import annotations

import json

import pytest

from rltrefactor.baseline import Baseline, BaselineEntry, apply_baseline, load_baseline, write_baseline
from rltrefactor.errors import ConfigError
from rltrefactor.types import Span


def test_round_trip_is_sorted_stable_and_skips_suppressed(rec, tmp_path):
    res = rec.result(
        rec.finding("z-rule", path="b.py", fingerprint="fz"),
        rec.finding("a-rule", path="a.py", fingerprint="fa", definition="f"),
        rec.finding("a-rule", path="a.py", fingerprint="fs", suppressed=True, disposition="why"),
    )
    path = str(tmp_path / "baseline.json")
    written = write_baseline(res, path)
    first = (tmp_path / "baseline.json").read_bytes()
    write_baseline(rec.result(*reversed(res.findings)), path)
    assert (tmp_path / "baseline.json").read_bytes() == first
    document = json.loads(first)
    assert document["version"] == 1
    assert document["entries"] == [
        {"definition": "f", "fingerprint": "fa", "path": "a.py", "rule": "a-rule"},
        {"definition": "ModelRunner.execute", "fingerprint": "fz", "path": "b.py", "rule": "z-rule"},
    ]
    assert load_baseline(path) == written


def test_apply_moves_matches_to_drops_even_when_lines_moved(rec, tmp_path):
    path = str(tmp_path / "baseline.json")
    write_baseline(rec.result(rec.finding(fingerprint="old")), path)
    moved = rec.finding(fingerprint="old", line=90, span=Span(90, 1, 90, 5))
    fresh = rec.finding(fingerprint="new", line=3)
    kept, dropped, stale = apply_baseline([moved, fresh], load_baseline(path))
    assert kept == [fresh]
    assert [(d.finding, d.reason) for d in dropped] == [(moved, "baseline")]
    assert stale == ()


def test_stale_entries_are_returned(rec):
    gone = BaselineEntry("x.py", "r", "f", "gone")
    kept_entry = BaselineEntry("model_executor/runner.py", "host-sync-in-hot-path", "ModelRunner.execute", "here")
    kept, _, stale = apply_baseline([rec.finding(fingerprint="here")], Baseline((gone, kept_entry)))
    assert kept == []
    assert stale == (gone,)


def test_matching_is_counted(rec):
    entry = BaselineEntry("a.py", "r", "f", "dup")
    three = [rec.finding(fingerprint="dup", line=n) for n in (1, 2, 3)]
    kept, dropped, stale = apply_baseline(three, Baseline((entry, entry)))
    assert [f.span.line for f in kept] == [3]
    assert len(dropped) == 2 and stale == ()
    _, _, stale = apply_baseline([rec.finding(fingerprint="dup")], Baseline((entry, entry)))
    assert stale == (entry,)


def test_suppressed_findings_are_not_absorbed(rec):
    suppressed = rec.finding(fingerprint="s", suppressed=True, disposition="why")
    entry = BaselineEntry("a.py", "r", "f", "s")
    kept, _, stale = apply_baseline([suppressed], Baseline((entry,)))
    assert kept == [suppressed]
    assert stale == (entry,)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"version": 1,\n "entries": [}', r"baseline\.json:2: baseline: invalid JSON \("),
        ('{"version": 7, "entries": []}', r"baseline: unsupported format \(got version 7, expected 1\)"),
        ("[]", r"baseline: expected a JSON object \(got list\)"),
        ('{"version": 1, "entries": {}}', r"baseline: 'entries' must be a list \(got dict\)"),
        ('{"version": 1, "entries": [{"path": "a.py"}]}', r"baseline: entry 0 needs string fields"),
    ],
)
def test_load_errors(tmp_path, content, message):
    path = tmp_path / "baseline.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_baseline(str(path))


def test_missing_baseline_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"missing\.json: baseline: file not found; "):
        load_baseline(str(tmp_path / "missing.json"))
