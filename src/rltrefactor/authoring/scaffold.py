"""``rules new``: a rule entry scaffolded from a real fix.

The bad example is the fixed range as it was before the commit (``SHA^``), the good
example the range at ``SHA``; the lines before the commit are found through the change's
hunks (``changes.collect_changes``). Each is widened to whole statements: the innermost
definition holding the range, else the top-level statements it touches, so an example
never ends on a ``def`` line without its body. The title is drafted from the commit's
subject and ``since`` is the next minor version of the library the rule joins (the
repository's own, where it goes into one). The entry starts as a checklist rule
(``manual: true``) whose texts read ``TODO``: ``rules check`` names each one until it
is written; turning it into an automated rule means adding a matcher and marking the
reporting lines of the bad example with ``# expect``.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from dataclasses import dataclass

from ..change.changeset import collect_changes
from ..errors import ChangeInputError, GitError
from ..change.git import git, read_blob, rev_parse
from ..types import Hunk
from ..library.model import AREAS
from ..library.schema import RULE_ID


def parse_line_range(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)(?:-(\d+))?", text.strip())
    if not match or int(match.group(1)) < 1 or int(match.group(2) or match.group(1)) < int(match.group(1)):
        raise ChangeInputError(f"--lines: invalid range {text!r}; write START-END with 1 <= START <= END, such as 40-52")
    return int(match.group(1)), int(match.group(2) or match.group(1))


def old_range(hunks: tuple[Hunk, ...], start: int, end: int) -> tuple[int, int]:
    """The lines before the commit that correspond to new lines ``start..end``."""

    def to_old(line: int, edge: str) -> int:
        shift = 0
        for h in hunks:
            new_end = h.new_start + h.new_length - 1 if h.new_length else h.new_start - 1
            if h.new_length and h.new_start <= line <= new_end:  # inside a changed region
                return h.old_start if edge == "start" else h.old_start + max(h.old_length, 1) - 1
            if new_end < line:
                shift = (h.old_start + h.old_length) - (h.new_start + h.new_length)
        return line + shift

    return to_old(start, "start"), max(to_old(end, "end"), to_old(start, "start"))


def next_version(version: str) -> str:
    """The library version a new rule ships in: the next minor (1.3.0 -> 1.4.0)."""
    major, minor, _ = (int(part) for part in version.split("."))
    return f"{major}.{minor + 1}.0"


def draft_title(message: str) -> str:
    """A title drafted from a commit subject: first line, capitalised, no final period."""
    subject = (message.strip().splitlines() or [""])[0].strip().rstrip(".")
    return subject[:1].upper() + subject[1:]


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
                  area: str | None = None, library: TargetLibrary | None = None) -> str:
    """A YAML rule entry (list item, two-space indented) for ``rules/<area>.yaml``.

    ``library`` is the library the rule joins (None: the bundled one).
    """
    commit = rev_parse(repo, sha)
    try:
        parent = rev_parse(repo, f"{commit}^")
    except ChangeInputError:
        raise ChangeInputError(f"{sha}: the commit has no parent; scaffold from a commit that fixes existing code") from None
    new_text = _blob(repo, commit, path, sha)
    old_text = _blob(repo, parent, path, f"{sha}^")
    change = collect_changes(repo, diff=f"{parent}..{commit}")
    hunks = next((f.hunks for f in change.files if f.path == path), ())
    start, end = lines
    old_start, old_end = old_range(hunks, start, end)
    rule_id = rule_id or f"new-rule-from-{commit[:7]}"
    if not RULE_ID.match(rule_id):
        raise ChangeInputError(f"--id: {rule_id!r} is not a kebab-case hazard name; use lowercase words joined by '-'")
    if area is not None and area not in AREAS:
        raise ChangeInputError(f"--area: unknown area {area!r}; use one of {', '.join(AREAS)}")
    bad = cut_statements(old_text, old_start, old_end, f"{path} at {sha}^")
    good = cut_statements(new_text, start, end, f"{path} at {sha}")
    title = draft_title(git(repo, "log", "-1", "--format=%B", commit))
    target = library or _bundled()
    since = next_version(target.version)
    return _entry(_Draft(rule_id, area, path, commit, title, since, target.since_note), bad, good)


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


def cut_statements(text: str, start: int, end: int, where: str) -> str:
    """Lines ``start..end`` of ``text`` widened to whole statements, dedented.

    Raises ``ChangeInputError`` when they hold no statement, or when what is cut does not
    parse on its own (a file that does not parse at all is cut as asked)."""
    try:
        tree: ast.Module | None = ast.parse(text)
    except SyntaxError:
        tree = None
    if tree is not None:
        widened = _statement_span(tree, start, end)
        if widened is None:
            raise ChangeInputError(
                f"{where}: lines {start}-{end} hold no statement; pick --lines that cover the fixed code"
            )
        start, end = widened
    code = textwrap.dedent("\n".join(text.splitlines()[start - 1 : end])).rstrip() + "\n"
    try:
        ast.parse(code)
    except SyntaxError as exc:
        raise ChangeInputError(
            f"{where}: lines {start}-{end} do not parse as Python on their own ({exc.msg}); "
            "pick --lines that cover whole statements"
        ) from None
    return code


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _statement_span(tree: ast.Module, start: int, end: int) -> tuple[int, int] | None:
    """The innermost definition holding lines ``start..end`` whole (decorators included),
    else the top-level statements they touch; None when they touch none."""
    holders = [
        (_first_line(node), node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, _DEFINITIONS) and _first_line(node) <= start and end <= (node.end_lineno or node.lineno)
    ]
    if holders:
        return min(holders, key=lambda span: span[1] - span[0])
    touched = [
        node for node in tree.body if _first_line(node) <= end and start <= (node.end_lineno or node.lineno)
    ]
    if not touched:
        return None
    return _first_line(touched[0]), touched[-1].end_lineno or touched[-1].lineno


def _first_line(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _block(code: str, indent: str) -> str:
    return "\n".join(indent + line if line.strip() else "" for line in code.rstrip("\n").splitlines())


@dataclass(frozen=True)
class _Draft:
    rule_id: str
    area: str | None
    path: str
    commit: str
    title: str
    since: str
    since_note: str  # a YAML comment: which library.yaml ``since`` follows


def _entry(draft: _Draft, bad: str, good: str) -> str:
    rule_id, area, path, commit = draft.rule_id, draft.area, draft.path, draft.commit
    title = json.dumps(draft.title or "TODO state the hazard in a few words", ensure_ascii=False)
    lines = [
        f"  - id: {rule_id}",
        f"    title: {title}  # TODO drafted from the commit message: name the hazard",
        "    status: experimental",
        f"    since: {draft.since}  {draft.since_note}",
        "    severity: warning",
        "    confidence: medium",
        "    problem: TODO what goes wrong, and where it bit us",
        "    preferred: TODO the preferred approach",
        "    exceptions: TODO reasonable exceptions",
        "    impact: TODO what goes wrong in the flagged code ($METAVARS allowed)",
        "    fix: TODO the concrete correction",
        "    fix-safety: manual",
        f"    references: []  # cut from commit {commit}",
        "    # Starts as a checklist rule; to automate it, replace `manual: true` with a",
        "    # matcher and mark each reporting line of the bad example with `# expect`.",
        "    manual: true",
        "    examples:",
        f"      - path: {path}",
        "        bad: |",
        _block(bad, " " * 10),
        "        good: |",
        _block(good, " " * 10),
    ]
    header = f"# area: {area}\n" if area else "# area: TODO one of " + ", ".join(AREAS) + "\n"
    return header + "\n".join(lines) + "\n"
