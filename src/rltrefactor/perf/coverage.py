"""Which micro-checks exercise what a change touched.

Touched definitions are the innermost functions/classes around the head lines a change
adds or modifies, and around the places where it only deleted lines (a removed sync
must still select the checks that ran through it). A check covers a touched definition
when the traced run called it, something nested in it, or, for a touched ``<module>``
line, anything in that file. ``covers=`` entries on the decorator replace the trace.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..change import contents
from ..source import syntax
from ..types import ChangeSet

Touched = Mapping[str, frozenset[str]]  # path -> qualnames


def touched_definitions(change: ChangeSet) -> dict[str, frozenset[str]]:
    touched: dict[str, frozenset[str]] = {}
    for changed in change.files:
        if not changed.is_python or changed.status == "deleted":
            continue
        text = contents.read_text(change, changed.path)
        if not isinstance(text, str):
            continue  # unreadable at head: the review reports it; nothing to select
        rows = text.splitlines()
        lines = {n for n in changed.added_lines if is_code_line(rows, n)} | changed.deletion_anchors
        definitions = syntax.definitions(text)  # the one dependency on the line -> definition map
        touched[changed.path] = frozenset(definitions.enclosing(line).qualname for line in lines)
    return {path: names for path, names in touched.items() if names}


def is_code_line(rows: list[str], line: int) -> bool:
    """Blank and comment-only lines change no behaviour; in a class body they would
    otherwise select every check that calls any method of the class."""
    text = rows[line - 1].strip() if 0 < line <= len(rows) else ""
    return bool(text) and not text.startswith("#")


def within(called: str, touched: str) -> bool:
    return called == touched or called.startswith(touched + ".")


def covered_by_trace(traced: Iterable[tuple[str, str]], touched: Touched) -> list[str]:
    """Touched ``path::qualname`` entries that the traced calls ran through."""
    traced = list(traced)
    hits = []
    for path, names in sorted(touched.items()):
        in_file = [q for p, q in traced if p == path]
        for name in sorted(names):
            if name == "<module>" and in_file or any(within(q, name) for q in in_file):
                hits.append(f"{path}::{name}")
    return hits


def covered_by_declaration(covers: Iterable[str], touched: Touched) -> list[str]:
    hits = []
    for path, names in sorted(touched.items()):
        for name in sorted(names):
            if any(_declared(entry, path, name) for entry in covers):
                hits.append(f"{path}::{name}")
    return hits


def _declared(entry: str, path: str, name: str) -> bool:
    if "::" in entry:
        want_path, want_name = entry.split("::", 1)
        return want_path == path and (name == "<module>" or within(name, want_name) or within(want_name, name))
    if entry.endswith(".py"):
        return entry == path
    return within(name, entry) or within(entry, name)
