"""Names for a drafted rule: an id and a title from what the fix removed and where that
code ran, else a title from the commit subject.

Where the code ran is read from the code, as a review reads it (``context.execution``:
per step, one-time, offline, unknown), and from the loops around it; the function's own
name goes only into the title's comment, since the rule is meant for code beyond the
function it came from. Ids and titles are ASCII: a commit subject's emoji,
``:shortcode:`` and typographic punctuation are left out, accents folded.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from dataclasses import dataclass
from typing import Collection

from ..config import Declared
from ..context.filemodel import FileModel
from ..library.schema import RULE_ID
from .excerpt import first_line, last_line
from .removal import Candidate


@dataclass(frozen=True)
class Place:
    """Where the fixed code ran: as a title says it, as an id spells it, and where exactly."""

    phrase: str  # "on the step path"
    words: str  # "on-step-path"
    origin: str  # "in `Runner.execute_model` (forward of a class)"


def place_of(path: str, text: str, lines: Collection[int], declared: Declared) -> Place:
    """Where the code on ``lines`` of ``text`` (the file at ``path``) ran before the fix."""
    line = min(lines)
    function = FileModel.read(path, text, declared=declared).function_at(line)
    if function is None:
        return Place("at module level", "at-module-level", "at module level")
    origin = f"in `{function.qualname}` ({function.evidence or 'where it runs is not known'})"
    if function.kind == "per-step":
        return Place("on the step path", "on-step-path", origin)
    if function.kind != "unknown":  # one-time, offline: a loop there is no hot path
        return Place(f"in {function.kind} code", f"in-{function.kind}-code", origin)
    if _in_loop(text, line, function.start_line):
        return Place("in a loop", "in-loop", origin)
    return Place("in a function", "in-function", origin)


def _in_loop(text: str, line: int, function_start: int) -> bool:
    """``line`` is in the body of a ``for`` or ``while`` within the function starting at
    ``function_start``."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    return any(
        isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and function_start <= node.lineno
        and first_line(node.body[0]) <= line <= last_line(node.body[-1])
        for node in ast.walk(tree)
    )  # fmt: skip


def draft_names(candidate: Candidate, place: Place) -> tuple[str, str] | None:
    """(id, title) naming what ``candidate`` reports and where: ``item-call-on-step-path``,
    "`.item()` called on the step path"; None when the code's names give no ASCII id."""
    verb, word = ("read", "read") if candidate.shape.kind == "attribute" else ("called", "call")
    rule_id = f"{_slug(candidate.name)}-{word}-{place.words}"
    if not _slug(candidate.name) or not RULE_ID.match(rule_id):
        return None
    return rule_id, ascii_only(f"{candidate.shown} {verb} {place.phrase}")


def draft_title(message: str) -> str:
    """A title drafted from a commit subject: first line, ASCII only (no emoji, no
    ``:shortcode:``), capitalised, no final period."""
    subject = (message.strip().splitlines() or [""])[0]
    subject = re.sub(r":[a-z0-9_+-]+:", " ", ascii_only(subject))
    subject = re.sub(r"\s+", " ", subject).strip(" -:.")
    return subject[:1].upper() + subject[1:]


def _slug(name: str) -> str:
    """``logits_to_CPU`` -> ``logits-to-cpu``; at most five words."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", ascii_only(name))
    words = [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]
    return "-".join(words[:5])


def ascii_only(text: str) -> str:
    """``text`` without emoji, non-ASCII punctuation or accents (``é`` -> ``e``)."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")

