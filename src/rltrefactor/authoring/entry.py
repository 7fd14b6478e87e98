"""The rule entry ``rules new`` writes, and its trial on its own examples.

A draft with a pattern is tried before it is written: it is read back as the library
reads it (``library.schema``) and its examples run through the engine as
``rules test`` runs them. Only a draft whose bad example reports exactly its marked
lines and whose good example stays quiet keeps its pattern.
"""

from __future__ import annotations

import io
import json
import tokenize
from dataclasses import dataclass

from ..errors import RltError
from ..library.model import AREAS
from .examples import ExampleOutcome, run_examples


@dataclass(frozen=True)
class Draft:
    rule_id: str
    area: str | None
    path: str
    commit: str
    title: str
    title_from: str  # what the title was drafted from, for its TODO comment
    since: str
    since_note: str  # a YAML comment: which library.yaml ``since`` follows
    bad: str
    good: str
    pattern: str | None = None  # None: a checklist rule (``manual: true``)
    note: str = ""  # why no pattern was drafted, written as a YAML comment
    places: tuple[str, ...] = ()  # which changed line ran where, as comment lines


def render_entry(draft: Draft) -> str:
    """The entry as a list item of a rule file, after a ``# area:`` line."""
    title = json.dumps(draft.title or "TODO state the hazard in a few words")
    lines = [
        f"  - id: {draft.rule_id}",
        f"    title: {title}  # TODO drafted from {draft.title_from}: name the hazard",
        *(f"    # {line}" for line in draft.places),
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
        f"    references: []  # cut from commit {draft.commit}",
        *_matcher(draft),
        "    examples:",
        f"      - path: {draft.path}",
        "        bad: |",
        _block(draft.bad, " " * 10),
        "        good: |",
        _block(draft.good, " " * 10),
    ]
    header = f"# area: {draft.area}\n" if draft.area else "# area: TODO one of " + ", ".join(AREAS) + "\n"
    return header + "\n".join(lines) + "\n"


def _matcher(draft: Draft) -> list[str]:
    if draft.pattern is None:
        return [
            *(f"    # {line}" for line in draft.note.splitlines()),
            "    # Starts as a checklist rule; to automate it, replace `manual: true` with a",
            "    # matcher and mark each reporting line of the bad example with `# expect`.",
            "    manual: true",
        ]
    return [
        "    # Drafted from what the fix removed, and tried on the examples below: the bad one",
        "    # reports its `# expect` lines, the good one nothing. Widen or narrow it, then run",
        f"    # `rltrefactor rules test {draft.rule_id}`.",
        "    matcher:",
        f"      pattern: {json.dumps(draft.pattern)}",
    ]


def _block(code: str, indent: str) -> str:
    return "\n".join(indent + line if line.strip() else "" for line in code.rstrip("\n").splitlines())


def mark_expected(code: str, lines: tuple[int, ...]) -> str | None:
    """``code`` with ``# expect`` closing each of ``lines``; a comment already there is kept
    after the marker. None when a line cannot end in a comment (it continues a string or
    ends in a backslash)."""
    comments: dict[int, int] = {}
    open_lines: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.start[1]
            elif token.start[0] < token.end[0] and token.type != tokenize.NL:
                open_lines.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    source = code.splitlines()
    for line in lines:
        text = source[line - 1]
        if line in open_lines or text.rstrip().endswith("\\"):
            return None
        if line in comments:
            column = comments[line]
            source[line - 1] = f"{text[:column]}# expect (was: {text[column:].lstrip('#').strip()})"
        else:
            source[line - 1] = text.rstrip() + "  # expect"
    return "\n".join(source) + "\n"


def trial(draft: Draft) -> list[ExampleOutcome] | None:
    """The draft's examples run through its matcher, as ``rules test`` runs them; None when
    the draft does not load (its examples cannot carry the pattern)."""
    from ..library.schema import parse_rule
    from ..library.yamlsafe import load_yaml

    text = "rules:\n" + render_entry(draft).split("\n", 1)[1]
    try:
        items = load_yaml(text, "<draft>")["rules"]
        rule = parse_rule(items[0], "<draft>", draft.area or AREAS[0], items.line_of(0), "draft")
        return run_examples(rule)
    except RltError:
        return None
