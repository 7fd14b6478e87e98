"""GitHub Actions workflow commands: one annotation per finding on the PR's diff.

Only what a reviewer must act on is annotated: suppressed findings (already
dispositioned) and pre-existing ones (not introduced by the change) are left out.
Escaping follows the Actions toolkit: ``%``, CR and LF in the message; additionally
``:`` and ``,`` in property values, whose syntax uses them as separators.
"""

from __future__ import annotations

from ..findings.result import ReviewResult
from ..types import FileError, Finding
from .paths import escape_undecodable, quote_path

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def render_github(result: ReviewResult) -> str:
    lines = [_finding_command(f) for f in _actionable(result.findings)]
    lines.extend(_error_command(e) for e in result.errors)
    return escape_undecodable("".join(line + "\n" for line in lines))


def _actionable(findings: tuple[Finding, ...]) -> list[Finding]:
    kept = [f for f in findings if not f.suppressed and f.status == "new"]
    return sorted(kept, key=lambda f: (f.path, f.span.line, f.span.column, f.rule_id))


def _finding_command(finding: Finding) -> str:
    span = finding.span
    # Spans end exclusively; annotations take the last column itself.
    end_column = max(span.column, span.end_column - 1)
    props = {
        "file": quote_path(finding.path),
        "line": str(span.line),
        "endLine": str(span.end_line),
        "col": str(span.column),
        "endColumn": str(end_column),
        "title": f"{finding.rule_id}: {finding.title}",
    }
    message = " ".join(part for part in (finding.impact, finding.evidence, f"Fix: {finding.fix}") if part)
    return _command(COMMANDS[finding.severity], props, message)


def _error_command(error: FileError) -> str:
    props = {"file": quote_path(error.path), "title": "rltrefactor: file not reviewed"}
    if error.line is not None:
        props["line"] = str(error.line)
    return _command("warning", props, error.message)


def _command(name: str, props: dict[str, str], message: str) -> str:
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in props.items())
    return f"::{name} {rendered}::{escape_data(message)}"


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
