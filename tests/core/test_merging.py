"""One finding per problem: findings of several rules on one expression, or on the line
right after that uses what it produced, become one finding naming every rule."""

from __future__ import annotations

import json

import pytest

from rltrefactor.config import Config
from rltrefactor.findings.baseline import recorded_hits, write_baseline
from rltrefactor.findings.finishing import Matched, finish
from rltrefactor.findings.merging import merge_findings
from rltrefactor.findings.result import ReviewResult
from rltrefactor.library.loader import load_library
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.report.json import render_json
from rltrefactor.report.text import render_text
from rltrefactor.types import ChangedFile, ChangeSet, Finding, Revision, Span

HOT = "model_executor/runner.py"
COPY = "host-to-device-copy-per-call"
PAGEABLE = "non-blocking-copy-from-pageable-memory"
SYNC = "host-sync-in-hot-path"
RULES = (COPY, PAGEABLE, SYNC, "device-allocation-never-read")


def _engine(*rules: str) -> Engine:
    library = load_library()
    config = Config(select=rules, hot_functions=("forward",))  # declared: device reads are errors
    return Engine(select_rules(library, config), config, frozenset(r.id for r in library.rules))


@pytest.fixture(scope="module")
def engine() -> Engine:
    return _engine(*RULES)


def _finish(engine: Engine, body: str):
    text = "import torch\n\n\nclass Runner:\n    def forward(self, x, lst, lens):\n" + body
    change = ChangeSet(None, Revision("worktree"), (ChangedFile(HOT, "added"),), full_scan=True)
    outcome = engine.review_file(HOT, text)
    return finish(Matched(change, {HOT: change.files[0]}, (outcome,), {HOT: text}, "lines", engine, engine.rules))


def _found(finished) -> list[tuple]:
    return [(f.span.line, f.rule_id, f.also_rules) for f in finished.findings]


def test_both_pageable_copy_rules_on_one_line_are_one_finding(engine):
    finished = _finish(engine, '        ids = torch.tensor(lst).to("cuda", non_blocking=True)\n        return ids\n')
    assert _found(finished) == [(6, COPY, (PAGEABLE,))]
    (finding,) = finished.findings
    assert [n for n in finding.notes if n.startswith(f"Also {PAGEABLE}:")] and "Also" not in finding.impact
    assert [(d.finding.rule_id, d.reason) for d in finished.drops] == [(PAGEABLE, "merged-into-finding")]
    # The finding that stays keeps the fingerprint its rule gives it alone.
    (alone,) = _finish(_engine(COPY), '        ids = torch.tensor(lst).to("cuda", non_blocking=True)\n        return ids\n').findings
    assert finding.fingerprint == alone.fingerprint


def test_a_merged_finding_shows_both_ids_and_records_both_hits(engine, tmp_path):
    finished = _finish(engine, '        ids = torch.tensor(lst).to("cuda", non_blocking=True)\n        return ids\n')
    result = ReviewResult(
        ChangeSet(None, Revision("worktree"), (ChangedFile(HOT, "added"),), full_scan=True), "1", (), (HOT,),
        finished.findings, finished.drops,
    )
    assert f"{COPY}, {PAGEABLE}" in render_text(result)
    (record,) = json.loads(render_json(result))["findings"]
    assert (record["rule"], record["also_rules"]) == (COPY, [PAGEABLE])
    assert sorted(f.rule_id for f in recorded_hits(result)) == [COPY, PAGEABLE]
    assert len(write_baseline(result, str(tmp_path / "baseline.json")).entries) == 2


def test_a_suppressed_finding_does_not_merge(engine):
    body = f'        ids = torch.tensor(lst).to("cuda", non_blocking=True)  # rltrefactor: ignore[{PAGEABLE}] pinned upstream\n        return ids\n'
    finished = _finish(engine, body)
    assert [(f.rule_id, f.also_rules, f.suppressed) for f in finished.findings] == [(COPY, (), False), (PAGEABLE, (), True)]


def test_an_upload_of_the_value_read_on_the_line_before_is_one_finding_of_the_stronger_severity(engine):
    # ``lens.cuda()``: the function shows the value on the device, so the sync is certain.
    finished = _finish(engine, '        n = lens.cuda().sum().item()\n        t = torch.tensor([n], device="cuda")\n        return t\n')
    assert _found(finished) == [(6, SYNC, (COPY,))]
    assert finished.findings[0].severity == "error"  # the sync's, stronger than the copy's warning
    assert [n for n in finished.findings[0].notes if n.startswith(f"Also {COPY} at line 7:")]


def test_a_copy_two_lines_after_a_sync_with_other_work_between_stays_separate(engine):
    body = '        n = lens.sum().item()\n        m = n * 2\n        t = torch.tensor([n, m], device="cuda")\n        return t\n'
    assert _found(_finish(engine, body)) == [(6, SYNC, ()), (8, COPY, ())]


def test_a_copy_right_after_a_sync_of_something_else_stays_separate(engine):
    body = '        n = lens.sum().item()\n        t = torch.tensor(lst, device="cuda")\n        return t, n\n'
    assert _found(_finish(engine, body)) == [(6, SYNC, ()), (7, COPY, ())]


def test_a_sync_and_an_allocation_beside_it_on_one_line_stay_two_findings(engine):
    body = '        m = torch.zeros(4, device="cuda"); v = x.item()\n        return v\n'
    assert _found(_finish(engine, body)) == [(6, "device-allocation-never-read", ()), (6, SYNC, ())]


def _finding(rule_id: str, area: str, span: Span, severity: str = "warning") -> Finding:
    return Finding(rule_id, area, "t", severity, HOT, span, f"{rule_id} impact", "fix", f"fp-{rule_id}",
                   definition="Runner.forward", snippet="        v = torch.zeros(int(x.item()))")


def test_findings_of_different_areas_on_one_expression_stay_apart():
    sync = _finding(SYNC, "device-residency", Span(6, 13, 6, 43))
    allocation = _finding("shape-from-host-value", "interfaces", Span(6, 13, 6, 43))
    kept, drops = merge_findings([allocation, sync], lambda path: "")
    assert sorted(f.rule_id for f in kept) == sorted([SYNC, "shape-from-host-value"]) and drops == []


def test_the_first_by_location_then_rule_id_stays_whatever_the_input_order():
    outer = _finding("b-rule", "device-residency", Span(6, 13, 6, 43), "info")
    inner = _finding("a-rule", "device-residency", Span(6, 29, 6, 37), "error")
    same_span = _finding("a-other", "device-residency", Span(6, 13, 6, 43))
    for findings in ([outer, inner, same_span], [same_span, inner, outer]):
        (kept,), drops = merge_findings(findings, lambda path: "")
        assert (kept.rule_id, kept.fingerprint, kept.also_rules, kept.severity) == (
            "a-other", "fp-a-other", ("b-rule", "a-rule"), "error")
        assert len(drops) == 2
