"""``rules new``: a rule entry drafted from a real fix.

The fix is what the commit changed within ``--lines`` (numbered at ``SHA``): its hunks
give the changed lines at ``SHA`` and the lines they replaced at ``SHA^``. The bad
example is cut from ``SHA^`` and the good one from ``SHA``: the statements touching
those lines, with the headers around them and a few neighbouring lines
(``excerpt.py``). What the changed lines held before the fix and not after gives the
pattern (``removal.py``); a pattern is kept only when the draft, tried as ``rules
test`` runs it, reports its bad example's ``# expect`` lines and nothing in its good
example (``entry.py``). The id and title name what the pattern reports and where that
code ran (``naming.py``), read for every changed line; the draft says which line ran where.

A fix that changes only string or number values gives no pattern: the draft is a
checklist rule (``manual: true``), titled from the value it replaced (never from the
commit subject, which says what the fix did, not what the bad code does). A fix that
changes only comments or layout is refused. ``since`` follows the library the rule joins
(``target.py``): the repository's own, whose ``library.yaml`` the first draft writes.
The texts a reviewer writes read ``TODO``: ``rules check`` names each one until it is
written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..change.changeset import collect_changes
from ..change.git import read_blob, rev_parse
from ..config import declared_for, load_config
from ..errors import ChangeInputError, GitError
from ..library.model import AREAS
from ..library.schema import RULE_ID
from ..types import Hunk
from .entry import Draft, mark_expected, render_entry, trial
from .excerpt import cut_excerpt, describe_lines, statement_at
from .naming import Places, ascii_only, candidate_title, draft_names, literal_title, places_of, statement_title
from .removal import Candidate, change_kind, changed_literal, removed_candidates, shape_lines
from .target import TargetLibrary, bundled_target, next_version

__all__ = ["FixLines", "RuleDraft", "TargetLibrary", "fix_lines", "next_version", "parse_line_range", "scaffold_rule"]


@dataclass(frozen=True)
class RuleDraft:
    """What ``rules new`` made: the entry's YAML text, its id and its pattern (None: a
    checklist rule)."""

    rule_id: str
    entry: str
    pattern: str | None


@dataclass(frozen=True)
class FixLines:
    """The lines a fix changed, before (``old``) and after it (``new``). A side where the
    fix only deleted or only added holds the lines beside that point instead."""

    old: frozenset[int]
    new: frozenset[int]
    old_beside: bool = False  # ``old`` holds the lines beside what the fix added
    new_beside: bool = False  # ``new`` holds the lines beside what the fix deleted

    def near_code(self, old_text: str, new_text: str) -> FixLines:
        """The lines beside an addition or a deletion moved to the nearest code, past
        blank lines and comments, so that they touch a statement."""
        return replace(
            self,
            old=_near_code(old_text, self.old) if self.old_beside else self.old,
            new=_near_code(new_text, self.new) if self.new_beside else self.new,
        )


def parse_line_range(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)(?:-(\d+))?", text.strip())
    if not match or int(match.group(1)) < 1 or int(match.group(2) or match.group(1)) < int(match.group(1)):
        raise ChangeInputError(f"--lines: invalid range {text!r}; write START-END with 1 <= START <= END, such as 40-52")
    return int(match.group(1)), int(match.group(2) or match.group(1))


def fix_lines(hunks: tuple[Hunk, ...], start: int, end: int, where: str) -> FixLines:
    """The changed lines of the hunks that new lines ``start..end`` cover or border (a
    deletion just before, inside or just after them)."""
    chosen = [
        h for h in hunks
        if (h.new_length and h.new_start <= end and start <= h.new_start + h.new_length - 1)
        or (not h.new_length and start - 1 <= h.new_start <= end)
    ]  # fmt: skip
    if not chosen:
        changed = describe_lines([line for h in hunks for line in _span(h.new_start, h.new_length)] or [0])
        hint = f"it changes lines {changed} there" if hunks else "it does not change that file"
        raise ChangeInputError(f"{where}: lines {start}-{end} hold no change of the commit ({hint}); pick --lines that cover the fix")
    new = {line for h in chosen for line in _span(h.new_start, h.new_length) if start <= line <= end}
    old = {line for h in chosen for line in _span(h.old_start, h.old_length)}
    return FixLines(
        frozenset(old or {line for h in chosen for line in (h.old_start, h.old_start + 1) if line}),
        frozenset(new or {line for h in chosen for line in (h.new_start, h.new_start + 1) if line}),
        old_beside=not old, new_beside=not new,
    )


def _span(first: int, length: int) -> range:
    return range(first, first + length)


def _near_code(text: str, lines: frozenset[int]) -> frozenset[int]:
    """Each of ``lines`` that holds code, else the nearest code lines above and below it."""
    code = [n for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line.lstrip().startswith("#")]
    near: set[int] = set()
    for line in lines:
        if line in code:
            near.add(line)
            continue
        above, below = [n for n in code if n < line], [n for n in code if n > line]
        near.update(above[-1:] + below[:1])
    return frozenset(near)


def scaffold_rule(repo: str, sha: str, path: str, lines: tuple[int, int], *, rule_id: str | None = None,
                  area: str | None = None, library: TargetLibrary | None = None, config: str | None = None) -> RuleDraft:
    """A YAML rule entry (list item, two-space indented) for ``rules/<area>.yaml``.

    ``library`` is the library the rule joins (None: the bundled one).
    """
    commit = rev_parse(repo, sha)
    try:
        parent = rev_parse(repo, f"{commit}^")
    except ChangeInputError:
        raise ChangeInputError(f"{sha}: the commit has no parent; scaffold from a commit that fixes existing code") from None
    if rule_id is not None and not RULE_ID.match(rule_id):
        raise ChangeInputError(f"--id: {rule_id!r} is not a kebab-case hazard name; use lowercase words joined by '-'")
    if area is not None and area not in AREAS:
        raise ChangeInputError(f"--area: unknown area {area!r}; use one of {', '.join(AREAS)}")
    new_text = _blob(repo, commit, path, sha)
    old_text = _blob(repo, parent, path, f"{sha}^")
    change = collect_changes(repo, diff=f"{parent}..{commit}")
    hunks = next((f.hunks for f in change.files if f.path == path), ())
    fix = fix_lines(hunks, *lines, f"{path} at {sha}").near_code(old_text, new_text)
    kind = change_kind(old_text, fix.old, new_text, fix.new)
    if kind == "layout":
        raise ChangeInputError(
            f"{path} at {sha}: lines {describe_lines(fix.new)} change only comments or layout; "
            "a rule is drafted from a fix that changes code: pick --lines that cover one"
        )
    target = library or bundled_target()
    places = places_of(path, old_text, fix.old, declared_for(load_config(repo, path=config), path))
    # A fix that only added code removed nothing: its old lines are merely beside the addition.
    removed = kind == "code" and not fix.old_beside
    candidates = removed_candidates(old_text, fix.old, new_text, fix.new) if removed else []
    title, title_from = _title(old_text, new_text, fix, places, candidates)
    draft = Draft(
        rule_id or f"new-rule-from-{commit[:7]}", area, path, commit, title, title_from, target.since, target.since_note,
        bad=cut_excerpt(old_text, fix.old, f"{path} at {sha}^"), good=cut_excerpt(new_text, fix.new, f"{path} at {sha}"),
        note=_NO_PATTERN[kind], places=tuple(places.note(f"numbered at {commit[:12]}^")),
    )  # fmt: skip
    if candidates:
        draft = _with_pattern(draft, candidates, places, keep_id=rule_id is not None)
    return RuleDraft(draft.rule_id, render_entry(draft), draft.pattern)


def _title(old_text: str, new_text: str, fix: FixLines, places: Places, candidates: list[Candidate]) -> tuple[str, str]:
    """(title, what it was drafted from) for what the bad code does: the call or read the
    fix removed, else the value it replaced, the statement it added or the one it changed."""
    if candidates:
        first = candidates[0]
        place = places.at(first.lines)
        return candidate_title(first, place), f"what the fix removed {ascii_only(place.origin)}"
    literal = changed_literal(old_text, fix.old, new_text, fix.new)
    if literal is not None:
        place = places.at([literal[2]])
        return literal_title(literal[0], literal[1], place), f"the value the fix replaced {ascii_only(place.origin)}"
    place = places.at(fix.old)
    if fix.old_beside:  # the fix only added code: what the bad code lacks
        added = statement_at(new_text, _first_code(new_text, fix.new))
        return statement_title(added, place, added=True), f"the statement the fix added {ascii_only(place.origin)}"
    changed = statement_at(old_text, _first_code(old_text, fix.old))
    return statement_title(changed, place, added=False), f"the statement the fix changed {ascii_only(place.origin)}"


_NO_PATTERN = {
    "code": "No pattern drafted: the fix removes no call or attribute read that tells the bad\n"
            "example from the good one.",
    "literals": "No pattern drafted: the fix changes only string or number values, which a pattern\n"
                "of the code around them would report in the good example too.",
}  # fmt: skip


def _first_code(text: str, lines: frozenset[int]) -> int:
    """The first of ``lines`` that holds code, not a blank line or a comment (else the first)."""
    source = text.splitlines()
    held = [n for n in sorted(lines) if 0 < n <= len(source) and source[n - 1].strip()
            and not source[n - 1].lstrip().startswith("#")]  # fmt: skip
    return held[0] if held else min(lines)


def _with_pattern(draft: Draft, candidates: list[Candidate], places: Places, *, keep_id: bool) -> Draft:
    """``draft`` with the first pattern, of what the fix removed, that passes its examples;
    named after it and the hottest place its code ran (but an id the author gave).
    ``draft`` itself when none does."""
    for candidate in candidates:
        place = places.at(candidate.lines)
        named = replace(draft, pattern=candidate.pattern, note="")
        names = draft_names(candidate, place)
        if names is not None:
            named = replace(named, rule_id=draft.rule_id if keep_id else names[0], title=names[1],
                            title_from=f"what the fix removed {ascii_only(place.origin)}")
        tried = _tried(named, shape_lines(draft.bad, candidate.shape))
        if tried is not None:
            return tried
    return draft


def _tried(draft: Draft, lines: tuple[int, ...]) -> Draft | None:
    """``draft`` with ``# expect`` on ``lines`` when its examples then pass. Where the engine
    reports the same nodes on other lines (a call whose receiver spans lines), once more
    with those."""
    for _ in range(2):
        bad = mark_expected(draft.bad, lines)
        if bad is None:
            return None
        marked = replace(draft, bad=bad)
        outcomes = trial(marked)
        if not outcomes:
            return None
        if all(outcome.ok for outcome in outcomes):
            return marked
        reported = tuple(sorted({line for o in outcomes if o.example.kind == "bad" for line in o.reported}))
        if not reported or reported == lines or not all(o.ok for o in outcomes if o.example.kind == "good"):
            return None
        lines = reported
    return None


def _blob(repo: str, rev: str, path: str, label: str) -> str:
    try:
        return read_blob(repo, rev, path).decode("utf-8")
    except GitError:
        raise ChangeInputError(f"{path}: not present at {label}; pick a file the commit modifies") from None
