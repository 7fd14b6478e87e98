"""Baselines: accept today's findings by fingerprint, report stale entries, count duplicates."""

from __future__ import annotations

import json

import pytest

from rltrefactor.findings.baseline import Baseline, BaselineEntry, apply_baseline, load_baseline, write_baseline
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
    assert document["version"] == 2
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
        ('{"version": 2,\n "entries": [}', r"baseline\.json:2: baseline: invalid JSON \("),
        ('{"version": 7, "entries": []}', r"baseline: unsupported format \(got version 7, expected 2\)"),
        ("[]", r"baseline: expected a JSON object \(got list\)"),
        ('{"version": 2, "entries": {}}', r"baseline: 'entries' must be a list \(got dict\)"),
        ('{"version": 2, "entries": [{"path": "a.py"}]}', r"baseline: entry 0 needs string fields"),
        ('{"version": 1, "entries": []}',
         r"^[^\n]*baseline\.json: baseline: written by an older rltrefactor \(got format 1, expected 2\); "
         r"run 'rltrefactor baseline --update' to refresh it$"),
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


# Whole-pipeline baselines, on real repositories.

HOT = "model_executor/runner.py"
ONE_READ = "import torch\n\n\ndef forward(x):\n    a = x.sum().item()\n    b = a + 1\n    c = b * 2\n    return c\n"
TWO_READS = ONE_READ.replace("    return c\n", "    e = x.sum().item()\n    return c + e\n")


def _record(repo, tmp_path, *, update=False):
    from rltrefactor.api import BaselineRequest, ReviewRequest, record_baseline

    path = str(tmp_path / "baseline.json")
    request = BaselineRequest(ReviewRequest(repo=str(repo.path), use_cache=False), path, update=update)
    return path, record_baseline(request)


def _review(repo, baseline, **request):
    """The fixtures' module-level functions run at an unknown frequency: their findings are shown."""
    from rltrefactor.api import ReviewRequest, review_change

    return review_change(ReviewRequest(repo=str(repo.path), use_cache=False, baseline=baseline,
                                       show_unknown_frequency=True, **request))


def _syncs(report):
    return [(f.span.line, f.also_at) for f in report.result.findings if f.rule_id == "host-sync-in-hot-path"]


def test_a_second_copy_beside_a_baselined_hit_is_reported(repo, tmp_path):
    repo.write(HOT, ONE_READ)
    repo.commit("base")
    path, _ = _record(repo, tmp_path)
    repo.write(HOT, TWO_READS)
    repo.commit("read again")
    for source in ({"diff": "HEAD~1..HEAD"}, {"paths": (str(repo.path),)}):
        report = _review(repo, path, **source)
        assert _syncs(report) == [(8, ())], source
        assert report.result.gate_failed and _warnings(report) == ()
    # A full scan also meets the baselined hit: the finding says which of the lines is new.
    (finding,) = [f for f in report.result.findings if f.rule_id == "host-sync-in-hot-path"]
    assert "New beside the baselined hit at line 5 of this rule here." in finding.notes
    assert "baselined" not in finding.impact


def test_a_copy_added_above_a_baselined_hit_is_reported(repo, tmp_path):
    """The new copy comes first in the function: numbering by position alone would give it
    the baselined hit's identity and hide it."""
    repo.write(HOT, ONE_READ)
    repo.commit("base")
    path, _ = _record(repo, tmp_path)
    repo.write(HOT, ONE_READ.replace("def forward(x):\n", "def forward(x):\n    z = x.sum().item()\n"))
    repo.commit("read first")
    report = _review(repo, path, diff="HEAD~1..HEAD")
    assert _syncs(report) == [(5, ())]
    assert report.result.gate_failed and report.baseline.matched == 0


def test_a_baselined_function_with_repeats_stays_silent_and_a_diff_review_reports_no_stale_entries(repo, tmp_path):
    repo.write(HOT, TWO_READS)
    repo.write("model_executor/other.py", ONE_READ)
    repo.commit("base")
    path, recorded = _record(repo, tmp_path)
    assert len(recorded.baseline.entries) == 3  # one per hit: the repeat in ``forward`` too
    assert _syncs(_review(repo, path, paths=(str(repo.path),))) == []
    repo.write(HOT, TWO_READS.replace("    b = a + 1\n", "    b = a + 2\n"))
    repo.commit("touch nothing the baseline records")
    report = _review(repo, path, diff="HEAD~1..HEAD")
    assert _syncs(report) == [] and _warnings(report) == () and report.baseline.stale == ()


def test_stale_entries_are_counted_in_files_read_in_full_only(repo, tmp_path):
    repo.write(HOT, TWO_READS)
    repo.write("model_executor/other.py", ONE_READ)
    repo.commit("base")
    path, _ = _record(repo, tmp_path)
    repo.write(HOT, ONE_READ)
    repo.commit("drop one read")
    report = _review(repo, path, paths=(str(repo.path / HOT),))
    assert [(e.path, e.definition) for e in report.baseline.stale] == [(HOT, "forward")]
    assert _warnings(report) == (
        f"1 stale baseline entry (recorded findings that no longer occur; --format json lists them); "
        f"run 'rltrefactor baseline --update' to drop them from {path}",
    )


def test_update_drops_stale_entries_and_adds_nothing_new(repo, tmp_path):
    repo.write(HOT, TWO_READS)
    repo.commit("base")
    path, _ = _record(repo, tmp_path)
    repo.write(HOT, ONE_READ + "\n\ndef second(x):\n    return x.max().item()\n")
    repo.commit("one read gone, a new one elsewhere")
    _, refreshed = _record(repo, tmp_path, update=True)
    assert [e.definition for e in refreshed.baseline.entries] == ["forward"] and refreshed.stale == 1
    report = _review(repo, path, paths=(str(repo.path),))
    assert [(f.definition, f.span.line) for f in report.result.findings] == [("second", 12)]
    assert _warnings(report) == ()


def test_update_turns_a_format_1_baseline_into_the_current_one(repo, tmp_path):
    repo.write(HOT, TWO_READS + "\n\ndef second(x):\n    return x.max().item()\n")
    repo.commit("base")
    path = tmp_path / "baseline.json"
    old = {"path": HOT, "rule": "host-sync-in-hot-path", "definition": "forward", "fingerprint": "0123456789abcdef0123"}
    path.write_text(json.dumps({"version": 1, "entries": [old]}))
    with pytest.raises(ConfigError, match="run 'rltrefactor baseline --update' to refresh it"):
        _review(repo, str(path), paths=(str(repo.path),))
    _record(repo, tmp_path, update=True)
    assert json.loads(path.read_text())["version"] == 2
    report = _review(repo, str(path), paths=(str(repo.path),))
    assert [f.definition for f in report.result.findings] == ["second"]  # the old file recorded ``forward`` only


def test_an_old_baseline_is_one_line_naming_the_update_and_the_update_refreshes_it(repo, cli, tmp_path):
    repo.write(HOT, ONE_READ)
    repo.commit("base")
    path = tmp_path / "baseline.json"
    path.write_text('{"version": 1, "entries": []}')
    old = cli("review", "model_executor", "--show-unknown-frequency", "--baseline", str(path), cwd=repo.path)
    assert old.code == 2 and old.err.count("\n") == 1
    assert old.err.startswith(f"rltrefactor: {path}: baseline: written by an older rltrefactor")
    assert old.err.rstrip().endswith("run 'rltrefactor baseline --update' to refresh it")
    updated = cli("baseline", "--update", "-o", str(path), cwd=repo.path)
    assert updated.code == 0 and updated.err == f"rltrefactor: refreshed {path}: 0 finding(s) kept, 0 stale entry(ies) dropped\n"
    assert cli("review", "model_executor", "--show-unknown-frequency", "--baseline", str(path), cwd=repo.path).code == 1  # nothing was accepted


def _warnings(report):
    """The review's warnings but the standing note on experimental rules."""
    return tuple(w for w in report.warnings if "experimental bundled rule" not in w)
