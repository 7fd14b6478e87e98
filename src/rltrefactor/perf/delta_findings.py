"""Perf deltas -> findings, and static findings confirmed by a measured addition of their kind.

Only additions become findings (``perf-added-sync|copy|alloc``, ``perf-copy-race``);
removals stay in ``PerfSummary.deltas`` as improvements. Rule texts come from the rule
library (the caller's, else the bundled one: the YAML entries of these ids); they may use
``$COUNT $CATEGORY $SITE $SOURCE $CHECK $DEVICE $BASE $HEAD $BYTES $OPS``, and for races
``$COPY_SITE $COPY_SOURCE $ACCESS``. A sync that is a hidden one (a non_blocking upload
from pageable memory past the measured size) says so in its evidence, with the bytes; a
delta whose measured call ran no changed code names the changed set-up line that caused it.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable, Mapping

from ..matching.rule_findings import with_evidence
from ..severity import SEVERITIES
from ..types import ChangeSet, Drop, Finding, PerfEvidence, Span
from .records import PerfDelta, PerfSummary
from .attribution import normalize_source
from .claims import claimed_kinds, counted, noun
from .copies import hidden_sync_reason
from .deltas import detail, site_label
from .races import copying_line

if TYPE_CHECKING:
    from ..library.model import Library, Rule


@lru_cache(maxsize=1)
def _bundled() -> "Library":
    from ..library.loader import load_library
    from ..matching.matchers.registry import check_matcher

    return load_library(check_rule=check_matcher)


def _rule(rule_id: str, library: "Library | None") -> "Rule":
    """The rule from the caller's library, else from the bundled one: one source."""
    for candidate in (library, _bundled()):
        for rule in candidate.rules if candidate is not None else ():
            if rule.id == rule_id:
                return rule
    raise KeyError(f"{rule_id}: not in the rule library")  # the bundled library defines every perf rule


# What a race's host access did to the copy's host side.
_ACCESS = {"download-read": "reads the destination of the non-blocking download",
           "upload-write": "writes the pinned source of the non-blocking upload"}


def _rule_id(category: str) -> str:
    return "perf-copy-race" if category == "race" else f"perf-added-{category}"


def _bindings(delta: PerfDelta, ops: str) -> dict[str, str]:
    copy = copying_line(delta.copied_by)
    return {
        "COPY_SITE": copy.site,
        "COPY_SOURCE": copy.source,
        "ACCESS": _ACCESS.get(copy.kind, ""),
        "COUNT": f"{delta.head_count - delta.base_count:+d}",
        "CATEGORY": delta.category,
        "SITE": f"{delta.path}:{delta.line}" if delta.path else "(outside the repository)",
        "SOURCE": delta.source,
        "CHECK": delta.check,
        "DEVICE": delta.device,
        "BASE": str(delta.base_count),
        "HEAD": str(delta.head_count),
        "BYTES": f"{delta.bytes_delta:+d}",
        "OPS": ops or delta.category,
    }


def _head_line(change: ChangeSet | None, path: str, line: int) -> tuple[str, str]:
    """(enclosing definition, the line as written at head); ("<module>", "") when unknown."""
    if change is None or not path:
        return "<module>", ""
    from ..change import contents
    from ..source import syntax

    text = contents.read_text(change, path)
    if not isinstance(text, str):
        return "<module>", ""
    rows = text.splitlines()
    row = rows[line - 1].rstrip() if 0 < line <= len(rows) else ""
    return syntax.definitions(text).enclosing(line).qualname, row


# A race is a wrong value, not a slow one: it outranks every cost on its line.
_PRIORITY = {"race": 0, "sync": 1, "copy": 2, "alloc": 3}


def perf_findings(summary: PerfSummary, *, change: ChangeSet | None = None,
                  library: "Library | None" = None) -> tuple[Finding, ...]:
    """One finding per line with additions, for its costliest category (race > sync > copy > alloc).

    ``x.sum().item()`` adds an allocation and a sync on one line; the sync is the finding
    and the allocation is named in its impact. ``change`` supplies enclosing definitions.
    """
    by_line: dict[tuple[str, str, int], list[PerfDelta]] = {}
    for delta in summary.deltas:
        if delta.added:
            by_line.setdefault((delta.check, delta.path, delta.line), []).append(delta)
    ops_by_site = summary.device_evidence.ops
    findings = [
        _finding(sorted(group, key=lambda d: _PRIORITY[d.category]), ops_by_site, change, library)
        for group in by_line.values()
    ]
    return tuple(sorted(findings, key=lambda f: (f.path, f.span.line, f.rule_id)))


def _finding(
    group: list[PerfDelta], ops_by_site: Mapping[str, str], change: ChangeSet | None, library: "Library | None"
) -> Finding:
    from ..matching.rule_findings import fill_template, rule_finding

    delta, also = group[0], group[1:]
    rule = _rule(_rule_id(delta.category), library)
    ops = ops_by_site.get(site_label(delta), "")
    bindings = _bindings(delta, ops)
    definition, row = _head_line(change, delta.path, delta.line)
    # Where the head line is known, the finding spans its code as a static finding would.
    snippet = row if row.strip() and normalize_source(row) == normalize_source(delta.source) else delta.source
    column = len(snippet) - len(snippet.lstrip()) + 1
    added = delta.head_count - delta.base_count
    reason = hidden_sync_reason(ops, delta.bytes_delta // added) if delta.category == "sync" and added else ""
    # One line of evidence: the changed set-up line behind it, why a sync is one, what
    # else the check added on this line.
    evidence = [f"Cause, in set-up (this line did not change): {delta.cause}."] if delta.cause else []
    if reason:
        evidence.append(f"Why it is a sync: {reason}.")
    if also:
        evidence.append("Also on this line: " + ", ".join(
            f"{d.head_count - d.base_count:+d} {d.category}" for d in also) + ".")
    found = rule_finding(
        rule, delta.path, Span(delta.line, column, delta.line, len(snippet) + 1), impact=fill_template(rule.impact, bindings),
        fix=fill_template(rule.fix, bindings), definition=definition,
        matched_text=f"{delta.check} {delta.source}", snippet=snippet,
    )
    return replace(found, perf=_evidence(delta, also), evidence=" ".join(evidence))


def _evidence(delta: PerfDelta, also: list[PerfDelta]) -> PerfEvidence:
    return PerfEvidence(delta.check, delta.category, delta.base_count, delta.head_count, delta.device, detail(delta),
                        also=tuple((d.category, d.head_count - d.base_count) for d in also))


def confirm(findings: Iterable[Finding]) -> tuple[list[Finding], list[Drop]]:
    """One finding per problem: a measured addition (a finding with ``perf`` evidence) on
    a line of a new static finding of its area (the device-residency rules) is recorded on
    that finding instead of standing beside it as a second record.

    It confirms the finding only where it measured what the rule claims (``claims``: a
    copy for ``host-to-device-copy-per-call``, a sync for ``host-sync-in-hot-path``); then
    the finding is ``confirmed``, with the measurement as its evidence, and the measured
    finding a ``confirms-finding`` drop. A measurement of other kinds does not confirm it:
    it is the finding's evidence for what it is ("Measured on this line: +1 sync, +2
    allocations"), the finding takes the more severe severity and names the measured rule
    (``also_rules``), and the measured finding is a ``merged-into-finding`` drop. Other
    measured additions stay findings of their own.
    """
    found = list(findings)
    on_line: dict[tuple[str, int], list[int]] = {}
    for index, finding in enumerate(found):
        if finding.perf is None and finding.status == "new":
            for line in range(finding.span.line, finding.span.end_line + 1):
                on_line.setdefault((finding.path, line), []).append(index)
    absorbed: set[int] = set()
    drops: list[Drop] = []
    for index, measured in enumerate(found):
        if measured.perf is None:
            continue
        same = [i for i in on_line.get((measured.path, measured.span.line), ()) if found[i].area == measured.area]
        confirming = False
        for i in same:
            if _confirms(measured.perf, found[i].rule_id):
                confirming = True
                if not found[i].confirmed:
                    found[i] = with_evidence(replace(found[i], confirmed=True, perf=measured.perf), _measurement(measured.perf))
            elif not found[i].confirmed:
                found[i] = _beside(found[i], measured)
        if same:
            absorbed.add(index)
            drops.append(Drop(measured, "confirms-finding" if confirming else "merged-into-finding"))
    return [f for i, f in enumerate(found) if i not in absorbed], drops


def _added(evidence: PerfEvidence) -> list[tuple[str, int]]:
    """Every category the check added on the line, costliest first, with its count."""
    return [(evidence.category, evidence.head_count - evidence.base_count), *evidence.also]


def _confirms(evidence: PerfEvidence, rule_id: str) -> bool:
    kinds = claimed_kinds(rule_id)
    return any(category in kinds and count > 0 for category, count in _added(evidence))


def _beside(finding: Finding, measured: Finding) -> Finding:
    """``finding`` with a measurement of other kinds than it claims, shown as what it is."""
    evidence = measured.perf
    assert evidence is not None  # only measured findings are passed
    claimed = sorted(claimed_kinds(finding.rule_id))
    unmeasured = f"; no {' or '.join(noun(kind) for kind in claimed)}, which this rule claims" if claimed else ""
    line = (f"Measured on this line: {', '.join(counted(c, n) for c, n in _added(evidence))} per call of "
            f"`{evidence.check}` on {evidence.device}{unmeasured}.")
    severity = min((finding.severity, measured.severity), key=SEVERITIES.index)
    also_rules = tuple(dict.fromkeys((*finding.also_rules, measured.rule_id)))
    return with_evidence(replace(finding, severity=severity, also_rules=also_rules), line)


def _measurement(evidence: PerfEvidence) -> str:
    return (f"Measured by the perf hook: {', '.join(counted(c, n) for c, n in _added(evidence))} per call of "
            f"`{evidence.check}` (base {evidence.base_count}, head {evidence.head_count}, on {evidence.device}).")
