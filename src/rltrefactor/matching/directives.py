"""Findings for ``# rltrefactor: ignore[...]`` directives that cannot be honoured: no rule
named, no reason given, or ids the library does not have.

They carry the rule's own severity here; where the directive named a finding on its line
that it cannot silence, ``findings.suppression`` raises it to that finding's severity."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from ..library.fields import closest
from ..source.directives import Suppression, parse_suppressions
from ..types import Definition, Finding, Span
from .rule_findings import rule_finding

if TYPE_CHECKING:
    from ..library.model import Rule


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
            impact = (f"This suppression {directive.problem.split(';')[0]}, so it silences nothing: the findings on "
                      "its line still report, and reviewers could not tell why they were not adopted.")
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
    named = ", ".join(repr(u) for u in unknown)
    rules = "rule" if len(unknown) == 1 else "rules"
    impact = f"This suppression names unknown {rules} {named}: it silences nothing, so the finding it was meant for still reports."
    fixes = []
    for rule_id in unknown:
        near = closest(rule_id, sorted(known_ids))
        fixes.append(f"write {near!r} for {rule_id!r}" if near else f"check {rule_id!r} with 'rltrefactor rules list'")
    fix = "; ".join(fixes)
    return impact, fix[:1].upper() + fix[1:] + "."
