"""Which findings ``# rltrefactor: ignore[rule-id] reason`` directives silence, decided
once for every source of findings (static, measured, baselined).

Invariants:

- only an honoured directive (rule ids and a reason) silences, and only the findings of
  the rules it names whose first or last line it is on;
- a directive that cannot be honoured silences nothing, and its ``invalid-suppression``
  finding is as severe as the most severe finding it was meant for (the findings of the
  rules it names on its line; every finding there when it names none), so that it never
  reads as less than what it failed to silence;
- an ``invalid-suppression`` finding reports a directive and is never silenced by one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable, Mapping, Sequence

from ..severity import SEVERITIES, Severity
from ..source.directives import INVALID_SUPPRESSION, Suppression, parse_suppressions
from ..types import FileOutcome, Finding


def mark_suppressed(findings: Iterable[Finding], text: str) -> list[Finding]:
    """``findings`` of one file (``text``, as reviewed), in their order: those an honoured
    directive silences marked suppressed with its reason, the ``invalid-suppression``
    findings of the others raised to the severity of the findings they were meant for."""
    findings = list(findings)
    directives = parse_suppressions(text) if "rltrefactor:" in text else {}
    if not directives:
        return findings
    marked = []
    meant_for: dict[int, list[Severity]] = {}  # line of a directive that cannot silence -> what it named
    for finding in findings:
        directive = _directive_for(finding, directives)
        if directive is not None and directive.honoured:
            finding = replace(finding, suppressed=True, disposition=directive.reason)
        elif directive is not None:
            meant_for.setdefault(directive.line, []).append(finding.severity)
        marked.append(finding)
    return [_raised(finding, meant_for) for finding in marked]


def mark_suppressed_per_file(
    outcomes: Sequence[FileOutcome], measured: Iterable[Finding], text_of: Callable[[str], str]
) -> tuple[list[FileOutcome], list[Finding]]:
    """``mark_suppressed`` over a review: each file's static and measured findings are
    marked together, so a directive that cannot silence a measured finding raises its
    ``invalid-suppression`` finding (a static one) too. ``text_of(path)``: the reviewed text."""
    measured_by_path: dict[str, list[Finding]] = {}
    for finding in measured:
        measured_by_path.setdefault(finding.path, []).append(finding)
    marked_outcomes: list[FileOutcome] = []
    marked_measured: list[Finding] = []
    for outcome in outcomes:
        static = len(outcome.findings)
        marked = mark_suppressed([*outcome.findings, *measured_by_path.pop(outcome.path, [])], text_of(outcome.path))
        marked_outcomes.append(replace(outcome, findings=tuple(marked[:static])))
        marked_measured.extend(marked[static:])
    for path, group in measured_by_path.items():  # measured in files the rules did not review
        marked_measured.extend(mark_suppressed(group, text_of(path)))
    return marked_outcomes, marked_measured


def _directive_for(finding: Finding, directives: Mapping[int, Suppression]) -> Suppression | None:
    """The directive on the finding's first or last line that names its rule (or names
    none: it was meant for every finding there)."""
    if finding.rule_id == INVALID_SUPPRESSION:
        return None
    for line in dict.fromkeys((finding.span.line, finding.span.end_line)):
        directive = directives.get(line)
        if directive is not None and (finding.rule_id in directive.rule_ids or not directive.rule_ids):
            return directive
    return None


def _raised(finding: Finding, meant_for: Mapping[int, list[Severity]]) -> Finding:
    """An ``invalid-suppression`` finding at least as severe as what its directive named."""
    named = meant_for.get(finding.span.line)
    if finding.rule_id != INVALID_SUPPRESSION or not named:
        return finding
    severity = min((finding.severity, *named), key=SEVERITIES.index)
    return finding if severity == finding.severity else replace(finding, severity=severity)
