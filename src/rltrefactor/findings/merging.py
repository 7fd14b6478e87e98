"""Findings of one problem become one finding that names every rule that saw it.

Two findings are one problem when they are of one area, in one definition, alike in
status, neither suppressed nor a measurement alone, of different rules, and

- they flag one expression: one span equals or contains the other; or
- the later one is a consequence of the earlier: it starts on the line right after the
  earlier one ends, in the same function, and its flagged code reads a name that the
  earlier line assigns from its flagged code (``n = x.item()`` then
  ``torch.tensor([n], device=d)``: the upload of a value just read back).

The finding first by location, then rule id, stays: its fingerprint, span and texts are
kept (so baselines and suppressions keep matching it), it takes the most severe severity
of the group and names the other rules (``also_rules``) and their impacts (as notes). The others
become ``merged-into-finding`` drops.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable

from ..severity import SEVERITIES
from ..matching.rule_findings import with_evidence
from ..types import Drop, Finding, Span

# ``a = ...``, ``a, b = ...``, ``self.a: T = ...``: the names a line assigns, as written.
_ASSIGNED = re.compile(r"\s*(?P<targets>[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*(?::[^=]*)?=(?!=)")


def merge_findings(findings: list[Finding], head_text: Callable[[str], str]) -> tuple[list[Finding], list[Drop]]:
    """One finding per problem (see the module's text); ``head_text``: a file's head text."""
    buckets: dict[tuple[str, str, str, str], list[Finding]] = {}
    kept: list[Finding] = []
    for finding in sorted(findings, key=_order):
        if _mergeable(finding):
            buckets.setdefault((finding.path, finding.area, finding.definition, finding.status), []).append(finding)
        else:
            kept.append(finding)
    drops: list[Drop] = []
    lines: dict[str, list[str]] = {}

    def lines_of(path: str) -> list[str]:
        if path not in lines:
            lines[path] = head_text(path).splitlines()
        return lines[path]

    for bucket in buckets.values():
        for group in _problems(bucket, lines_of):
            kept.append(_merged(group))
            drops.extend(Drop(other, "merged-into-finding") for other in group[1:])
    return kept, drops


def _problems(bucket: list[Finding], lines_of: Callable[[str], list[str]]) -> list[list[Finding]]:
    """``bucket`` (findings of one path, area, definition and status, in order) split into
    problems, each in order."""
    leader = list(range(len(bucket)))  # union-find: each finding's group, by its first member

    def find(index: int) -> int:
        while leader[index] != index:
            leader[index] = leader[leader[index]]
            index = leader[index]
        return index

    for later, finding in enumerate(bucket):
        for earlier in range(later):
            if _one_problem(bucket[earlier], finding, lines_of):
                first, second = sorted((find(earlier), find(later)))
                leader[second] = first
    groups: dict[int, list[Finding]] = {}
    for index, finding in enumerate(bucket):
        groups.setdefault(find(index), []).append(finding)
    return list(groups.values())


def _order(finding: Finding) -> tuple[str, int, int, str]:
    return finding.path, finding.span.line, finding.span.column, finding.rule_id


def _mergeable(finding: Finding) -> bool:
    return not finding.suppressed and (finding.perf is None or finding.confirmed)


def _one_problem(earlier: Finding, later: Finding, lines_of: Callable[[str], list[str]]) -> bool:
    """Whether two findings of one bucket, ``earlier`` first, are one problem."""
    if earlier.rule_id == later.rule_id:
        return False
    if _contains(earlier.span, later.span) or _contains(later.span, earlier.span):
        return True
    if later.definition == "<module>" or later.span.line != earlier.span.end_line + 1:
        return False
    return _reads_what_it_assigns(earlier, later, lines_of(earlier.path))


def _contains(outer: Span, inner: Span) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and (
        (outer.end_line, outer.end_column) >= (inner.end_line, inner.end_column))


def _reads_what_it_assigns(earlier: Finding, later: Finding, lines: list[str]) -> bool:
    """``later``'s flagged code reads a name that ``earlier``'s line assigns from the code
    ``earlier`` flags."""
    if not 0 < earlier.span.line <= len(lines) or not later.span.end_line <= len(lines):
        return False
    assignment = _ASSIGNED.match(lines[earlier.span.line - 1])
    if assignment is None or assignment.end() > earlier.span.column - 1:
        return False  # not an assignment, or the flagged code is not its value
    flagged = flagged_code(lines, later.span)
    names = (name.strip() for name in assignment.group("targets").split(","))
    return any(re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", flagged) for name in names)


def flagged_code(lines: list[str], span: Span) -> str:
    """The code ``span`` covers in a file of these lines."""
    if span.line == span.end_line:
        return lines[span.line - 1][span.column - 1 : span.end_column - 1]
    inner = lines[span.line : span.end_line - 1]
    return "\n".join([lines[span.line - 1][span.column - 1 :], *inner, lines[span.end_line - 1][: span.end_column - 1]])


def _merged(group: list[Finding]) -> Finding:
    """The group's first finding, naming the others' rules and impacts."""
    first, others = group[0], group[1:]
    if not others:
        return first
    severity = min((f.severity for f in group), key=SEVERITIES.index)
    also_rules = tuple(dict.fromkeys((*first.also_rules, *(f.rule_id for f in others))))
    notes = [
        f"Also {f.rule_id}" + ("" if f.span.line == first.span.line else f" at line {f.span.line}") + f": {f.impact}"
        for f in others
    ]
    confirmed = next((f for f in group if f.confirmed), None)
    merged = replace(
        first, severity=severity, also_rules=also_rules, notes=(*first.notes, *notes),
        confirmed=confirmed is not None, perf=first.perf if first.confirmed or confirmed is None else confirmed.perf,
    )
    if confirmed is not None and not first.confirmed:  # the measurement that confirms the problem is its evidence
        merged = with_evidence(merged, confirmed.evidence)
    return merged
