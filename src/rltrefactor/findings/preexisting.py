"""Moved code or new code: which kept findings already existed at the base revision.

A finding's fingerprint is its rule, the qualified name of its enclosing definition and
its matched text with whitespace collapsed, so it survives line shifts, re-indentation
and moves within a file (or with the file, on a rename). A base finding with the same
fingerprint starts on a base line that

- lies in a definition of the same qualified name (``<module>``: in none), and
- holds the matched text's first word (its first run of non-whitespace, which
  collapsing whitespace leaves as it is).

Only the statements holding such lines are reviewed at the base: a one-function change
in a large file costs what that function costs, not what the file costs. The head,
matched only where hits touch the changed lines, is matched again on its own such
lines where they lie elsewhere, so that both sides count every copy.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
import functools
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from ..matching.regions.lines import LineIndex
from ..matching.regions.tokens import token_lines
from ..change.contents import read_base_sources
from ..source.syntax import DefinitionMap, definitions
from ..types import ChangedFile, ChangeSet, FileOutcome, Finding

if TYPE_CHECKING:
    from ..matching.engine import Engine
    from ..context.filemodel import FileModel


def complete_head(
    kept: Iterable[Finding],
    outcomes: Iterable[FileOutcome],
    by_path: Mapping[str, ChangedFile],
    engine: "Engine",
    head_texts: Mapping[str, str],
    *,
    kept_on_lines: bool,
) -> dict[str, tuple[Finding, ...]]:
    """Every head hit that shares an identity with a kept finding, by path.

    ``kept_on_lines``: the head was matched only for hits touching the changed lines
    (``Engine.review_file``), so where a kept identity can also start on other lines, the
    head is matched again there; otherwise each outcome already holds every hit.
    """
    kept_in: dict[str, list[Finding]] = defaultdict(list)
    for finding in kept:
        kept_in[finding.path].append(finding)
    heads: dict[str, tuple[Finding, ...]] = {}
    for outcome in outcomes:
        heads[outcome.path] = outcome.findings
        text = head_texts.get(outcome.path)
        if not kept_on_lines or outcome.path not in kept_in or text is None:
            continue
        model = engine.model(outcome.path, text)  # held by the engine: the head is parsed once
        at_head = identity_lines(text, kept_in[outcome.path], text, definitions_of=lambda: model.definitions)
        if at_head is None or not at_head <= by_path[outcome.path].added_lines:
            heads[outcome.path] = engine.review_file(outcome.path, text, at_head, model=model).findings
    return heads


def mark_preexisting(
    kept: list[Finding],
    heads: Mapping[str, Sequence[Finding]],
    by_path: Mapping[str, ChangedFile],
    change: ChangeSet,
    engine: "Engine",
    head_texts: Mapping[str, str],
) -> list[Finding]:
    """``kept`` with the findings whose identity also exists at the base marked ``pre-existing``.

    Identities are counted per file: if the head has more hits with one fingerprint than
    the base had, that many of the kept ones are new, those on changed lines first. ``heads``: every head hit of the
    kept identities (``complete_head``).
    """
    if change.base is None or change.full_scan:
        return kept
    paths = sorted({f.path for f in kept if by_path[f.path].status in ("modified", "renamed")})
    if not paths:
        return kept
    old = {path: by_path[path].old_path or path for path in paths}
    base_sources = read_base_sources(change, [old[p] for p in paths])
    kept_in: dict[str, list[Finding]] = defaultdict(list)
    for finding in kept:
        kept_in[finding.path].append(finding)
    base_counts: Counter[tuple[str, str]] = Counter()
    head_counts: Counter[tuple[str, str]] = Counter()
    compared: set[str] = set()
    for path in paths:
        text = base_sources.get(old[path])
        if not isinstance(text, str):
            continue
        compared.add(path)
        head_counts.update((path, f.fingerprint) for f in heads.get(path, ()))
        base = _Made(engine, path, text)  # parsed only when needed, then once
        lines = identity_lines(text, kept_in[path], head_texts.get(path), definitions_of=lambda: base.model.definitions)
        if lines is None or lines:
            base_counts.update((path, f.fingerprint) for f in engine.review_file(path, text, lines, model=base.model).findings)
    kept_by_print: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, finding in enumerate(kept):
        kept_by_print[(finding.path, finding.fingerprint)].append(index)
    result = list(kept)
    for identity, indexes in kept_by_print.items():
        if identity[0] not in compared:
            continue  # an added file, or a base that could not be read: every finding is new
        new_allowed = max(0, head_counts[identity] - base_counts[identity])
        # The hits on changed lines are the new ones; unchanged copies kept by a wider
        # scope are the base's, wherever they stand in the file.
        added = by_path[identity[0]].added_lines
        ordered = sorted(indexes, key=lambda i: not _touches(result[i], added))
        for index in ordered[new_allowed:]:
            result[index] = replace(result[index], status="pre-existing")
    return result


def _touches(finding: Finding, lines: frozenset[int]) -> bool:
    return any(line in lines for line in range(finding.span.line, finding.span.end_line + 1))


def identity_lines(
    text: str, findings: Iterable[Finding], head_text: str | None, *,
    definitions_of: Callable[[], DefinitionMap] | None = None,
) -> frozenset[int] | None:
    """Lines of ``text`` (the base, or the head itself) on which a finding with one of
    these fingerprints can start; None when that cannot be narrowed (the whole text is
    then reviewed). ``head_text``: where the findings were made. ``definitions_of``:
    gives the definitions of ``text`` from its model (walked here otherwise)."""
    head_lines = head_text.split("\n") if head_text is not None else None
    words = [(finding, _first_word(finding, head_lines)) for finding in findings]
    words = [(finding, word) for finding, word in words if word is None or word in text]
    if not words:
        return frozenset()  # no matched text occurs in ``text``: nothing to parse there
    defs = definitions_of() if definitions_of is not None else definitions(text)
    index = LineIndex(text)
    found: set[int] = set()
    for finding, word in words:
        ranges = _ranges_named(defs, finding.definition)
        if word is None:
            if finding.definition == "<module>":
                return None
            found.update(line for first, last in ranges for line in range(first, last + 1))
            continue
        for line in token_lines(text, (word,), index):
            if _encloses(defs, ranges, finding.definition, line):
                found.add(line)
    return frozenset(found)


class _Made:
    """The model of one file version, made when first asked for."""

    def __init__(self, engine: Engine, path: str, text: str) -> None:
        self._engine, self._path, self._text = engine, path, text

    @functools.cached_property
    def model(self) -> FileModel:
        return self._engine.model(self._path, self._text)


def _first_word(finding: Finding, head_lines: list[str] | None) -> str | None:
    """The first run of non-whitespace where the finding starts in the head text, or
    None when the head's line there is not the finding's own (unusual line breaks)."""
    if head_lines is None or not 0 < finding.span.line <= len(head_lines):
        return None
    line = head_lines[finding.span.line - 1].rstrip("\r")
    if line != finding.snippet:
        return None
    rest = line[finding.span.column - 1 :]
    words = rest.split(None, 1)
    return words[0] if words and not rest[:1].isspace() else None


def _ranges_named(defs: DefinitionMap, qualname: str) -> list[tuple[int, int]]:
    return [(d.start_line, d.end_line) for d in defs.definitions if d.qualname == qualname]


def _encloses(defs: DefinitionMap, ranges: list[tuple[int, int]], qualname: str, line: int) -> bool:
    """``line``'s innermost definition is named ``qualname``."""
    if qualname != "<module>" and not any(first <= line <= last for first, last in ranges):
        return False
    return defs.enclosing(line).qualname == qualname
