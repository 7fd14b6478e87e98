"""Names for a drafted rule: an id and a title from what the fixed code does wrong and
where that code ran.

Where the code ran is read from the code, as a review reads it (``context.execution``:
per step, one-time, offline, unknown), and from the loops around it, for every changed
line: a fix may span a per-step function and a one-time one, and the draft says which
line ran where. The function's own name goes only into comments, since the rule is
meant for code beyond the function it came from. The title names what the bad code
does: the call or attribute read the fix removed, else the value it replaced, the
statement it added, or the statement it changed; never the commit subject, which says
what the fix did. Ids and titles are ASCII: emoji and typographic punctuation are left
out, accents folded.
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
from .excerpt import describe_lines, first_line, last_line
from .removal import Candidate

TITLE_CODE = 40  # characters of code a title quotes before it cuts to "..."


@dataclass(frozen=True)
class Place:
    """Where the fixed code ran: as a title says it, as an id spells it, and where exactly."""

    phrase: str  # "on the step path"
    words: str  # "on-step-path"
    origin: str  # "in `Runner.execute_model` (forward of a class)"

    @property
    def rank(self) -> int:
        """How often code here runs, most often first: a rule names the hottest place."""
        order = ("on-step-path", "in-loop", "in-function", "at-module-level", "in-one-time-code")
        return order.index(self.words) if self.words in order else len(order)


@dataclass(frozen=True)
class Places:
    """Where each changed line ran: (lines, place) groups, in line order."""

    groups: tuple[tuple[tuple[int, ...], Place], ...]

    def at(self, lines: Collection[int]) -> Place:
        """The hottest place of ``lines`` (all lines when none of them was read)."""
        chosen = [place for held, place in self.groups if set(held) & set(lines)]
        return min(chosen or [place for _, place in self.groups], key=lambda place: place.rank)

    def note(self, where: str) -> list[str]:
        """Comment lines saying which line ran where (``where``: how the lines are numbered)."""
        parts = [f"{_lines_word(lines)} {place.phrase}, {place.origin}" for lines, place in self.groups]
        text = f"Where the changed lines ran before the fix ({where}): " + "; ".join(parts) + "."
        kinds = {place.words for _, place in self.groups}
        if "on-step-path" in kinds and len(kinds) > 1:
            text += " `applies-to: {runs: per-step}` would report only the step-path lines."
        return _wrap(ascii_only(text), 84)


def places_of(path: str, text: str, lines: Collection[int], declared: Declared) -> Places:
    """Where the code on each of ``lines`` of ``text`` (the file at ``path``) ran; lines
    without code (blank, comment) are left out unless no line holds code."""
    source = text.splitlines()
    code = [n for n in sorted(set(lines)) if 0 < n <= len(source) and source[n - 1].strip()
            and not source[n - 1].lstrip().startswith("#")] or sorted(set(lines))  # fmt: skip
    model = FileModel.read(path, text, declared=declared)
    grouped: dict[Place, list[int]] = {}
    for line in code:
        grouped.setdefault(_place_at(model, text, line), []).append(line)
    return Places(tuple((tuple(held), place) for place, held in grouped.items()))


def place_of(path: str, text: str, lines: Collection[int], declared: Declared) -> Place:
    """The hottest place where the code on ``lines`` ran before the fix."""
    return places_of(path, text, lines, declared).at(lines)


def _place_at(model: FileModel, text: str, line: int) -> Place:
    function = model.function_at(line)
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


def _lines_word(lines: Collection[int]) -> str:
    return ("line " if len(lines) == 1 else "lines ") + describe_lines(lines)


def _wrap(text: str, width: int) -> list[str]:
    out: list[str] = []
    for word in text.split(" "):
        if out and len(out[-1]) + 1 + len(word) <= width:
            out[-1] += " " + word
        else:
            out.append(word)
    return out


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
    word = "read" if candidate.shape.kind == "attribute" else "call"
    rule_id = f"{_slug(candidate.name)}-{word}-{place.words}"
    if not _slug(candidate.name) or not RULE_ID.match(rule_id):
        return None
    return rule_id, candidate_title(candidate, place)


def literal_title(old: str, new: str, place: Place) -> str:
    """A title for a fix that only replaced a value: "`'cpu'` hard-coded in a function
    (the fix writes `'cuda'`)"."""
    return ascii_only(f"{_quoted(old)} hard-coded {place.phrase} (the fix writes {_quoted(new)})")


def statement_title(statement: str, place: Place, *, added: bool) -> str:
    """A title from a statement: the one the fix added ("`lock.release()` missing in a
    function"), else the one it changed ("`x.add_(t.item())` in a loop")."""
    if added:
        return ascii_only(f"{_quoted(statement)} missing {place.phrase}")
    return ascii_only(f"{_quoted(statement)} {place.phrase}")


def candidate_title(candidate: Candidate, place: Place) -> str:
    """What ``candidate`` reports, and where: "`.item()` called on the step path"."""
    verb = "read" if candidate.shape.kind == "attribute" else "called"
    return ascii_only(f"{candidate.shown} {verb} {place.phrase}")


def _quoted(code: str) -> str:
    """``code`` as a title quotes it: one line, backticks, at most ``TITLE_CODE`` characters."""
    flat = re.sub(r"\s+", " ", code.replace("`", "'")).strip()
    return f"`{flat if len(flat) <= TITLE_CODE else flat[: TITLE_CODE - 3].rstrip() + '...'}`"


def _slug(name: str) -> str:
    """``logits_to_CPU`` -> ``logits-to-cpu``; at most five words."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", ascii_only(name))
    words = [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]
    return "-".join(words[:5])


def ascii_only(text: str) -> str:
    """``text`` without emoji, non-ASCII punctuation or accents (``é`` -> ``e``)."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")

