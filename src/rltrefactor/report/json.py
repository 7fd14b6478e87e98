"""``--format json``: the documented, versioned machine-readable result.

Schema ``rltrefactor/review/v1``; fields are only ever added, never renamed or removed,
within a schema version.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from .. import __version__
from ..findings.result import ReviewResult
from ..types import BaseLocation, Finding
from .paths import escape_document, quote_path

if TYPE_CHECKING:
    from ..findings.baseline import BaselineReport

SCHEMA = "rltrefactor/review/v1"


def finding_record(finding: Finding) -> dict[str, object]:
    record: dict[str, object] = {
        "rule": finding.rule_id,
        "area": finding.area,
        "title": finding.title,
        "severity": finding.severity,
        "path": quote_path(finding.path),
        "line": finding.span.line,
        "column": finding.span.column,
        "end_line": finding.span.end_line,
        "end_column": finding.span.end_column,
        "definition": finding.definition,
        "impact": finding.impact,  # one sentence: what this code costs
        "evidence": finding.evidence,  # at most one line: where it runs, or what was measured on its line
        "notes": list(finding.notes),  # the caveats and context of the claim (what --explain adds)
        "fix": finding.fix,
        "fingerprint": finding.fingerprint,
        "status": finding.status,
        "suppressed": finding.suppressed,
        "disposition": finding.disposition,
        "confirmed": finding.confirmed,
    }
    if finding.execution:
        record["execution"] = {"context": finding.execution, "evidence": finding.execution_evidence}
        record["confidence"] = finding.confidence
    if finding.also_at:
        record["also_at"] = list(finding.also_at)
    if finding.also_rules:
        record["also_rules"] = list(finding.also_rules)  # rules that flagged the same problem
    if finding.moved_from is not None:
        record["moved_from"] = _base_location(finding.moved_from)
    if finding.perf is not None:
        record["perf"] = asdict(finding.perf)
    return record


def _base_location(origin: BaseLocation) -> dict[str, str]:
    return {"path": quote_path(origin.path), "definition": origin.definition}


def render_json(
    result: ReviewResult, *, show_preexisting: bool = True, baseline: "BaselineReport | None" = None
) -> str:
    change = result.change
    document = {
        "schema": SCHEMA,
        "tool": {"name": "rltrefactor", "version": __version__},
        "library": {"version": result.library_version, "rules": [rule.id for rule in result.rules_run]},
        "reviewed": {
            "description": change.description,
            "base": change.base,
            "head": change.head.ref if change.head.kind == "git" else change.head.kind,
            "files": [quote_path(path) for path in result.files_reviewed],
            "unreviewable": [quote_path(path) for path in result.files_unreviewable],
        },
        "findings": [
            finding_record(f) for f in result.findings if show_preexisting or f.status == "new"
        ],
        "errors": [{"path": quote_path(e.path), "line": e.line, "message": e.message} for e in result.errors],
        "changed_functions": [
            {"path": quote_path(f.path), "definition": f.qualname, "context": f.execution, "evidence": f.evidence}
            for f in result.changed_functions
        ],
        "summary": {
            "findings": len(result.findings),
            "failing": len(result.failing),
            "suppressed": sum(f.suppressed for f in result.findings),
            "pre_existing": sum(f.status == "pre-existing" for f in result.findings),
            "fail_on": result.fail_on,
            "unreviewable": len(result.files_unreviewable),
            "fail_on_unreviewable": result.fail_on_unreviewable,
            "moved_to_run_less": result.improvements,
            "unknown_frequency": result.unknown_frequency,
            "new_code_rules": result.new_code_rules,
        },
        # Improvements: code the change moved to where it runs less often (its finding is pre-existing).
        "moved_to_run_less": [
            {"rule": m.rule_id, "path": quote_path(m.path), "line": m.line, "definition": m.definition,
             "moved_from": _base_location(m.moved_from), "why": m.why}
            for m in result.moved_to_run_less
        ],
    }
    if baseline is not None:
        document["baseline"] = baseline.to_dict()
    if result.perf is not None:
        from ..perf.summary import changes_to_list
        from ..perf.unmeasured import not_measured_record

        perf = result.perf
        document["perf"] = {
            "device": perf.device,
            "checks": list(perf.checks),
            "deltas": [{**asdict(d), "added": d.added} for d in perf.deltas],  # removals are improvements
            "per_check": changes_to_list(perf),  # counts added and removed (improvements) per check
            "errors": [{"path": quote_path(e.path), "line": e.line, "message": e.message} for e in perf.errors],
            "wall_seconds": round(perf.wall_seconds, 3),
            "artifacts_dir": perf.artifacts_dir,
            # Changed per-step code no check reached: a clean result says nothing about it.
            "not_measured": [not_measured_record(f) for f in perf.not_measured],
            "tests": asdict(perf.tests) if perf.tests is not None else None,  # selected, left out, unstable
        }
    # Names in messages and evidence too: the document must encode as UTF-8.
    return json.dumps(escape_document(document), indent=2, ensure_ascii=False) + "\n"
