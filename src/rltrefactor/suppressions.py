"""``# rltrefactor: ignore[rule-id] reason`` comments, and findings for broken ones.

Only a real comment counts (never text inside a string), and only when the directive
opens the comment or follows another ``#`` in it: prose that merely mentions the
directive mid-sentence suppresses nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from .rule_findings import rule_finding
from .types import Definition, Finding, Span

if TYPE_CHECKING:
    from .library.model import Rule

INVALID_SUPPRESSION = "invalid-suppression"

_DIRECTIVE = re.compile(r"^#(?:[^#]*#)*?\s*rltrefactor:\s*ignore(?P<rest>.*)$")
_IDS = re.compile(r"^\[(?P<ids>[^\]]*)\]\s*(?P<reason>.*)$")
_REASON_LEAD = re.compile(r"^[-:—–]+\s*")


@dataclass(frozen=True)
class Suppression:
    line: int
    column: int  # 1-based column of the comment
    rule_ids: tuple[str, ...]
    reason: str
    problem: str = ""  # non-empty when the directive itself is malformed


def parse_suppressions(text: str) -> dict[int, Suppression]:
    """Suppression directives by line."""
    found: dict[int, Suppression] = {}
    for line, column, comment in _comments(text):
        match = _DIRECTIVE.match(comment)
        if match is None:
            continue
        found[line] = _parse_directive(line, column, match.group("rest"))
    return found


def _parse_directive(line: int, column: int, rest: str) -> Suppression:
    ids_match = _IDS.match(rest.strip())
    if ids_match is None:
        return Suppression(line, column, (), "", problem="names no rule; write ignore[rule-id] followed by a reason")
    ids = tuple(part.strip() for part in ids_match.group("ids").split(",") if part.strip())
    reason = _REASON_LEAD.sub("", ids_match.group("reason").strip()).strip()
    if not ids:
        return Suppression(line, column, (), reason, problem="names no rule; write ignore[rule-id] followed by a reason")
    if not reason:
        return Suppression(line, column, ids, "", problem="gives no reason; add why the finding is not adopted after the ']'")
    return Suppression(line, column, ids, reason)


def _comments(text: str) -> Iterator[tuple[int, int, str]]:
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.start[1] + 1, token.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # An untokenizable file is already reported as a syntax error; no directives.
        return


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


def invalid_suppressions(
    path: str, text: str, enclosing: Callable[[int], Definition], known_ids: frozenset[str], report_as: "Rule"
) -> list[Finding]:
    """Findings of ``report_as`` (the ``invalid-suppression`` rule) for directives that
    cannot be honoured; ``enclosing(line)`` gives the definition around a line."""
    return _invalid_suppressions(path, text, enclosing, parse_suppressions(text).values(), known_ids, report_as)


def _invalid_suppressions(
    path: str, text: str, enclosing: Callable[[int], Definition], directives: Iterable[Suppression], known_ids: frozenset[str], rule: "Rule"
) -> list[Finding]:
    out = []
    lines = text.splitlines()
    for directive in directives:
        unknown = [rule_id for rule_id in directive.rule_ids if rule_id not in known_ids]
        if directive.problem:
            impact = f"This suppression {directive.problem.split(';')[0]}: reviewers cannot tell why the finding was not adopted."
            fix = directive.problem.split("; ", 1)[-1].capitalize() + "."
        elif unknown:
            impact, fix = _unknown_ids(unknown, known_ids)
        else:
            continue
        source = lines[directive.line - 1]
        comment = source[directive.column - 1 :]
        span = Span(directive.line, directive.column, directive.line, len(source) + 1)
        definition = enclosing(directive.line).qualname
        out.append(
            rule_finding(
                rule, path, span, impact=impact, fix=fix, definition=definition, matched_text=comment, snippet=source
            )
        )
    return out


def _unknown_ids(unknown: list[str], known_ids: frozenset[str]) -> tuple[str, str]:
    """Impact and fix for a directive naming ids the library does not have (usually a typo)."""
    from .library.fields import closest

    named = ", ".join(repr(u) for u in unknown)
    rules = "rule" if len(unknown) == 1 else "rules"
    impact = f"This suppression names unknown {rules} {named}: it silences nothing, so the finding it was meant for still reports."
    fixes = []
    for rule_id in unknown:
        near = closest(rule_id, sorted(known_ids))
        fixes.append(f"write {near!r} for {rule_id!r}" if near else f"check {rule_id!r} with 'rltrefactor rules list'")
    fix = "; ".join(fixes)
    return impact, fix[:1].upper() + fix[1:] + "."
