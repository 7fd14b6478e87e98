"""SARIF 2.1.0 for code-scanning services (GitHub code scanning, IDE viewers).

Invariants: one ``reportingDescriptor`` per rule that ran, in library order, so
``ruleIndex`` is stable for a given library; a rule's texts (``fullDescription``, ``help``)
travel once, in the descriptor of a rule with results (a rule that found nothing is named
by its title only), and a result carries only its own short message; results are sorted by location; the
``rltrefactor/v1`` partial fingerprint is the finding's fingerprint, which excludes
line numbers, so a result keeps its identity when unrelated lines move.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import quote

from ..library.model import Rule
from ..findings.result import ReviewResult
from ..types import FileError, Finding
from .links import TOOL_NAME, rule_url, tool_version, web_repo
from .paths import escape_document, name_bytes, quote_path

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
FINGERPRINT_KEY = "rltrefactor/v1"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
# GitHub code scanning reads these two rule properties to rank and label alerts.
_GITHUB_SEVERITY = {"error": "error", "warning": "warning", "info": "recommendation"}
_SRCROOT = "SRCROOT"


def render_sarif(
    result: ReviewResult, *, docs_url: str | None = None, remote_url: str | None = None
) -> str:
    """The review as a SARIF 2.1.0 log (one run), as indented JSON text; rules link into
    ``docs_url`` only when it is given (their help text is always there)."""
    rules = _descriptor_rules(result)
    index = {rule_id: i for i, (rule_id, _) in enumerate(rules)}
    reported = {f.rule_id for f in result.findings}
    run: dict[str, Any] = {
        "tool": {"driver": _driver(rules, docs_url, reported)},
        "invocations": [_invocation(result.errors)],
        "results": [_result(f, index[f.rule_id]) for f in _ordered(result.findings)],
        "columnKind": "unicodeCodePoints",
        "properties": {
            "libraryVersion": result.library_version,
            "range": result.change.description,
            "filesReviewed": len(result.files_reviewed),
        },
    }
    provenance = _provenance(result, remote_url)
    if provenance is not None:
        run["versionControlProvenance"] = [provenance]
    if result.change.repo_root:
        root = Path(result.change.repo_root).resolve().as_uri().rstrip("/") + "/"
        run["originalUriBaseIds"] = {_SRCROOT: {"uri": root}}
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    # Names in messages and snippets too: the log must encode as UTF-8.
    return json.dumps(escape_document(log), indent=2, ensure_ascii=False) + "\n"


def _descriptor_rules(result: ReviewResult) -> list[tuple[str, Rule | Finding]]:
    """Rules that ran, then any rule id a finding names that is not among them.

    The second group keeps every ``ruleIndex`` valid even for a finding whose rule
    was not in ``rules_run``; its descriptor is built from the finding itself.
    """
    rules: list[tuple[str, Rule | Finding]] = [(r.id, r) for r in result.rules_run]
    known = {rule_id for rule_id, _ in rules}
    for finding in result.findings:
        if finding.rule_id not in known:
            known.add(finding.rule_id)
            rules.append((finding.rule_id, finding))
    return rules


def _driver(rules: Sequence[tuple[str, Rule | Finding]], docs_url: str | None, reported: set[str]) -> dict[str, Any]:
    version = tool_version()
    driver: dict[str, Any] = {"name": TOOL_NAME, "version": version, "semanticVersion": version}
    if docs_url:
        driver["informationUri"] = docs_url
    driver["rules"] = [
        _descriptor(r, docs_url, texts=rule_id in reported) if isinstance(r, Rule) else _descriptor_from_finding(r, docs_url)
        for rule_id, r in rules
    ]
    return driver


def _with_help_uri(descriptor: dict[str, Any], url: str | None) -> dict[str, Any]:
    return {**descriptor, "helpUri": url} if url else descriptor


def _descriptor(rule: Rule, docs_url: str | None, *, texts: bool) -> dict[str, Any]:
    """``texts``: the rule has results here, so its problem and help travel with it."""
    tags = [rule.area] + ([] if rule.automated else ["manual"])
    if rule.status != "active":
        tags.append(rule.status)
    described: dict[str, Any] = {"id": rule.id, "name": rule.id, "shortDescription": {"text": rule.title}}
    if texts:
        described["fullDescription"] = {"text": rule.problem.strip()}
        described["help"] = {"text": _help(rule, markdown=False), "markdown": _help(rule, markdown=True)}
    return _with_help_uri({
        **described,
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {
            "area": rule.area,
            "severity": rule.severity,
            "confidence": rule.confidence,
            "fixSafety": rule.fix_safety,
            "tags": tags,
            "precision": rule.confidence,
            "problem.severity": _GITHUB_SEVERITY[rule.severity],
        },
    }, rule_url(rule.anchor, docs_url))


def _descriptor_from_finding(finding: Finding, docs_url: str | None) -> dict[str, Any]:
    return _with_help_uri({
        "id": finding.rule_id,
        "name": finding.rule_id,
        "shortDescription": {"text": finding.title},
        "defaultConfiguration": {"level": LEVELS[finding.severity]},
        "properties": {"area": finding.area, "severity": finding.severity, "tags": [finding.area]},
    }, rule_url(finding.rule_id, docs_url))


def _help(rule: Rule, *, markdown: bool) -> str:
    sections = [
        ("Problem", rule.problem),
        ("Preferred approach", rule.preferred),
        ("Reasonable exceptions", rule.exceptions),
    ]
    head = "## {}\n\n{}" if markdown else "{}:\n{}"
    parts = [head.format(title, body.strip()) for title, body in sections]
    parts.append(f"Fix safety: {rule.fix_safety}")
    if rule.references:
        bullet = "- " if markdown else "  "
        refs = "\n".join(bullet + ref for ref in rule.references)
        parts.append(("## References\n\n" if markdown else "References:\n") + refs)
    return "\n\n".join(parts)


def _ordered(findings: Sequence[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.path, f.span.line, f.span.column, f.rule_id))


def _result(finding: Finding, rule_index: int) -> dict[str, Any]:
    span = finding.span
    region: dict[str, Any] = {
        "startLine": span.line,
        "startColumn": span.column,
        "endLine": span.end_line,
        "endColumn": span.end_column,
    }
    if finding.snippet:
        region["snippet"] = {"text": finding.snippet}
    location = {
        "physicalLocation": {
            "artifactLocation": _artifact(finding.path),
            "region": region,
        },
        "logicalLocations": [{"fullyQualifiedName": finding.definition}],
    }
    entry: dict[str, Any] = {
        "ruleId": finding.rule_id,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": " ".join(part for part in (finding.impact, finding.evidence, f"Fix: {finding.fix}") if part)},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT_KEY: finding.fingerprint},
        "baselineState": "unchanged" if finding.status == "pre-existing" else "new",
        "properties": _result_properties(finding),
    }
    if finding.suppressed:
        suppression: dict[str, Any] = {"kind": "inSource", "status": "accepted"}
        if finding.disposition:
            suppression["justification"] = finding.disposition
        entry["suppressions"] = [suppression]
    return entry


def _artifact(path: str) -> dict[str, Any]:
    """A repo-relative path as a URI reference: the bytes of its name, percent-encoded
    where a URI needs it (spaces, ``#``, every non-ASCII byte). A name that is not valid
    UTF-8 is also given, git-quoted, as the location's description."""
    location: dict[str, Any] = {"uri": quote(name_bytes(path), safe="/"), "uriBaseId": _SRCROOT}
    quoted = quote_path(path)
    if quoted != path:
        location["description"] = {"text": quoted}
    return location


def _result_properties(finding: Finding) -> dict[str, Any]:
    # The rule's own texts are in its descriptor; a result carries what is its own.
    props: dict[str, Any] = {"area": finding.area, "fix": finding.fix}
    if finding.confidence:
        props["confidence"] = finding.confidence
    if finding.notes:
        props["notes"] = list(finding.notes)
    if finding.confirmed:
        props["confirmedByPerf"] = True
    if finding.perf is not None:
        props["perf"] = {
            "check": finding.perf.check,
            "category": finding.perf.category,
            "baseCount": finding.perf.base_count,
            "headCount": finding.perf.head_count,
            "device": finding.perf.device,
            "detail": finding.perf.detail,
        }
    return props


def _invocation(errors: Sequence[FileError]) -> dict[str, Any]:
    """Per-file errors become notifications: the run still succeeded."""
    notes = []
    for error in errors:
        physical: dict[str, Any] = {"artifactLocation": _artifact(error.path)}
        if error.line is not None and error.line >= 1:
            physical["region"] = {"startLine": error.line}
        notes.append(
            {
                "level": "error",
                "message": {"text": error.message},
                "locations": [{"physicalLocation": physical}],
            }
        )
    return {"executionSuccessful": True, "toolExecutionNotifications": notes}


def _provenance(result: ReviewResult, remote_url: str | None) -> dict[str, Any] | None:
    """Base and head commits, when the review read a git range."""
    change = result.change
    head = change.head.ref if change.head.kind == "git" else None
    if head is None and change.base is None:
        return None
    repo = web_repo(remote_url)
    if repo is not None:
        uri = repo.base
    elif change.repo_root:
        uri = Path(change.repo_root).resolve().as_uri()
    else:
        return None
    details: dict[str, Any] = {"repositoryUri": uri, "mappedTo": {"uriBaseId": _SRCROOT}}
    if head:
        details["revisionId"] = head
    if change.base:
        details["properties"] = {"baseRevisionId": change.base}
    return details
