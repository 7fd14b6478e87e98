"""Repeated hits of one rule become one finding that names the lines of the others."""

from __future__ import annotations

from dataclasses import replace

from ..matching.rule_findings import with_evidence, with_note
from ..types import Drop, Finding


def group_repeats(findings: list[Finding]) -> tuple[list[Finding], list[Drop]]:
    """One new finding per rule per definition: the first, naming the lines of the others.

    A reviewer acts once on a function that repeats one mistake; the repeats go to
    ``drops``. Hits in different definitions, or at module level, stay apart even where
    their code is the same: each is a place to change. Suppressed and pre-existing
    findings stay as they are."""
    ordered = sorted(findings, key=lambda f: (f.path, f.span.line, f.span.column, f.rule_id))
    first: dict[tuple[str, str, str], int] = {}
    kept: list[Finding] = []
    repeats: list[Drop] = []
    for finding in ordered:
        key = (finding.path, finding.rule_id, finding.definition)
        if finding.status != "new" or finding.suppressed or finding.definition == "<module>":
            kept.append(finding)
            continue
        index = first.get(key)
        if index is None:
            first[key] = len(kept)
            kept.append(finding)
            continue
        if finding.span.line not in kept[index].also_at and finding.span.line != kept[index].span.line:
            kept[index] = replace(kept[index], also_at=kept[index].also_at + (finding.span.line,))
        if finding.confirmed and not kept[index].confirmed:  # a measurement confirms the one finding left
            kept[index] = with_evidence(replace(kept[index], confirmed=True, perf=finding.perf), finding.evidence)
        repeats.append(Drop(finding, "repeat-in-function"))
    return [_name_repeats(f) for f in kept], repeats


def _name_repeats(finding: Finding) -> Finding:
    if not finding.also_at:
        return finding
    lines = ", ".join(str(line) for line in finding.also_at)
    where = "line" if len(finding.also_at) == 1 else "lines"
    return with_note(finding, f"The same at {where} {lines}.")
