"""What identifies a finding, and how its texts are filled in."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Mapping

from dataclasses import replace

from .severity import at_least
from .types import Finding, Span

if TYPE_CHECKING:
    from .execution import FunctionExecution
    from .library.model import Rule

_TEMPLATE_VAR = re.compile(r"\$([A-Z][A-Z0-9_]*)")
_WHITESPACE = re.compile(r"\s+")
_CONTINUATION = re.compile(r"\\\r?\n")
_AFTER_OPENER = re.compile(r"([(\[{]) ")
_BEFORE_CLOSER = re.compile(r" ?,? ?([)\]}])")


def normalise_code(text: str) -> str:
    """Code as one line, the same however it is wrapped: ``f(\n    a,\n)`` reads ``f(a)``.

    Code written on one line in the usual style is left as it is, so identities of
    single-line findings do not change."""
    text = _WHITESPACE.sub(" ", _CONTINUATION.sub(" ", text)).strip()
    return _BEFORE_CLOSER.sub(r"\1", _AFTER_OPENER.sub(r"\1", text))


# Longest code quoted whole in a finding's text; longer code is quoted by its first line.
QUOTED_CHARS = 80


def fill_template(template: str, bindings: Mapping[str, str]) -> str:
    """``template`` with each ``$NAME`` replaced by the code it matched, quoted on one line."""
    return _TEMPLATE_VAR.sub(lambda m: quoted(bindings[m.group(1)]) if m.group(1) in bindings else m.group(0), template)


def quoted(code: str) -> str:
    """Code as a sentence quotes it: one line, without comments; code wrapped over several
    lines is joined when short, else its first line stands for it, ending in ``…``."""
    if "\n" not in code:
        return code
    lines = [_without_comment(line).rstrip() for line in code.splitlines()]
    joined = normalise_code("\n".join(line for line in lines if line.strip()))
    if len(joined) <= QUOTED_CHARS:
        return joined
    return lines[0].rstrip() + "…"


def _without_comment(line: str) -> str:
    """``line`` up to a ``#`` that starts a comment (not one inside a string literal)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote and line[index - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char == "#":
            return line[:index]
    return line


def rule_finding(
    rule: "Rule", path: str, span: Span, *, impact: str, fix: str, definition: str, matched_text: str, snippet: str
) -> Finding:
    """A finding of ``rule``: its id, area, title and severity, fingerprinted by what matched."""
    return Finding(
        rule_id=rule.id,
        area=rule.area,
        title=rule.title,
        severity=rule.severity,
        path=path,
        span=span,
        impact=impact,
        fix=fix,
        fingerprint=fingerprint(rule.id, definition, matched_text),
        definition=definition,
        snippet=snippet,
    )


def fingerprint(rule_id: str, definition: str, matched_text: str) -> str:
    """Identity of a finding that survives line shifts, re-indentation and re-wrapping."""
    normalised = normalise_code(matched_text)
    digest = hashlib.sha256(f"{rule_id}\0{definition}\0{normalised}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:20]


def with_execution(finding: Finding, rule: "Rule", where: "FunctionExecution | None") -> Finding:
    """Say where the flagged code runs. Where that is unknown, a rule's confidence drops
    to medium and an ``error`` is reported as a ``warning``, saying why: an error needs
    per-step code that a call chain or the configuration proves."""
    if where is not None and where.kind == "per-step":
        return replace(
            finding, execution="per-step", execution_evidence=where.evidence, confidence=rule.confidence,
            impact=f"{finding.impact} (Per-step code: {where.evidence}.)",
        )
    evidence = "module-level code" if where is None else f"nothing shows how often `{where.qualname}` runs"
    lowered = at_least(finding.severity, "error")
    note = " Reported as a warning, not an error, until a call chain or `hot-functions` shows it runs per step." if lowered else ""
    return replace(
        finding, execution="unknown", execution_evidence=evidence,
        confidence="medium" if rule.confidence == "high" else rule.confidence,
        severity="warning" if lowered else finding.severity,
        impact=f"{finding.impact} (How often this runs is not visible here: {evidence}; it is not set-up, test or tooling code.{note})",
    )
