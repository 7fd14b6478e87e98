"""Base vs head counts -> per-site deltas.

Sites are matched by (category, path, normalized source text), never by line number:
the base side reports base line numbers, and code that only moved is not a delta. What
is left unmatched then pairs up in two more passes, both within one function:

- an edited line: unmatched base and head sites with the same (category, path, ops)
  and similar text (a renamed variable on the line that does the op);
- a rewritten statement: a run of unmatched base lines and a run of unmatched head lines
  (consecutive among the unmatched lines of that function) doing exactly the same ops,
  all categories together, whose joined texts are similar (one statement reflowed across
  three lines, or three joined into one).

Only what is left after that is a delta, at its own line. A base path renamed by the
change is compared under its head path.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Iterable, Mapping

from .records import PerfDelta
from .attribution import normalize_source
from .protocol import CountRow


@dataclass
class _Tally:
    count: int = 0
    bytes: int = 0
    lines: set[int] = field(default_factory=set)
    source: str = ""
    ops: Counter[str] = field(default_factory=Counter)  # "op direction" -> count; sums to count
    function: str = ""

    def take(self, ops: Counter[str]) -> None:
        """Remove paired work from this site."""
        self.ops -= ops
        self.count -= sum(ops.values())


SiteKey = tuple[str, str, str]  # category, path, normalized source
# Unmatched base and head code doing the same ops is one edited site when their texts
# are this similar (a renamed variable); a different statement stays a -1 and a +1.
_EDIT_SIMILARITY = 0.6
_MAX_RUN = 8  # lines of one statement, at most, on either side of a rewrite


def tally(rows: Iterable[CountRow], renames: Mapping[str, str]) -> dict[SiteKey, _Tally]:
    tallies: dict[SiteKey, _Tally] = defaultdict(_Tally)
    for row in rows:
        path = renames.get(row.path, row.path)
        entry = tallies[(row.category, path, normalize_source(row.source))]
        entry.count += row.count
        entry.bytes += row.bytes
        entry.lines.add(row.line)
        entry.source = entry.source or row.source
        entry.function = entry.function or row.function
        entry.ops[f"{row.op} {row.direction}".strip()] += row.count
    return tallies


def compare(check: str, device: str, base_rows: Iterable[CountRow], head_rows: Iterable[CountRow],
            renames: Mapping[str, str]) -> tuple[list[PerfDelta], dict[str, str]]:
    """Deltas for one check, plus the op labels of each delta ("category|path:line")."""
    base = tally(base_rows, renames)
    head = tally(head_rows, {})
    labels_of = {key: sorted(set(base[key].ops if key in base else ()) | set(head[key].ops if key in head else ()))
                 for key in set(base) | set(head)}
    _pair_edited_sites(base, head)
    _pair_rewritten_statements(base, head)
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
            category=category,  # type: ignore[arg-type]  # a CountRow category: "sync", "copy" or "alloc"
            path=path,
            line=min(shown.lines) if shown.lines else 0,
            source=shown.source,
            base_count=before.count,
            head_count=after.count,
            device=device,
            bytes_delta=after.bytes - before.bytes,
        )
        deltas.append(delta)
        labels[site_label(delta)] = ", ".join(labels_of[key])
    return deltas, labels


def _pair_edited_sites(base: dict[SiteKey, _Tally], head: dict[SiteKey, _Tally]) -> None:
    """Cancel unmatched base counts against unmatched head counts of the same ops."""
    for key, entry in sorted(head.items()):
        for other in sorted(k for k in base if k[:2] == key[:2] and k != key):
            spare, surplus = _surplus(base[other], head.get(other)), _surplus(entry, base.get(key))
            if not spare or not surplus or set(spare) != set(surplus):
                continue
            if _similarity(other[2], key[2]) < _EDIT_SIMILARITY:
                continue
            paired = spare & surplus
            base[other].take(paired)
            entry.take(paired)


def _surplus(entry: _Tally, other: _Tally | None) -> Counter[str]:
    """The ops a site does beyond its namesake on the other side; empty when counts do not
    say so consistently (same count, different ops: no delta is reported there)."""
    extra = entry.ops - other.ops if other is not None else +entry.ops
    wanted = entry.count - (other.count if other is not None else 0)
    return extra if wanted > 0 and sum(extra.values()) == wanted else Counter()


@dataclass
class _Line:
    """The unmatched work of one line of one side: (category, site, ops) per site."""

    number: int
    text: str
    sites: list[tuple[str, _Tally, Counter[str]]]


def _pair_rewritten_statements(base: dict[SiteKey, _Tally], head: dict[SiteKey, _Tally]) -> None:
    """Cancel runs of unmatched lines doing the same ops in the same function (see above)."""
    before, after = _unmatched_lines(base, head), _unmatched_lines(head, base)
    for scope in sorted(set(before) & set(after)):
        old, new = before[scope], after[scope]
        candidates: dict[frozenset[tuple[tuple[str, str], int]], list[tuple[int, int]]] = defaultdict(list)
        for start, stop in _runs(old):
            candidates[_signature(old[start:stop])].append((start, stop))
        used_old: set[int] = set()
        used_new: set[int] = set()
        for start, stop in sorted(_runs(new), key=lambda run: (run[1] - run[0], run[0])):
            if used_new.intersection(range(start, stop)):
                continue
            match = next((run for run in candidates.get(_signature(new[start:stop]), ())
                          if not used_old.intersection(range(*run))
                          and _similarity(_joined(old[slice(*run)]), _joined(new[start:stop])) >= _EDIT_SIMILARITY), None)
            if match is None:
                continue
            used_old.update(range(*match))
            used_new.update(range(start, stop))
            for line in old[slice(*match)] + new[start:stop]:
                for _, entry, ops in line.sites:
                    entry.take(ops)


def _unmatched_lines(side: dict[SiteKey, _Tally], other: dict[SiteKey, _Tally]) -> dict[tuple[str, str], list[_Line]]:
    """(path, function) -> the lines of ``side`` with work unmatched on ``other``, in order."""
    lines: dict[tuple[str, str, int], _Line] = {}
    for key, entry in side.items():
        extra = _surplus(entry, other.get(key))
        if not extra or not entry.lines:
            continue
        number = min(entry.lines)
        line = lines.setdefault((key[1], entry.function, number), _Line(number, key[2], []))
        line.sites.append((key[0], entry, extra))
    grouped: dict[tuple[str, str], list[_Line]] = defaultdict(list)
    for (path, function, _), line in sorted(lines.items()):
        grouped[(path, function)].append(line)
    return grouped


def _runs(lines: list[_Line]) -> list[tuple[int, int]]:
    return [(start, stop) for start in range(len(lines))
            for stop in range(start + 1, min(start + _MAX_RUN, len(lines)) + 1)]


def _signature(lines: list[_Line]) -> frozenset[tuple[tuple[str, str], int]]:
    """The ops of a run of lines, all categories together, as a hashable multiset."""
    total: Counter[tuple[str, str]] = Counter()
    for line in lines:
        for category, _, ops in line.sites:
            total.update({(category, op): n for op, n in ops.items()})
    return frozenset(total.items())


def _joined(lines: list[_Line]) -> str:
    return "".join(line.text for line in lines).replace(" ", "")


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
