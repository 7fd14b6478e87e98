"""``# rltrefactor: ignore[rule-id] reason`` comments: the directives a file's text holds.

Only a real comment counts (never text inside a string), and only when the directive
opens the comment or follows another ``#`` in it: prose that merely mentions the
directive mid-sentence suppresses nothing. Only a directive that names rules and gives a
reason silences anything (``Suppression.honoured``); which findings it silences is decided
by ``findings.suppression``, and broken directives are reported by ``matching.directives``.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Iterator

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

    @property
    def honoured(self) -> bool:
        """Whether the directive silences the rules it names: only with rule ids and a
        reason. A malformed one silences nothing, so an error it names still fails."""
        return not self.problem


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
