"""The final pass over findings: every source of findings goes through it once."""

from __future__ import annotations

import pytest

from rltrefactor.api import ReviewRequest, review
from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.findings.finishing import HeldBackShown, Matched, finish
from rltrefactor.library.loader import load_library
from rltrefactor.perf import perf_findings
from rltrefactor.perf.records import PerfDelta, PerfSummary
from rltrefactor.types import ChangedFile, ChangeSet, Revision

HOT = "model_executor/runner.py"


@pytest.fixture(scope="module")
def engine():
    library = load_library()
    config = Config(select=("host-sync-in-hot-path", "device-synchronize-in-hot-path", "invalid-suppression"))
    return Engine(select_rules(library, config), config, frozenset(r.id for r in library.rules))


def _finish(engine, text: str, measured=(), show_unknown_frequency=True):
    """A full scan of one file, through the final pass (its module-level functions run at
    an unknown frequency: shown unless asked otherwise)."""
    change = ChangeSet(None, Revision("worktree"), (ChangedFile(HOT, "added", added_lines=frozenset()),), full_scan=True)
    outcome = engine.review_file(HOT, text)
    return finish(Matched(change, {HOT: change.files[0]}, (outcome,), {HOT: text}, "lines", engine, engine.rules,
                          measured=tuple(measured)), shown=HeldBackShown(unknown_frequency=show_unknown_frequency))


def test_a_full_scan_holds_back_unknown_frequency_but_keeps_suppressed_and_measured(engine):
    text = ("def helper(x):\n    return x.item()\n"
            "def other(x):\n    return x.item()  # rltrefactor: ignore[host-sync-in-hot-path] once per request\n"
            "def third(x):\n    n = x.nonzero()\n")
    summary, measured = _measured_sync(6, "n = x.nonzero()")
    finished = _finish(engine, text, measured, show_unknown_frequency=False)
    assert [(f.span.line, f.rule_id, f.suppressed) for f in finished.findings] == [
        (4, "host-sync-in-hot-path", True), (6, "perf-added-sync", False)]
    assert [(d.finding.span.line, d.reason) for d in finished.drops if d.reason == "unknown-frequency"] == [
        (2, "unknown-frequency")]


def test_suppression_marks_the_finding_and_keeps_the_reason(engine):
    text = "def forward(x):\n    return x.item()  # rltrefactor: ignore[host-sync-in-hot-path] once per request\n"
    (finding,) = _finish(engine, text).findings
    assert finding.suppressed and finding.disposition == "once per request"


def test_suppression_for_another_rule_does_not_silence(engine):
    text = "def forward(x):\n    return x.item()  # rltrefactor: ignore[device-synchronize-in-hot-path] wrong id\n"
    (finding,) = _finish(engine, text).findings
    assert not finding.suppressed


def test_an_invalid_suppression_is_never_silenced_by_itself(engine):
    text = "def forward(x):\n    return x + 1  # rltrefactor: ignore[invalid-suppression]\n"
    (finding,) = _finish(engine, text).findings
    assert finding.rule_id == "invalid-suppression" and not finding.suppressed


def _measured_sync(line: int, source: str) -> tuple[PerfSummary, tuple]:
    delta = PerfDelta("checks:step", "sync", HOT, line, source, 0, 1, "cpu")
    summary = PerfSummary("cpu", ("checks:step",), (delta,))
    return summary, perf_findings(summary)


def test_a_measured_addition_is_suppressed_like_any_finding(engine):
    text = "def forward(x):\n    n = x.nonzero()  # rltrefactor: ignore[perf-added-sync] measured once per request\n"
    summary, measured = _measured_sync(2, "n = x.nonzero()")
    (finding,) = _finish(engine, text, measured).findings
    assert finding.rule_id == "perf-added-sync"
    assert finding.suppressed and finding.disposition == "measured once per request"


def test_a_suppression_of_the_static_rule_does_not_silence_the_measurement(engine):
    text = "def forward(x):\n    n = x.nonzero()  # rltrefactor: ignore[host-sync-in-hot-path] not this rule\n"
    summary, measured = _measured_sync(2, "n = x.nonzero()")
    (finding,) = _finish(engine, text, measured).findings
    assert finding.rule_id == "perf-added-sync" and not finding.suppressed


def test_a_measured_sync_on_a_static_finding_is_one_finding_marked_confirmed(engine):
    text = "def forward(x):\n    return x.sum().item()\n"
    summary, measured = _measured_sync(2, "return x.sum().item()")
    finished = _finish(engine, text, measured)
    (finding,) = finished.findings
    assert finding.rule_id == "host-sync-in-hot-path" and finding.confirmed
    assert finding.perf is not None and (finding.perf.check, finding.perf.head_count) == ("checks:step", 1)
    assert [d.reason for d in finished.drops] == ["confirms-finding"]


def test_the_review_result_carries_the_manual_checklist(repo):
    repo.write(HOT, "def forward(x):\n    return x\n")
    repo.commit("base")
    repo.write(HOT, "def forward(self, x, num_loops):\n    for depth in range(num_loops):\n        x = self.block(x)\n    return x\n")
    result = review(ReviewRequest(repo=str(repo.path), diff="HEAD", use_cache=False))
    assert "loop-semantics" in {rule.area for rule in result.checklist}
    assert all(not rule.automated for rule in result.checklist)


def test_repeats_merge_within_one_definition_only(engine):
    text = (
        "def forward(x):\n    a = x.sum().item()\n    b = x.sum().item()\n    return a + b\n\n\n"
        "def backward(x):\n    a = x.sum().item()\n    return a\n"
    )
    finished = _finish(engine, text)
    found = [(f.span.line, f.definition, f.also_at) for f in finished.findings]
    assert found == [(2, "forward", (3,)), (8, "backward", ())]
    assert [(d.finding.span.line, d.reason) for d in finished.drops] == [(3, "repeat-in-function")]


def test_module_level_hits_are_never_merged():
    from rltrefactor.findings.repeats import group_repeats
    from rltrefactor.types import Finding, Span

    def at(line):
        return Finding("r", "a", "t", "error", HOT, Span(line, 1, line, 9), "i", "f", "fp", snippet="x.item()")

    kept, drops = group_repeats([at(3), at(4)])
    assert [(f.span.line, f.also_at) for f in kept] == [(3, ()), (4, ())] and drops == []


def test_the_perf_command_honours_suppressions_too(repo):
    from rltrefactor.api import MeasureResult
    from rltrefactor.findings.finishing import finish_measured

    repo.write(HOT, "def forward(x):\n    n = x.nonzero()  # rltrefactor: ignore[perf-added-sync] measured once per request\n")
    change = ChangeSet(str(repo.path), Revision("worktree"), ())
    summary, measured = _measured_sync(2, "n = x.nonzero()")
    (finding,) = finish_measured(change, measured)
    assert finding.suppressed and finding.disposition == "measured once per request"
    assert not MeasureResult(summary, (finding,), "warning").gate_failed
