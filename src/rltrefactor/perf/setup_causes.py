"""Deltas of a measured call that runs no changed code: the changed set-up line is the cause.

A micro-check's set-up (traced apart from its body) or a test's set-up functions
(``__init__``, ``load_*``, ``warmup``, ... as the execution stage names them) can reach
changed code while the measured call reaches none: a staging buffer that lost
``pin_memory=True`` in ``__init__`` turns an unchanged per-step upload into a sync. Such
a check is compared like any other; each of its deltas stays at its own line and names
one changed set-up line as its cause: ``"`self.host` is no longer pinned: eng/loader.py:9"``.

The line named is, among the changed lines of the set-up definitions reached: first one
assigning a name that the delta's own line uses, then (for a copy or a sync) one that
changed pinning, then the first. Pinning is read from the text: ``pin_memory=True`` or
``.pin_memory()`` on the base side of the line and not on the head side (or the reverse).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from ..change import contents
from ..source import syntax
from ..types import ChangedFile, ChangeSet, Hunk
from .coverage import is_code_line, within
from .deltas import site_label
from .records import PerfDelta

_PINNED = re.compile(r"pin_memory\s*=\s*True|\.pin_memory\(\s*\)")
_TARGET = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(?::[^=]*)?=(?!=)")
_SHOWN = 60  # characters of a changed line quoted in a cause


@dataclass(frozen=True)
class SetUpLine:
    """One changed line of a set-up definition: its head text, and what it replaced."""

    path: str
    line: int  # head line; for lines only removed, the head line before the removal
    source: str  # head text, stripped; "" when the lines were only removed
    before: str  # base text of the lines it replaced, stripped and joined; "" when added

    @property
    def target(self) -> str:
        """The name assigned (``self.host``), from the head text, else from the base text."""
        found = _TARGET.match(self.source) or _TARGET.match(self.before)
        return found.group(1) if found else ""

    @property
    def pinning(self) -> str:
        """"no longer pinned", "now pinned", or "" when the line did not change pinning."""
        was, now = bool(_PINNED.search(self.before)), bool(_PINNED.search(self.source))
        return "no longer pinned" if was and not now else "now pinned" if now and not was else ""

    def describe(self) -> str:
        """``"`self.host` is no longer pinned: eng/loader.py:9"``."""
        where = f"{self.path}:{self.line}"
        if self.pinning and self.target:
            return f"`{self.target}` is {self.pinning}: {where}"
        if not self.source:
            return f"set-up line removed, `{_short(self.before)}`: {where}"
        return f"set-up changed, `{_short(self.source)}`: {where}"


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def set_up_lines(change: ChangeSet, entries: Iterable[str]) -> list[SetUpLine]:
    """The changed lines of the touched ``path::qualname`` definitions ``entries`` name."""
    wanted: dict[str, set[str]] = {}
    for entry in entries:
        path, _, name = entry.partition("::")
        wanted.setdefault(path, set()).add(name)
    files = {changed.path: changed for changed in change.files if changed.path in wanted}
    base_paths = {path: changed.old_path or path for path, changed in files.items()}
    base_texts = contents.read_base_sources(change, sorted(set(base_paths.values())))
    found: list[SetUpLine] = []
    for path, changed in sorted(files.items()):
        text = contents.read_text(change, path)
        if not isinstance(text, str):
            continue
        base = base_texts.get(base_paths[path])
        base_rows = base.splitlines() if isinstance(base, str) else []
        found += _lines(changed, text, base_rows, wanted[path])
    return found


def _lines(changed: ChangedFile, text: str, base_rows: list[str], names: set[str]) -> list[SetUpLine]:
    rows = text.splitlines()
    definitions = syntax.definitions(text)

    def inside(line: int) -> bool:
        qualname = definitions.enclosing(line).qualname
        return any(name == "<module>" or within(qualname, name) for name in names)

    found = []
    for hunk in changed.hunks:
        old = [base_rows[n - 1].strip() for n in range(hunk.old_start, hunk.old_start + hunk.old_length)
               if 0 < n <= len(base_rows)]
        if hunk.new_length == 0:
            anchor = max(hunk.new_start, 1)
            if inside(anchor) and any(old):
                found.append(SetUpLine(changed.path, anchor, "", " ".join(r for r in old if r)))
            continue
        for line in range(hunk.new_start, hunk.new_start + hunk.new_length):
            if is_code_line(rows, line) and inside(line):
                source = rows[line - 1].strip()
                found.append(SetUpLine(changed.path, line, source, _replaced(source, old, hunk, line)))
    return found


def _replaced(source: str, old: list[str], hunk: Hunk, line: int) -> str:
    """The base line this head line replaced: the one assigning the same name, else the
    one at the same offset in the hunk; "" for a line only added."""
    found = _TARGET.match(source)
    if found:
        same = [row for row in old if (m := _TARGET.match(row)) and m.group(1) == found.group(1)]
        if same:
            return same[0]
    offset = line - hunk.new_start
    return old[offset] if offset < len(old) else ""


def _uses(source: str, name: str) -> bool:
    return bool(name) and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", source) is not None


def cause_of(delta: PerfDelta, ops: str, lines: list[SetUpLine]) -> str:
    """The changed set-up line that explains ``delta`` (see the module's order), described."""
    if not lines:
        return ""
    candidates = [line for line in lines if _uses(delta.source, line.target)] or lines
    if delta.category in ("copy", "sync") and ("pinned" in ops or "pageable" in ops):
        candidates = [line for line in candidates if line.pinning] or candidates
    chosen = min(candidates, key=lambda line: (line.path, line.line))
    others = len(lines) - 1
    if len(candidates) == len(lines) and others:
        return f"{chosen.describe()} (or one of {others} more changed set-up line{'s' if others > 1 else ''})"
    return chosen.describe()


def with_causes(deltas: Iterable[PerfDelta], lines: list[SetUpLine], ops: Mapping[str, str]) -> list[PerfDelta]:
    """``deltas`` of one check, each naming its cause among ``lines``."""
    return [replace(delta, cause=cause_of(delta, ops.get(site_label(delta), ""), lines)) for delta in deltas]
