"""Adopt the tool on an existing code base: accept today's findings, report only new ones.

A baseline is a JSON file with one entry per hit: its fingerprint (plus rule, path and
definition, for the humans who read it). A fingerprint is the hit's identity (rule,
definition, matched code, the conditions around it) and its occurrence among equal
identities, never a line number: a baselined hit stays matched when code above it
moves, and a second copy of a baselined hit is not taken for the first. Format 1
recorded one entry per merged finding; ``update_baseline`` turns it into this format.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

from ..errors import ConfigError
from ..change.files import write_atomic
from .result import ReviewResult
from ..types import Drop, Finding

FORMAT_VERSION = 2
UPDATE_HINT = "run 'rltrefactor baseline --update'"


@dataclass(frozen=True, order=True)
class BaselineEntry:
    path: str
    rule: str
    definition: str
    fingerprint: str


@dataclass(frozen=True)
class Baseline:
    entries: tuple[BaselineEntry, ...]


@dataclass(frozen=True)
class BaselineReport:
    """What applying a baseline did, for the reports: stale entries are listed, not printed."""

    path: str
    matched: int  # findings the baseline absorbed
    stale: tuple[BaselineEntry, ...]  # entries no finding matched any more

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "matched": self.matched,
            "stale": [
                {"fingerprint": e.fingerprint, "rule": e.rule, "path": e.path, "definition": e.definition}
                for e in self.stale
            ],
        }


def recorded_hits(result: ReviewResult) -> list[Finding]:
    """Every unsuppressed hit of ``result``: its findings, the repeats and other rules'
    findings merged into them, and those a full scan held back (so that a baseline holds
    whether or not a later scan shows them)."""
    repeats = [d.finding for d in result.drops
               if d.reason in ("repeat-in-function", "merged-into-finding", "unknown-frequency", "new-code-rule")]
    return [f for f in (*result.findings, *repeats) if not f.suppressed]


def write_baseline(result: ReviewResult, path: str) -> Baseline:
    """Record every unsuppressed hit of ``result`` in ``path``; return what was written."""
    return _write(path, [BaselineEntry(f.path, f.rule_id, f.definition, f.fingerprint) for f in recorded_hits(result)])


def _write(path: str, entries: Iterable[BaselineEntry]) -> Baseline:
    ordered = tuple(sorted(entries))
    document = {
        "version": FORMAT_VERSION,
        "entries": [
            {"fingerprint": e.fingerprint, "rule": e.rule, "path": e.path, "definition": e.definition}
            for e in ordered
        ],
    }
    write_atomic(path, json.dumps(document, indent=2, sort_keys=True) + "\n")
    return Baseline(ordered)


def update_baseline(result: ReviewResult, path: str) -> tuple[Baseline, int]:
    """Refresh the baseline at ``path`` from a review of the whole repository: the hits it
    still records, and nothing new (a new hit stays a finding). Returns the baseline
    written and the number of stale entries left out.

    A format-1 file recorded one entry per merged finding, with fingerprints of another
    kind: each of its entries stands for every hit of its rule in its definition.
    """
    version, old = _read(path, accept=(1, FORMAT_VERSION))
    hits = recorded_hits(result)
    if version == FORMAT_VERSION:
        _, absorbed, _ = apply_baseline(hits, Baseline(old))
        chosen = [d.finding for d in absorbed]
    else:
        places = {(e.path, e.rule, e.definition) for e in old}
        chosen = [f for f in hits if (f.path, f.rule_id, f.definition) in places]
    written = _write(path, [BaselineEntry(f.path, f.rule_id, f.definition, f.fingerprint) for f in chosen])
    return written, max(0, len(old) - len(written.entries)) if version == FORMAT_VERSION else 0


def load_baseline(path: str) -> Baseline:
    _, entries = _read(path, accept=(FORMAT_VERSION,))
    return Baseline(entries)


def _read(path: str, *, accept: tuple[int, ...]) -> tuple[int, tuple[BaselineEntry, ...]]:
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: baseline: file not found; create it with `rltrefactor baseline` or drop --baseline"
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}:{exc.lineno}: baseline: invalid JSON ({exc.msg}); regenerate it with `rltrefactor baseline`"
        ) from None
    if not isinstance(document, dict):
        raise ConfigError(
            f"{path}: baseline: expected a JSON object (got {type(document).__name__}); "
            "regenerate it with `rltrefactor baseline`"
        )
    version = document.get("version")
    if version == 1 and version not in accept:
        raise ConfigError(
            f"{path}: baseline: written by an older rltrefactor (got format 1, expected {FORMAT_VERSION}); "
            f"{UPDATE_HINT} to refresh it"
        )
    if version not in accept:
        raise ConfigError(
            f"{path}: baseline: unsupported format (got version {version!r}, "
            f"expected {FORMAT_VERSION}); regenerate it with `rltrefactor baseline`"
        )
    raw = document.get("entries")
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: baseline: 'entries' must be a list (got {type(raw).__name__}); regenerate it")
    return version, tuple(_entry(path, i, item) for i, item in enumerate(raw))


def _entry(path: str, index: int, item: object) -> BaselineEntry:
    keys = ("path", "rule", "definition", "fingerprint")
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in keys):
        raise ConfigError(
            f"{path}: baseline: entry {index} needs string fields {', '.join(keys)} (got {item!r}); regenerate it"
        )
    return BaselineEntry(item["path"], item["rule"], item["definition"], item["fingerprint"])


def apply_baseline(
    findings: Iterable[Finding], baseline: Baseline, read_in_full: frozenset[str] | None = None
) -> tuple[list[Finding], list[Drop], tuple[BaselineEntry, ...]]:
    """Findings the baseline does not record, the recorded ones as ``baseline`` drops,
    and the stale entries: those no finding matched, in files the review read in full
    (``read_in_full``; None: every file). Elsewhere a hit that was not matched was never
    looked for, and its entry says nothing.

    Suppressed findings are never baselined (they are dispositions, reported as such).
    """
    pools: dict[tuple[str, str], list[BaselineEntry]] = defaultdict(list)
    for entry in baseline.entries:
        pools[(entry.path, entry.fingerprint)].append(entry)
    by_print: dict[str, list[list[BaselineEntry]]] = defaultdict(list)
    for (_, print_), pool in pools.items():
        by_print[print_].append(pool)
    found = list(findings)
    absorbed = [False] * len(found)
    # Entries of the finding's own file first; then any file's, for code in a renamed file.
    for same_file in (True, False):
        for index, finding in enumerate(found):
            if absorbed[index] or finding.suppressed:
                continue
            if same_file:
                entries = pools.get((finding.path, finding.fingerprint), [])
            else:
                entries = next((p for p in by_print.get(finding.fingerprint, ()) if p), [])
            if entries:
                entries.pop(0)
                absorbed[index] = True
    kept = [f for f, gone in zip(found, absorbed) if not gone]
    dropped = [Drop(finding=f, reason="baseline") for f, gone in zip(found, absorbed) if gone]
    left = (e for pool in pools.values() for e in pool)
    stale = tuple(sorted(e for e in left if read_in_full is None or e.path in read_in_full))
    return kept, dropped, stale


def stale_warning(path: str, count: int) -> str:
    entries = "stale baseline entry" if count == 1 else "stale baseline entries"
    return (f"{count} {entries} (recorded findings that no longer occur; --format json lists them); "
            f"{UPDATE_HINT} to drop them from {path}")

