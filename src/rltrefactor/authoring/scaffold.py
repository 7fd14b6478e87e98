"""``rules new``: a rule entry drafted from a real fix.

The fix is what the commit changed within ``--lines`` (numbered at ``SHA``): its hunks
give the changed lines at ``SHA`` and the lines they replaced at ``SHA^``. The bad
example is cut from ``SHA^`` and the good one from ``SHA``: the statements touching
those lines, with the headers around them and a few neighbouring lines
(``excerpt.py``). What the changed lines held before the fix and not after gives the
pattern (``removal.py``); a pattern is kept only when the draft, tried as ``rules
test`` runs it, reports its bad example's ``# expect`` lines and nothing in its good
example (``entry.py``). The id and title name what the pattern reports and where.

A fix that changes only string or number values gives no pattern: the draft is a
checklist rule (``manual: true``) titled from the commit subject. A fix that changes
only comments or layout is refused. ``since`` is the next minor version of the library
the rule joins (the repository's own, where it goes into one). The texts a reviewer
writes read ``TODO``: ``rules check`` names each one until it is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..change.changeset import collect_changes
from ..change.git import git, read_blob, rev_parse
from ..config import declared_for, load_config
from ..errors import ChangeInputError, GitError
from ..library.model import AREAS
from ..library.schema import RULE_ID
from ..types import Hunk
from .entry import Draft, mark_expected, render_entry, trial
from .excerpt import cut_excerpt, describe_lines
from .naming import Place, ascii_only, draft_names, draft_title, place_of
from .removal import change_kind, removed_candidates, shape_lines


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


def next_version(version: str) -> str:
    """The library version a new rule ships in: the next minor (1.3.0 -> 1.4.0)."""
    major, minor, _ = (int(part) for part in version.split("."))
    return f"{major}.{minor + 1}.0"


@dataclass(frozen=True)
class TargetLibrary:
    """The library a scaffolded rule joins: how to name it, and its version today."""

    label: str  # e.g. "review/rules/library.yaml"
    version: str
    exists: bool = True  # False: the library.yaml is still to be written

    @property
    def since_note(self) -> str:
        """What to do with the version ``since`` names, as a YAML comment."""
        if self.exists:
            return f"# the next version of {self.label}: bump it to this"
        return f"# {self.label} does not exist yet: write it with this version (schema: 1, retired-ids: [])"


def scaffold_rule(repo: str, sha: str, path: str, lines: tuple[int, int], *, rule_id: str | None = None,
                  area: str | None = None, library: TargetLibrary | None = None) -> RuleDraft:
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
    target = library or _bundled()
    subject = draft_title(git(repo, "log", "-1", "--format=%B", commit))
    draft = Draft(
        rule_id or f"new-rule-from-{commit[:7]}", area, path, commit, subject, "the commit subject",
        next_version(target.version), target.since_note,
        bad=cut_excerpt(old_text, fix.old, f"{path} at {sha}^"), good=cut_excerpt(new_text, fix.new, f"{path} at {sha}"),
        note=_NO_PATTERN[kind],
    )  # fmt: skip
    if kind == "code":
        place = place_of(path, old_text, fix.old, declared_for(load_config(repo), path))
        draft = _with_pattern(draft, old_text, new_text, fix, place, keep_id=rule_id is not None)
    return RuleDraft(draft.rule_id, render_entry(draft), draft.pattern)


_NO_PATTERN = {
    "code": "No pattern drafted: the fix removes no call or attribute read that tells the bad\n"
            "example from the good one.",
    "literals": "No pattern drafted: the fix changes only string or number values, which a pattern\n"
                "of the code around them would report in the good example too.",
}  # fmt: skip


def _with_pattern(draft: Draft, old_text: str, new_text: str, fix: FixLines, place: Place, *, keep_id: bool) -> Draft:
    """``draft`` with the first pattern, of what the fix removed, that passes its examples;
    named after it and ``place`` (but an id the author gave). ``draft`` itself when none does."""
    for candidate in removed_candidates(old_text, fix.old, new_text, fix.new):
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


def _bundled() -> TargetLibrary:
    from ..library.loader import load_library
    from ..library.location import LIBRARY_FILE
    from ..matching.matchers.registry import check_matcher

    return TargetLibrary(f"rules/{LIBRARY_FILE}", load_library(check_rule=check_matcher).version)


def _blob(repo: str, rev: str, path: str, label: str) -> str:
    try:
        return read_blob(repo, rev, path).decode("utf-8")
    except GitError:
        raise ChangeInputError(f"{path}: not present at {label}; pick a file the commit modifies") from None
