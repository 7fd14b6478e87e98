from __future__ import annotations

from dataclasses import replace

from rltrefactor.api import ReviewRequest, review
from rltrefactor.findings.suppression import mark_suppressed, mark_suppressed_per_file
from rltrefactor.severity import Severity
from rltrefactor.source.directives import INVALID_SUPPRESSION, parse_suppressions
from rltrefactor.types import FileOutcome, Finding, Span


def test_directive_with_ids_and_reason():
    text = "x = t.item()  # rltrefactor: ignore[host-sync-in-hot-path] runs once at start-up\n"
    found = parse_suppressions(text)[1]
    assert found.rule_ids == ("host-sync-in-hot-path",)
    assert found.reason == "runs once at start-up"
    assert found.problem == ""


def test_several_ids_and_a_leading_dash_in_the_reason():
    found = parse_suppressions("y()  # rltrefactor: ignore[a-rule, b-rule] - measured, negligible\n")[1]
    assert found.rule_ids == ("a-rule", "b-rule") and found.reason == "measured, negligible"


def test_directive_after_another_comment():
    found = parse_suppressions("y()  # noqa: E501 # rltrefactor: ignore[a-rule] reason\n")
    assert found[1].rule_ids == ("a-rule",)


def test_missing_reason_and_missing_ids_are_problems():
    assert "no reason" in parse_suppressions("y()  # rltrefactor: ignore[a-rule]\n")[1].problem
    assert "names no rule" in parse_suppressions("y()  # rltrefactor: ignore\n")[1].problem
    assert "names no rule" in parse_suppressions("y()  # rltrefactor: ignore[] because\n")[1].problem


def test_prose_and_strings_that_mention_the_directive_do_not_count():
    text = (
        "# To silence it, write rltrefactor: ignore[a-rule] with a reason.\n"
        "s = '# rltrefactor: ignore[a-rule] inside a string'\n"
        'doc = """\n# rltrefactor: ignore[a-rule] in a docstring\n"""\n'
    )
    assert parse_suppressions(text) == {}


def test_untokenizable_text_yields_nothing():
    assert parse_suppressions("def f(:\n  '''unterminated\n") == {}


def test_only_a_directive_with_rules_and_a_reason_is_honoured():
    found = parse_suppressions(
        "a()  # rltrefactor: ignore[a-rule] because\n"
        "b()  # rltrefactor: ignore[a-rule]\n"
        "c()  # rltrefactor: ignore because\n"
    )
    assert [found[line].honoured for line in (1, 2, 3)] == [True, False, False]


# --- which findings a directive silences (the final pass) ---------------------------

PATH = "model_executor/runner.py"


def _finding(rule_id: str, line: int, severity: Severity = "error", *, end_line: int | None = None) -> Finding:
    return Finding(rule_id=rule_id, area="device-residency", title=rule_id, severity=severity, path=PATH,
                   span=Span(line, 5, end_line or line, 20), impact="i", fix="f", fingerprint=f"{rule_id}-{line}")


def _invalid(line: int, severity: Severity = "warning") -> Finding:
    return _finding(INVALID_SUPPRESSION, line, severity)


def _by_rule(findings: list[Finding]) -> dict[str, Finding]:
    return {f.rule_id: f for f in findings}


def test_a_directive_with_a_reason_silences_the_rule_it_names():
    text = "def f(x):\n    return x.item()  # rltrefactor: ignore[host-sync] once per request\n"
    (marked,) = mark_suppressed([_finding("host-sync", 2)], text)
    assert marked.suppressed and marked.disposition == "once per request"


def test_a_directive_without_a_reason_silences_nothing_and_is_as_severe_as_its_finding():
    text = "def f(x):\n    return x.item()  # rltrefactor: ignore[host-sync]\n"
    marked = _by_rule(mark_suppressed([_finding("host-sync", 2, "error"), _invalid(2)], text))
    assert not marked["host-sync"].suppressed and marked["host-sync"].severity == "error"
    assert marked[INVALID_SUPPRESSION].severity == "error" and not marked[INVALID_SUPPRESSION].suppressed


def test_the_most_severe_of_the_findings_it_names_sets_the_severity():
    text = "y = f(x)  # rltrefactor: ignore[info-rule, error-rule, warning-rule]\n"
    findings = [_finding("info-rule", 1, "info"), _finding("error-rule", 1, "error"), _finding("warning-rule", 1, "warning"),
                _invalid(1)]
    marked = _by_rule(mark_suppressed(findings, text))
    assert marked[INVALID_SUPPRESSION].severity == "error"
    assert not any(f.suppressed for f in marked.values())


def test_a_directive_naming_no_rule_was_meant_for_every_finding_on_its_line():
    text = "y = x.item()  # rltrefactor: ignore\n"
    marked = _by_rule(mark_suppressed([_finding("host-sync", 1, "error"), _invalid(1)], text))
    assert not marked["host-sync"].suppressed and marked[INVALID_SUPPRESSION].severity == "error"


def test_a_directive_without_a_reason_on_the_last_line_of_a_finding_counts():
    text = "y = f(\n    x.item(),\n)  # rltrefactor: ignore[host-sync]\n"
    marked = _by_rule(mark_suppressed([_finding("host-sync", 1, "error", end_line=3), _invalid(3)], text))
    assert not marked["host-sync"].suppressed and marked[INVALID_SUPPRESSION].severity == "error"


def test_an_invalid_suppression_stays_a_warning_when_it_named_nothing_there():
    text = (
        "a = x.item()  # rltrefactor: ignore[other-rule]\n"  # names a rule that did not report here
        "b = x.item()  # rltrefactor: ignore[host-sinc] typo in the id\n"  # unknown id, with a reason
        "c = 1  # rltrefactor: ignore[host-sync]\n"  # nothing on its line
        "d = x.item()\n"  # a finding on the next line is not its
    )
    findings = [_finding("host-sync", 1), _invalid(1), _finding("host-sync", 2), _invalid(2), _invalid(3),
                _finding("host-sync", 4)]
    marked = mark_suppressed(findings, text)
    assert [f.severity for f in marked if f.rule_id == INVALID_SUPPRESSION] == ["warning", "warning", "warning"]
    assert not any(f.suppressed for f in marked)


def test_the_severity_is_only_ever_raised():
    text = "y = f(x)  # rltrefactor: ignore[info-rule]\n"
    marked = _by_rule(mark_suppressed([_finding("info-rule", 1, "info"), _invalid(1, "error")], text))
    assert marked[INVALID_SUPPRESSION].severity == "error"


def test_a_measured_finding_raises_the_static_invalid_suppression_of_its_line():
    text = "def f(x):\n    n = x.nonzero()  # rltrefactor: ignore[perf-added-sync]\n"
    outcome = FileOutcome(PATH, (_invalid(2),), (), parsed_lines=2)
    measured = _finding("perf-added-sync", 2, "error")
    (marked_outcome,), (marked_measured,) = mark_suppressed_per_file([outcome], [measured], lambda path: text)
    assert marked_outcome.findings[0].severity == "error"
    assert not marked_measured.suppressed and marked_measured.path == PATH


def test_measured_findings_of_files_the_rules_did_not_review_are_still_marked():
    texts = {"a.py": "x.item()  # rltrefactor: ignore[perf-added-sync] measured, negligible\n", PATH: ""}
    elsewhere = replace(_finding("perf-added-sync", 1), path="a.py")
    outcome = FileOutcome(PATH, (_finding("host-sync", 3),), (), parsed_lines=3)
    (marked_outcome,), (marked_measured,) = mark_suppressed_per_file([outcome], [elsewhere], texts.__getitem__)
    assert marked_measured.suppressed and marked_measured.disposition == "measured, negligible"
    assert not marked_outcome.findings[0].suppressed


# --- end to end: the gate --------------------------------------------------------------

HOT = "model_executor/runner.py"
CLEAN = "import torch\n\n\ndef forward(x):\n    return x * 2\n"
CONFIG = '[tool.rltrefactor]\nfail-on = "error"\nhot-functions = ["forward"]\n'


def _syncing(comment: str) -> str:
    return f"import torch\n\n\ndef forward(x):\n    y = x.cuda() * 2\n    return y.sum().item()  {comment}\n"


def test_a_suppression_without_a_reason_fails_the_review_at_fail_on_error(repo, cli):
    repo.write("pyproject.toml", CONFIG)
    repo.write(HOT, CLEAN)
    repo.commit("base")
    repo.write(HOT, _syncing("# rltrefactor: ignore[host-sync-in-hot-path]"))
    result = review(ReviewRequest(repo=str(repo.path), diff="HEAD", use_cache=False))
    found = {(f.rule_id, f.severity, f.suppressed) for f in result.findings}
    assert found == {("host-sync-in-hot-path", "error", False), ("invalid-suppression", "error", False)}
    assert result.gate_failed
    assert cli("review", "--diff", "HEAD", cwd=repo.path).code == 1


def test_the_same_suppression_with_a_reason_passes_at_fail_on_error(repo, cli):
    repo.write("pyproject.toml", CONFIG)
    repo.write(HOT, CLEAN)
    repo.commit("base")
    repo.write(HOT, _syncing("# rltrefactor: ignore[host-sync-in-hot-path] read once per request"))
    result = review(ReviewRequest(repo=str(repo.path), diff="HEAD", use_cache=False))
    assert [(f.rule_id, f.suppressed) for f in result.findings] == [("host-sync-in-hot-path", True)]
    assert not result.gate_failed
    assert cli("review", "--diff", "HEAD", cwd=repo.path).code == 0
