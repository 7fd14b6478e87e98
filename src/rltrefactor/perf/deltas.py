"""Base vs head counts -> per-site deltas.

Sites are matched by (category, path, normalized source text), never by line number:
the base side reports base line numbers, and code that only moved is not a delta. What
is left unmatched on both sides with the same (category, path, ops) and similar text
pairs up too: a renamed variable on the line that does the op is an edit of that site,
not a removal plus an addition. A base path renamed by the change is compared under its head path.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Iterable, Mapping

from ..types import PerfDelta
from .attribution import normalize_source


@dataclass
class _Tally:
    count: int = 0
    bytes: int = 0
    lines: set[int] = field(default_factory=set)
    source: str = ""
    ops: set[str] = field(default_factory=set)


SiteKey = tuple[str, str, str]  # category, path, normalized source
# An unmatched base line and head line doing the same ops are one edited site when their
# texts are this similar (a renamed variable); a different statement stays a -1 and a +1.
_EDIT_SIMILARITY = 0.6


def tally(rows: Iterable[Mapping[str, object]], renames: Mapping[str, str]) -> dict[SiteKey, _Tally]:
    tallies: dict[SiteKey, _Tally] = defaultdict(_Tally)
    for row in rows:
        path = str(row["path"])
        path = renames.get(path, path)
        source = str(row["source"])
        entry = tallies[(str(row["category"]), path, normalize_source(source))]
        entry.count += int(row["count"])  # type: ignore[arg-type]
        entry.bytes += int(row["bytes"])  # type: ignore[arg-type]
        entry.lines.add(int(row["line"]))  # type: ignore[arg-type]
        entry.source = entry.source or source
        direction = str(row.get("direction") or "")
        entry.ops.add(f"{row['op']} {direction}".strip())
    return tallies


def compare(check: str, device: str, base_rows, head_rows, renames: Mapping[str, str]
            ) -> tuple[list[PerfDelta], dict[str, str]]:
    """Deltas for one check, plus the op labels of each delta ("category|path:line")."""
    base = tally(base_rows, renames)
    head = tally(head_rows, {})
    _pair_edited_sites(base, head)
    deltas: list[PerfDelta] = []
    labels: dict[str, str] = {}
    for key in sorted(set(base) | set(head)):
        before, after = base.get(key, _Tally()), head.get(key, _Tally())
        if before.count == after.count:
            continue
        shown = after if after.count else before  # head line numbers whenever the site exists there
        category, path, _ = key
        delta = PerfDelta(
            check=check,
            category=category,  # type: ignore[arg-type]
            path=path,
            line=min(shown.lines) if shown.lines else 0,
            source=shown.source,
            base_count=before.count,
            head_count=after.count,
            device=device,
            bytes_delta=after.bytes - before.bytes,
        )
        deltas.append(delta)
        labels[site_label(delta)] = ", ".join(sorted(before.ops | after.ops))
    return deltas, labels


def _pair_edited_sites(base: dict[SiteKey, _Tally], head: dict[SiteKey, _Tally]) -> None:
    """Cancel unmatched base counts against unmatched head counts of the same ops."""
    spare = {key: entry.count - (head[key].count if key in head else 0) for key, entry in base.items()}
    for key, entry in sorted(head.items()):
        surplus = entry.count - (base[key].count if key in base else 0)
        for other in sorted(k for k, n in spare.items() if n > 0 and k[:2] == key[:2]):
            if surplus <= 0:
                break
            if base[other].ops != entry.ops or _similarity(other[2], key[2]) < _EDIT_SIMILARITY:
                continue
            taken = min(surplus, spare[other])
            spare[other] -= taken
            base[other].count -= taken
            entry.count -= taken
            surplus -= taken


def _similarity(a: str, b: str) -> float:
    return SequenceMatcher(None, a, b).ratio()


def site_label(delta: PerfDelta) -> str:
    return f"{delta.check}|{delta.category}|{delta.path}:{delta.line}"


def detail(delta: PerfDelta) -> str:
    """``+1 sync at loopy/worker/model_runner.py:212 — step_tokens.item()``."""
    change = delta.head_count - delta.base_count
    where = f"{delta.path}:{delta.line}" if delta.path else "(outside the repository)"
    text = f" — {delta.source}" if delta.source else ""
    return f"{change:+d} {delta.category} at {where}{text}"
