"""``rules new``: a rule entry scaffolded from a real fix.

The bad example is the fixed range as it was before the commit (``SHA^``), the good
example the range at ``SHA``. The entry starts as a checklist rule (``manual: true``)
so it validates at once; turning it into an automated rule means adding a matcher and
marking the reporting lines of the bad example with ``# expect``.
"""

from __future__ import annotations

import re
import textwrap

from ..errors import ChangeInputError, GitError
from ..gitio import git, read_blob, rev_parse
from .model import AREAS
from .schema import RULE_ID

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def parse_line_range(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)(?:-(\d+))?", text.strip())
    if not match or int(match.group(1)) < 1 or int(match.group(2) or match.group(1)) < int(match.group(1)):
        raise ChangeInputError(f"--lines: invalid range {text!r}; write START-END with 1 <= START <= END, such as 40-52")
    return int(match.group(1)), int(match.group(2) or match.group(1))


def old_range(diff: str, start: int, end: int) -> tuple[int, int]:
    """The lines before the commit that correspond to new lines ``start..end``."""
    hunks = [
        (int(m.group(1)), int(m.group(2) or 1), int(m.group(3)), int(m.group(4) or 1))
        for m in _HUNK.finditer(diff)
    ]

    def to_old(line: int, edge: str) -> int:
        shift = 0
        for old_start, old_len, new_start, new_len in hunks:
            new_end = new_start + new_len - 1 if new_len else new_start - 1
            if new_len and new_start <= line <= new_end:  # inside a changed region
                return old_start if edge == "start" else old_start + max(old_len, 1) - 1
            if new_end < line:
                shift = (old_start + old_len) - (new_start + new_len)
        return line + shift

    return to_old(start, "start"), max(to_old(end, "end"), to_old(start, "start"))


def scaffold_rule(repo: str, sha: str, path: str, lines: tuple[int, int], *, rule_id: str | None = None, area: str | None = None) -> str:
    """A YAML rule entry (list item, two-space indented) for ``rules/<area>.yaml``."""
    commit = rev_parse(repo, sha)
    try:
        parent = rev_parse(repo, f"{commit}^")
    except ChangeInputError:
        raise ChangeInputError(f"{sha}: the commit has no parent; scaffold from a commit that fixes existing code") from None
    new_text = _blob(repo, commit, path, sha)
    old_text = _blob(repo, parent, path, f"{sha}^")
    diff = git(repo, "diff", "-U0", parent, commit, "--", path)
    start, end = lines
    old_start, old_end = old_range(diff, start, end)
    rule_id = rule_id or f"new-rule-from-{commit[:7]}"
    if not RULE_ID.match(rule_id):
        raise ChangeInputError(f"--id: {rule_id!r} is not a kebab-case hazard name; use lowercase words joined by '-'")
    if area is not None and area not in AREAS:
        raise ChangeInputError(f"--area: unknown area {area!r}; use one of {', '.join(AREAS)}")
    bad = _cut(old_text, old_start, old_end)
    good = _cut(new_text, start, end)
    return _entry(rule_id, area, path, commit, bad, good)


def _blob(repo: str, rev: str, path: str, label: str) -> str:
    try:
        return read_blob(repo, rev, path).decode("utf-8")
    except GitError:
        raise ChangeInputError(f"{path}: not present at {label}; pick a file the commit modifies") from None


def _cut(text: str, start: int, end: int) -> str:
    return textwrap.dedent("\n".join(text.splitlines()[start - 1 : end])).rstrip() + "\n"


def _block(code: str, indent: str) -> str:
    return "\n".join(indent + line if line.strip() else "" for line in code.rstrip("\n").splitlines())


def _entry(rule_id: str, area: str | None, path: str, commit: str, bad: str, good: str) -> str:
    lines = [
        f"  - id: {rule_id}",
        "    title: TODO state the hazard in a few words",
        "    status: experimental",
        "    since: 1.0.0  # TODO the library version this rule ships in",
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
