"""Which findings ``# rltrefactor: ignore[rule-id] reason`` directives silence, decided
once for every source of findings (static, measured, baselined)."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from ..source.directives import INVALID_SUPPRESSION, parse_suppressions
from ..types import Finding


def mark_suppressed(findings: Iterable[Finding], text: str) -> list[Finding]:
    """``findings`` of one file (``text``, as reviewed), those a directive names on their
    first or last line marked suppressed with its reason, whatever produced them.

    An ``invalid-suppression`` finding reports a directive and is never silenced by one.
    """
    directives = parse_suppressions(text) if "rltrefactor:" in text else {}
    marked = []
    for finding in findings:
        directive = directives.get(finding.span.line) or directives.get(finding.span.end_line)
        if directive is not None and finding.rule_id in directive.rule_ids and finding.rule_id != INVALID_SUPPRESSION:
            finding = replace(finding, suppressed=True, disposition=directive.reason or None)
        marked.append(finding)
    return marked
