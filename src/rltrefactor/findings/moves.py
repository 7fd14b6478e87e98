"""Code moved within the change: a new finding whose code stood at the base in another
definition or another file of the change, and left it there, is pre-existing.

The identity compared here is a hit's rule, its normalised matched text and the chain of
conditions around it (``rule_findings.guards_at``): the fingerprint without the
definition. Only base files of the change are searched (modified and deleted files, the
old paths of renamed ones), and only on lines holding the first word of a new finding's
code. A base hit has left its place when that place (its file at the head, its
definition) holds fewer hits of its fingerprint than the base did: code copied while
the original stays is new.

A move may leave loops around the code behind (the head's chain is the base's less some
loop headers) and may take it to code that runs less often (from per-step code to
one-time code, from a function its file calls inside a loop to one it does not): such a
move is an improvement (``MovedToRunLess``). A move to code that runs more often is no
move: the finding stays new, as a device copy that lost its ``if`` does.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping

from ..change.contents import read_base_sources, read_sources
from ..context.execution import COLD_KINDS
from ..matching.regions.lines import LineIndex
from ..matching.regions.tokens import token_lines
from ..matching.rule_findings import fingerprint, guards_at, normalise_code
from ..source.functions import code_text
from ..source.syntax import byte_column
from .merging import flagged_code
from ..types import BaseLocation, ChangeSet, Finding

if TYPE_CHECKING:
    from ..context.filemodel import FileModel
    from ..matching.engine import Engine


@dataclass(frozen=True)
class MovedToRunLess:
    """A pre-existing finding whose code moved to where it runs less often: an improvement."""

    rule_id: str
    path: str
    line: int
    definition: str
    moved_from: BaseLocation
    why: str  # "out of a loop", "from per-step `A.f` to one-time `A.g`", ...


@dataclass(frozen=True)
class _Site:
    """One hit as this module compares it."""

    rule_id: str
    code: str  # normalised matched text
    guards: tuple[str, ...]  # innermost first
    path: str
    definition: str
    fingerprint: str
    line: int
    model: FileModel


def mark_moved(
    kept: list[Finding], change: ChangeSet, engine: Engine, head_texts: Mapping[str, str],
) -> tuple[list[Finding], tuple[MovedToRunLess, ...]]:
    """``kept`` with new findings whose code moved here marked ``pre-existing`` (naming
    where it came from), and the moves that made code run less often."""
    if change.base is None or change.full_scan:
        return kept, ()
    heads = dict(_sites(
        ((index, finding) for index, finding in enumerate(kept)
         if finding.status == "new" and finding.perf is None and finding.path in head_texts),
        lambda path: engine.model(path, head_texts[path]),
    ))
    if not heads:
        return kept, ()
    words = {_first_word(site.code) for site in heads.values()}
    wanted = {(site.rule_id, site.code) for site in heads.values()}
    vacated = _vacated(_base_sites(change, engine, words, wanted), change, engine, head_texts, words)
    result = list(kept)
    improvements: list[MovedToRunLess] = []
    for index, head in sorted(heads.items(), key=lambda item: (item[1].path, item[1].line)):
        claimed = _claim(head, vacated)
        if claimed is None:
            continue
        origin = BaseLocation(claimed.path, claimed.definition)
        result[index] = replace(result[index], status="pre-existing", moved_from=origin)
        why = _lowered(claimed, head)
        if why:
            improvements.append(MovedToRunLess(head.rule_id, head.path, head.line, head.definition, origin, why))
    return result, tuple(improvements)


def _sites(
    findings: Iterable[tuple[int, Finding]], model_of: Callable[[str], FileModel]
) -> Iterator[tuple[int, _Site]]:
    """The sites of these (key, finding) pairs, each file's lines split once; findings
    whose identity cannot be read again are left out."""
    lines: dict[str, tuple[FileModel, list[str]]] = {}
    for key, finding in findings:
        if finding.path not in lines:
            model = model_of(finding.path)
            lines[finding.path] = model, model.text.splitlines()
        site = _site(*lines[finding.path], finding)
        if site is not None:
            yield key, site


def _site(model: FileModel, lines: list[str], finding: Finding) -> _Site | None:
    """The finding's identity, read again from its file; None where the code at its span
    does not give back its fingerprint (a matcher that reports part of what it matched)."""
    span = finding.span
    if not 0 < span.line <= span.end_line <= len(lines):
        return None
    matched = flagged_code(lines, span)
    guards = guards_at(model.tree, span.line, byte_column(lines, span))
    if fingerprint(finding.rule_id, finding.definition, matched, guards) != finding.fingerprint.split("-")[0]:
        return None
    code = normalise_code(matched)
    if not code:
        return None
    return _Site(finding.rule_id, code, guards, finding.path, finding.definition, finding.fingerprint, span.line, model)


def _first_word(code: str) -> str:
    return code.split(None, 1)[0]


def _base_files(change: ChangeSet) -> list[tuple[str, str | None]]:
    """(path at the base, path at the head: None for a deleted file) of each Python file
    the change modifies, renames or deletes."""
    files = []
    for changed in change.files:
        if not changed.is_python or changed.status not in ("modified", "renamed", "deleted"):
            continue
        base_path = changed.old_path or changed.path
        files.append((base_path, None if changed.status == "deleted" else changed.path))
    return files


def _base_sites(change: ChangeSet, engine: Engine, words: set[str], wanted: set[tuple[str, str]]) -> list[tuple[_Site, str | None]]:
    """Base hits with the rule and code of a new finding, each with its file's head path."""
    files = _base_files(change)
    texts = read_base_sources(change, [base for base, _ in files])
    found: list[tuple[_Site, str | None]] = []
    for base_path, head_path in files:
        text = texts.get(base_path)
        if not isinstance(text, str) or not any(word in text for word in words):
            continue
        model = engine.model(base_path, text)
        hits = ((0, finding) for finding in _review_on_words(engine, model, words))
        found.extend((site, head_path) for _, site in _sites(hits, lambda path: model) if (site.rule_id, site.code) in wanted)
    return found


def _review_on_words(engine: Engine, model: FileModel, words: Iterable[str]) -> tuple[Finding, ...]:
    """Hits of ``model``'s file starting on a line that holds one of ``words``: every hit
    whose normalised code begins with one of them."""
    lines = token_lines(model.text, tuple(words), LineIndex(model.text))
    if not lines:
        return ()
    return engine.review_file(model.path, model.text, frozenset(lines), model=model).findings


@dataclass
class _Vacancy:
    site: _Site
    left: int  # hits of the site's fingerprint its place lost, not yet claimed by a move


def _vacated(
    sites: list[tuple[_Site, str | None]], change: ChangeSet, engine: Engine, head_texts: Mapping[str, str],
    words: set[str],
) -> list[_Vacancy]:
    """Base hits whose place holds fewer hits of their fingerprint at the head than at the base."""
    base_counts = Counter((site.path, site.fingerprint) for site, _ in sites)
    head_counts: dict[str, Counter[str]] = {}
    vacancies: list[_Vacancy] = []
    seen: set[tuple[str, str]] = set()
    for site, head_path in sites:
        if (site.path, site.fingerprint) in seen:
            continue
        seen.add((site.path, site.fingerprint))
        at_head = 0
        if head_path is not None:
            if head_path not in head_counts:
                head_counts[head_path] = _fingerprints_at_head(change, engine, head_path, head_texts, words)
            at_head = head_counts[head_path][site.fingerprint]
        left = base_counts[(site.path, site.fingerprint)] - at_head
        if left > 0:
            vacancies.append(_Vacancy(site, left))
    return vacancies


def _fingerprints_at_head(
    change: ChangeSet, engine: Engine, path: str, head_texts: Mapping[str, str], words: set[str]
) -> Counter[str]:
    text = head_texts.get(path)
    if text is None:
        read = read_sources(change, [path])[path]
        text = read if isinstance(read, str) else ""
    findings = _review_on_words(engine, engine.model(path, text), words) if text else ()
    return Counter(f.fingerprint for f in findings)


def _claim(head: _Site, vacancies: list[_Vacancy]) -> _Site | None:
    """The vacated base hit ``head`` moved from, taken so no other copy can claim it:
    one with the same conditions first, then one in the same file."""
    fitting = [
        v for v in vacancies
        if v.left > 0 and v.site.rule_id == head.rule_id and v.site.code == head.code
        and _loops_left_behind(v.site.guards, head.guards) is not None and _rate(head) <= _rate(v.site)
    ]
    if not fitting:
        return None
    chosen = min(fitting, key=lambda v: (v.site.guards != head.guards, v.site.path != head.path, v.site.path, v.site.line))
    chosen.left -= 1
    return chosen.site


_LOOP = re.compile(r"(?:async )?(?:for|while)\b")


def _is_loop(guard: str) -> bool:
    return _LOOP.match(guard) is not None


def _loops_left_behind(base: tuple[str, ...], head: tuple[str, ...]) -> int | None:
    """How many loop headers of ``base`` ``head`` lacks, when ``head`` is ``base`` less
    loops; None when the conditions differ otherwise."""
    dropped, at = 0, 0
    for guard in base:
        if at < len(head) and head[at] == guard:
            at += 1
        elif _is_loop(guard):
            dropped += 1
        else:
            return None
    return dropped if at == len(head) else None


def _rate(site: _Site) -> tuple[int, int]:
    """How often the code runs, comparable between places: (1 in per-step or unknown
    functions, 0 in one-time or offline ones and outside functions; loops around it,
    counting one where its file calls its function inside a loop)."""
    function = site.model.function_at(site.line)
    hot = int(function is not None and function.kind not in COLD_KINDS)
    loops = sum(_is_loop(guard) for guard in site.guards)
    return hot, loops + int(function is not None and _called_in_loop(site.model, function.qualname))


def _called_in_loop(model: FileModel, qualname: str) -> bool:
    """The file calls the function (``f(...)``, ``self.f(...)``) inside a loop."""
    name = qualname.rpartition(".")[2]
    if not name.isidentifier():
        return False
    code = code_text(model.tree)
    index = LineIndex(code)
    for match in re.finditer(rf"(?<![\w])(?<!def ){re.escape(name)}\s*\(", code):
        line = index.line_of(match.start())
        byte_column = len(code[index.starts[line - 1] : match.start()].encode("utf-8", "surrogatepass"))
        if any(_is_loop(guard) for guard in guards_at(model.tree, line, byte_column)):
            return True
    return False


def _lowered(base: _Site, head: _Site) -> str:
    """Why the code runs less often at the head, in a few words; "" when it does not."""
    base_rate, head_rate = _rate(base), _rate(head)
    if head_rate >= base_rate:
        return ""
    if head_rate[0] < base_rate[0]:
        return f"from per-step code (`{base.definition}`) to code that runs once (`{head.definition}`)"
    if _loops_left_behind(base.guards, head.guards):
        return "out of a loop"
    return f"from `{base.definition}`, called in a loop, to `{head.definition}`"
