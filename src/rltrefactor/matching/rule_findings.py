"""What identifies a finding, and how its texts are filled in."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from dataclasses import replace

from ..context.execution import FREQUENCY_UNKNOWN
from ..severity import at_least
from ..types import Finding, Span

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

    from ..context.execution import FunctionExecution
    from ..library.model import Rule

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
    rule: "Rule", path: str, span: Span, *, impact: str, fix: str, definition: str, matched_text: str, snippet: str,
    guards: tuple[str, ...] = (),
) -> Finding:
    """A finding of ``rule``: its id, area, title and severity, fingerprinted by what matched
    and the conditions it runs under (``guards_at``)."""
    return Finding(
        rule_id=rule.id,
        area=rule.area,
        title=rule.title,
        severity=rule.severity,
        path=path,
        span=span,
        impact=impact,
        fix=fix,
        fingerprint=fingerprint(rule.id, definition, matched_text, guards),
        definition=definition,
        snippet=snippet,
    )


def fingerprint(rule_id: str, definition: str, matched_text: str, guards: tuple[str, ...] = ()) -> str:
    """Identity of a hit that survives line shifts, re-indentation and re-wrapping, but not
    a change of the conditions it runs under (a removed ``if``, code moved out of a ``try``).

    Equal identities in one file are told apart by ``number_occurrences``."""
    normalised = normalise_code(matched_text)
    chain = "".join(f"\0{guard}" for guard in guards)  # none: the identity of unguarded code is unchanged
    digest = hashlib.sha256(f"{rule_id}\0{definition}\0{normalised}{chain}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:20]


# Statements and clauses whose body runs only under a condition (or a failure, or a loop).
_GUARDS = frozenset({
    "if_statement", "elif_clause", "else_clause", "try_statement", "except_clause", "except_group_clause",
    "finally_clause", "for_statement", "while_statement", "match_statement", "case_clause",
})
# Parts of a guard that run under it (its body and later clauses), not in its header.
_GUARDED_PARTS = frozenset({"block", "elif_clause", "else_clause", "except_clause", "except_group_clause",
                            "finally_clause", "case_clause"})
_DEFINITIONS = frozenset({"function_definition", "class_definition"})


def guards_at(tree: "Tree", line: int, byte_column: int) -> tuple[str, ...]:
    """Headers of the conditions, handlers and loops around the code starting at ``line``
    (1-based) and ``byte_column`` (0-based), innermost first, up to the enclosing
    definition; each normalised, comments left out. Under an ``else``, the chain holds the
    ``else`` and the ``if`` it belongs to."""
    point = (line - 1, byte_column)
    node: Node | None = tree.root_node.descendant_for_point_range(point, point)
    chain: list[str] = []
    child: Node | None = None
    while node is not None and node.type not in _DEFINITIONS:
        if node.type in _GUARDS and child is not None and child.type in _GUARDED_PARTS:
            chain.append(_header(node))
        child, node = node, node.parent
    return tuple(chain)


def _header(node: "Node") -> str:
    parts = []
    for child in node.children:
        if child.type in _GUARDED_PARTS:
            break
        if child.type != "comment":
            parts.append((child.text or b"").decode("utf-8", "surrogatepass"))
    return normalise_code(" ".join(parts))


def number_occurrences(
    findings: Iterable[Finding], heads: Mapping[str, Sequence[Finding]],
    changed: Mapping[str, frozenset[int]] | None = None,
) -> list[Finding]:
    """Each finding's fingerprint with its index among the hits of equal identity in its
    file (``-0`` for the first): the identity of one hit. Hits on unchanged lines are
    counted first, in the order they appear, then those touching ``changed`` lines (a
    review's added lines, by path): an unchanged hit keeps the index it had at the base,
    so a copy added before it can never take its identity (and its baseline entry).

    ``heads``: every hit of the head revision for each path where the findings are only
    part of them (a review matched around the changed lines); elsewhere the findings
    themselves are all the hits."""
    found = list(findings)
    changed = changed or {}
    order: dict[tuple[str, str], list[tuple[bool, int, int, str]]] = {}
    for path in {f.path for f in found}:
        lines = changed.get(path, frozenset())
        for hit in heads.get(path) or [f for f in found if f.path == path]:
            order.setdefault((path, hit.fingerprint), []).append(_place(hit, lines))
    numbered = []
    for finding in found:
        places = sorted(order.get((finding.path, finding.fingerprint), ()))
        here = _place(finding, changed.get(finding.path, frozenset()))
        index = places.index(here) if here in places else sum(place < here for place in places)
        numbered.append(replace(finding, fingerprint=f"{finding.fingerprint}-{index}"))
    return numbered


def _place(hit: Finding, changed: frozenset[int]) -> tuple[bool, int, int, str]:
    touched = any(line in changed for line in range(hit.span.line, hit.span.end_line + 1))
    return touched, hit.span.line, hit.span.column, hit.rule_id


def with_evidence(finding: Finding, line: str) -> Finding:
    """``finding`` with ``line`` as its one line of evidence; evidence it had becomes a note."""
    notes = (finding.evidence, *finding.notes) if finding.evidence and finding.evidence != line else finding.notes
    return replace(finding, evidence=line, notes=notes)


def with_note(finding: Finding, note: str) -> Finding:
    """``finding`` with one more caveat (shown by ``--explain``, never in the default view)."""
    return finding if not note or note in finding.notes else replace(finding, notes=(*finding.notes, note))


# Why a finding outside the configured per-step code is a warning (a note of its finding).
_WARNING_NOT_ERROR = "Reported as a warning, not an error, until `hot-functions` or `hot-paths` says it runs per step."


def with_execution(finding: Finding, rule: "Rule", where: "FunctionExecution | None") -> Finding:
    """Say where the flagged code runs (its evidence, or a note where it is unknown). An
    ``error`` needs per-step code the configuration declares (``hot-functions``,
    ``hot-paths``); anywhere else it is reported as a ``warning``, and a note says why.
    Where the verdict rests on a name, or how often the code runs is unknown, a rule's
    high confidence drops to medium."""
    if where is not None and where.kind == "per-step":
        found = with_evidence(finding, f"Per-step code: {where.evidence}.")
        if where.basis == "configuration":
            return replace(found, execution="per-step", execution_evidence=where.evidence, confidence=rule.confidence)
        # Measured on engines the rules were not written from, per-step verdicts read from
        # the code were not true often enough for an error: only the configuration makes one.
        lowered = at_least(finding.severity, "error")
        found = with_note(found, _WARNING_NOT_ERROR if lowered else "")
        return replace(
            found, execution="per-step", execution_evidence=where.evidence,
            # A name, or a chain that may start from one, is weaker evidence than a model or a decorator.
            confidence="medium" if where.basis in ("name", "call-chain") and rule.confidence == "high" else rule.confidence,
            severity="warning" if lowered else finding.severity,
        )
    if where is None:
        evidence = "module-level code"
    elif where.evidence.startswith(FREQUENCY_UNKNOWN):  # the call index says why
        evidence = where.evidence.removeprefix(FREQUENCY_UNKNOWN)
    else:
        evidence = f"nothing shows how often `{where.qualname}` runs"
    lowered = at_least(finding.severity, "error")
    found = with_note(finding, f"How often this runs is not visible here: {evidence}; it is not set-up, test or tooling code.")
    return replace(
        with_note(found, _WARNING_NOT_ERROR if lowered else ""), execution="unknown", execution_evidence=evidence,
        confidence="medium" if rule.confidence == "high" else rule.confidence,
        severity="warning" if lowered else finding.severity,
    )


def with_unknown_residency(finding: Finding, value: str, missing: str = "") -> Finding:
    """A rule about device values whose value the function does not show on the device
    (nor on the host): the claim becomes conditional (a note saying which fact is missing),
    at low confidence, never an error."""
    lowered = at_least(finding.severity, "error")
    found = with_note(finding, f"Where `{quoted(value)}` lives is not visible in this function: nothing here places it "
                               f"on the device or the host{f' ({missing})' if missing else ''}. If it is a host tensor, "
                               f"there is no device wait here.")
    return replace(found, confidence="low", severity="warning" if lowered else finding.severity)
