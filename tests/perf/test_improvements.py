"""Removed syncs, copies and allocations are shown per check as improvements, beside the
additions, in every review format and in the perf command's own reports."""

from __future__ import annotations

import json

from rltrefactor.report.perf import perf_to_dict, render_perf_text
from rltrefactor.perf.summary import changes_by_check
from rltrefactor.report.json import render_json
from rltrefactor.report.markdown import render_markdown
from rltrefactor.report.text import render_text
from rltrefactor.perf.records import PerfCheckTotals, PerfDelta, PerfDeviceEvidence, PerfSummary, PerfTotals
from rltrefactor.findings.result import ReviewResult
from rltrefactor.types import ChangedFile, ChangeSet, Revision

CHECK = "perf_hooks.engine:decode_step"
OTHER = "perf_hooks.engine:prefill"


def _delta(check, category, line, base, head, source):
    return PerfDelta(check, category, "eng/runner.py", line, source, base, head, "cpu")


SUMMARY = PerfSummary(
    device="cpu",
    checks=(CHECK, OTHER),
    deltas=(
        _delta(CHECK, "sync", 12, 0, 2, "n = int(lengths.max())"),
        _delta(CHECK, "alloc", 14, 0, 1, "buf = torch.zeros(4)"),
        _delta(CHECK, "sync", 30, 49, 2, "done = bool(flags.any())"),
        _delta(CHECK, "copy", 31, 1, 0, "host = tokens.cpu()"),
        _delta(OTHER, "alloc", 40, 3, 1, "mask = ids > 0"),
    ),
    device_evidence=PerfDeviceEvidence(totals={CHECK: PerfCheckTotals(PerfTotals(49, 1, 0), PerfTotals(4, 0, 1))}),
)


def _result(summary: PerfSummary = SUMMARY) -> ReviewResult:
    change = ChangeSet(repo_root=None, head=Revision("git", "b" * 40), base="a" * 40, description="main...HEAD",
                       files=(ChangedFile("eng/runner.py", "modified", added_lines=frozenset({12})),))
    return ReviewResult(change=change, library_version="1.0.0", rules_run=(), files_reviewed=("eng/runner.py",),
                        findings=(), perf=summary)


def test_changes_by_check_count_additions_and_removals_apart():
    decode, prefill = changes_by_check(SUMMARY)
    assert (decode.check, decode.added, decode.removed) == (CHECK, PerfTotals(sync=2, alloc=1), PerfTotals(sync=47, copy=1))
    assert (prefill.check, prefill.added, prefill.removed) == (OTHER, PerfTotals(), PerfTotals(alloc=2))


def test_review_text_shows_improvements_per_check_beside_the_additions():
    text = render_text(_result())
    assert f"  {CHECK}  added +2 sync, +1 alloc · improvements -47 sync, -1 copy\n" in text
    assert f"  {OTHER}  improvements -2 alloc\n" in text
    assert f"  improvement -47 sync at eng/runner.py:30 — done = bool(flags.any())  [{CHECK}]\n" in text
    assert "improvement +" not in text  # additions are findings, not listed here


def test_review_text_says_nothing_of_perf_without_deltas():
    text = render_text(_result(PerfSummary(device="cpu", checks=(CHECK,), deltas=())))
    assert "improvement" not in text and "Perf hook" not in text


def test_review_json_carries_per_check_improvements_and_marks_each_delta():
    perf = json.loads(render_json(_result()))["perf"]
    assert perf["per_check"][0] == {"check": CHECK, "added": {"sync": 2, "copy": 0, "alloc": 1, "race": 0},
                                    "removed": {"sync": 47, "copy": 1, "alloc": 0, "race": 0}}
    assert [d["added"] for d in perf["deltas"]] == [True, True, False, False, False]


def test_review_markdown_lists_improvements_per_check_above_the_table():
    text = render_markdown(_result())
    assert (f"- `{CHECK}`: added +2 sync, +1 alloc · improvements -47 sync, -1 copy\n"
            f"- `{OTHER}`: improvements -2 alloc\n\n| Check |") in text


def test_perf_command_text_and_json_show_the_same_per_check_changes():
    text = render_perf_text(SUMMARY)
    assert f"  {CHECK}  covers \n    per call: base sync 49 copy 1 alloc 0 -> head sync 4 copy 0 alloc 1\n" \
           "    added +2 sync, +1 alloc · improvements -47 sync, -1 copy\n" in text
    assert json.loads(json.dumps(perf_to_dict(SUMMARY)))["per_check"][1]["removed"] == {"sync": 0, "copy": 0, "alloc": 2, "race": 0}
