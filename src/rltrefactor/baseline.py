"""Adopt the tool on an existing code base: accept today's findings, report only new ones.

A baseline is a JSON file of finding fingerprints (plus rule, path and definition,
for the humans who read it). Fingerprints exclude line numbers, so a baselined
finding stays matched when code above it moves. Matching is counted: an entry
absorbs one finding, so two identical findings need two entries.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

from .errors import ConfigError
from .fileio import write_atomic
from .types import Drop, Finding, ReviewResult

FORMAT_VERSION = 1


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


def write_baseline(result: ReviewResult, path: str) -> Baseline:
    """Record every unsuppressed finding of ``result`` in ``path``; return what was written."""
    entries = tuple(
        sorted(
            BaselineEntry(f.path, f.rule_id, f.definition, f.fingerprint)
            for f in result.findings
            if not f.suppressed
        )
    )
    document = {
        "version": FORMAT_VERSION,
        "entries": [
            {"fingerprint": e.fingerprint, "rule": e.rule, "path": e.path, "definition": e.definition}
            for e in entries
        ],
    }
    write_atomic(path, json.dumps(document, indent=2, sort_keys=True) + "\n")
    return Baseline(entries)


def load_baseline(path: str) -> Baseline:
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
    if document.get("version") != FORMAT_VERSION:
        raise ConfigError(
            f"{path}: baseline: unsupported format (got version {document.get('version')!r}, "
            f"expected {FORMAT_VERSION}); regenerate it with `rltrefactor baseline`"
        )
    raw = document.get("entries")
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: baseline: 'entries' must be a list (got {type(raw).__name__}); regenerate it")
    return Baseline(tuple(_entry(path, i, item) for i, item in enumerate(raw)))


def _entry(path: str, index: int, item: object) -> BaselineEntry:
    keys = ("path", "rule", "definition", "fingerprint")
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in keys):
        raise ConfigError(
            f"{path}: baseline: entry {index} needs string fields {', '.join(keys)} (got {item!r}); regenerate it"
        )
    return BaselineEntry(item["path"], item["rule"], item["definition"], item["fingerprint"])


def apply_baseline(
    findings: Iterable[Finding], baseline: Baseline
) -> tuple[list[Finding], list[Drop], tuple[BaselineEntry, ...]]:
    """Findings the baseline does not record, the recorded ones as ``baseline`` drops,
    and the stale entries (no finding matched them: what they recorded is gone).

    Suppressed findings are never baselined (they are dispositions, reported as such).
    """
    unmatched: dict[str, list[BaselineEntry]] = defaultdict(list)
    for entry in baseline.entries:
        unmatched[entry.fingerprint].append(entry)
    kept: list[Finding] = []
    dropped: list[Drop] = []
    for finding in findings:
        pool = unmatched.get(finding.fingerprint)
        if pool and not finding.suppressed:
            pool.pop(0)
            dropped.append(Drop(finding=finding, reason="baseline"))
        else:
            kept.append(finding)
    stale = tuple(sorted(e for pool in unmatched.values() for e in pool))
    return kept, dropped, stale


def stale_warning(path: str, count: int) -> str:
    entries = "stale baseline entry" if count == 1 else "stale baseline entries"
    return (f"{count} {entries} (recorded findings that no longer occur; --format json lists them); "
            f"regenerate {path} with 'rltrefactor baseline'")
