"""Base vs head counts -> per-site deltas.

Each measured op is a unit: (category, op, direction) at a line of a function. Base
units are paired with head units of the same (category, op, direction) in four passes,
each only over what the previous ones left:

1. the same source text in the same function (code that stayed, moved or was
   re-indented: line numbers are never compared, the base reports base lines);
2. the same source text in another function of the file (a statement moved into a new
   helper);
3. anywhere in the same function, as multisets (a statement split in two, two merged
   into one, reordered, rewrapped or edited): where one side does more of an op, its
   units most similar in text to the other side's are paired first, so the surplus
   stays on the lines that are new;
4. a similar source text in another function of the file (a statement edited as it
   moved into a helper: ``tokens = logits.argmax(-1)`` -> ``return logits.argmax(-1)``).

5. the same op on the same statement of the same function, counted in another category
   (a non_blocking upload that became a hidden sync when its source lost its pinning):
   the costlier side stays, as an addition or a removal, and the other is no delta, so
   the copy that became a sync is one added sync, not also a removed copy.

Only what is left is a delta: an unpaired head unit is an addition at its head line,
an unpaired base unit a removal, shown at the head line of the same text in the same
function when the statement is still there, else at its base line. Pass 3 runs in every
function, changed or not: an unchanged function doing the same ops per call costs the
same. A base path renamed by the change is compared under its head path.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Callable, Hashable, Iterable, Mapping

from .records import PerfDelta
from .attribution import normalize_source
from .protocol import CountRow
from .races import copying_line

# Unpaired work in two functions is one edited statement when the texts are this similar;
# a different statement stays a removal and an addition.
_EDIT_SIMILARITY = 0.6
# Pairing candidates in one group past which text similarity is not computed (line
# distance alone then orders them): a bound on the quadratic pass, never reached by a
# function of ordinary size.
_SIMILARITY_PAIRS = 4096


@dataclass
class _Unit:
    """One row of one side; ``left`` counts the events not yet paired with the other side."""

    category: str
    op: str  # "aten.zeros", "aten._to_copy d2h pinned->device non_blocking" for a copy
    path: str
    function: str
    line: int
    source: str
    text: str  # normalized source, compared across revisions
    count: int
    bytes: int
    left: int
    copied_by: str = ""  # races: the copy raced, with its line at this unit's side

    @property
    def left_bytes(self) -> int:
        return self.bytes * self.left // self.count if self.count else 0


def _units(rows: Iterable[CountRow], renames: Mapping[str, str]) -> list[_Unit]:
    units = [
        _Unit(row.category, _op(row), renames.get(row.path, row.path), row.function, row.line, row.source,
              normalize_source(row.source), row.count, row.bytes, row.count,
              row.direction if row.category == "race" else "")
        for row in rows if row.count > 0
    ]
    return sorted(units, key=lambda u: (u.path, u.function, u.line, u.category, u.op))


def _op(row: CountRow) -> str:
    """What pairs across revisions: a race names its copy by text, never by line number
    (lines move between base and head)."""
    if row.category != "race":
        return f"{row.op} {row.direction}".strip()
    copy = copying_line(row.direction)
    return f"{row.op} {copy.kind} of `{normalize_source(copy.source)}`"


Key = Callable[[_Unit], Hashable]
Rank = Callable[[_Unit, _Unit], tuple[float, ...]]


def _by_line(old: _Unit, new: _Unit) -> tuple[float, ...]:
    return (abs(old.line - new.line),)


def _by_text(old: _Unit, new: _Unit) -> tuple[float, ...]:
    return (-SequenceMatcher(None, old.text, new.text).ratio(), abs(old.line - new.line))


# (group key, candidate order, least text similarity of a pair: None for any pair)
_PASSES: tuple[tuple[Key, Rank, float | None], ...] = (
    (lambda u: (u.category, u.op, u.path, u.function, u.text), _by_line, None),
    (lambda u: (u.category, u.op, u.path, u.text), _by_line, None),
    (lambda u: (u.category, u.op, u.path, u.function), _by_text, None),
    (lambda u: (u.category, u.op, u.path), _by_text, _EDIT_SIMILARITY),
)


# Each op counts once, in its costliest category (``counting``); races are never re-paired.
_COST = {"sync": 0, "copy": 1, "alloc": 2}


def _recategorized(base: list[_Unit], head: list[_Unit]) -> None:
    """Pass 5: one op of one statement in another category at each side; the cheaper
    side's unit is consumed, the costlier stays a delta."""
    groups: dict[Hashable, tuple[list[_Unit], list[_Unit]]] = defaultdict(lambda: ([], []))
    for side, units in enumerate((base, head)):
        for unit in units:
            if unit.left and unit.category in _COST:
                groups[(unit.op.split(" ", 1)[0], unit.path, unit.function, unit.text)][side].append(unit)
    for old, new in groups.values():
        for a in old:
            for b in new:
                if a.category == b.category or not (a.left and b.left):
                    continue
                taken = min(a.left, b.left)
                cheaper = a if _COST[a.category] > _COST[b.category] else b
                cheaper.left -= taken


def _pair(base: list[_Unit], head: list[_Unit]) -> None:
    """Run the pairing passes, lowering ``left`` on both sides."""
    for key, rank, least in _PASSES:
        groups: dict[Hashable, tuple[list[_Unit], list[_Unit]]] = defaultdict(lambda: ([], []))
        for side, units in enumerate((base, head)):
            for unit in units:
                if unit.left:
                    groups[key(unit)][side].append(unit)
        for old, new in groups.values():
            if old and new:
                _pair_group(old, new, rank, least)
    _recategorized(base, head)


def _pair_group(old: list[_Unit], new: list[_Unit], rank: Rank, least: float | None) -> None:
    if least is None and sum(u.left for u in old) == sum(u.left for u in new):
        for unit in (*old, *new):
            unit.left = 0  # the same ops in the same number: which goes with which does not matter
        return
    if len(old) * len(new) > _SIMILARITY_PAIRS:
        if least is not None:
            return  # too many to compare by text: left as removals and additions
        rank = _by_line
    candidates = sorted(((rank(a, b), i, j) for i, a in enumerate(old) for j, b in enumerate(new)))
    for ranked, i, j in candidates:
        if least is not None and -ranked[0] < least:
            break  # ordered by similarity: every later pair is less similar still
        taken = min(old[i].left, new[j].left)
        old[i].left -= taken
        new[j].left -= taken


@dataclass
class _Place:
    """Where a delta is shown, with the counts of that place's own side."""

    count: int = 0  # all events of the category at this line on the side it belongs to
    net: int = 0  # unpaired head events minus unpaired base events shown here
    bytes: int = 0
    source: str = ""
    at_head: bool = True
    ops: frozenset[str] = frozenset()
    copied_by: str = ""


def compare(check: str, device: str, base_rows: Iterable[CountRow], head_rows: Iterable[CountRow],
            renames: Mapping[str, str]) -> tuple[list[PerfDelta], dict[str, str]]:
    """Deltas for one check, plus the op labels of each delta ("check|category|path:line")."""
    base, head = _units(base_rows, renames), _units(head_rows, {})
    _pair(base, head)
    places = _places(base, head)
    deltas: list[PerfDelta] = []
    labels: dict[str, str] = {}
    for (category, path, line, _), place in sorted(places.items()):
        if place.net == 0:
            continue  # all paired, or one statement trading an op for another of its category
        counts = (place.count - place.net, place.count) if place.at_head else (place.count, place.count + place.net)
        delta = PerfDelta(check=check, category=category,  # type: ignore[arg-type]  # a CountRow category
                          path=path, line=line, source=place.source, base_count=counts[0], head_count=counts[1],
                          device=device, bytes_delta=place.bytes, copied_by=place.copied_by)
        deltas.append(delta)
        labels[site_label(delta)] = ", ".join(sorted(place.ops))
    return deltas, labels


PlaceKey = tuple[str, str, int, bool]  # category, path, line, whether a head line


def _places(base: list[_Unit], head: list[_Unit]) -> dict[PlaceKey, _Place]:
    places: dict[PlaceKey, _Place] = defaultdict(_Place)
    for unit in head:
        place = places[(unit.category, unit.path, unit.line, True)]
        place.count += unit.count
        place.source = place.source or unit.source
    for unit in head:
        if unit.left:
            _show(places[(unit.category, unit.path, unit.line, True)], unit, unit.left)
    still_there = _head_lines_by_text(head)
    base_counts: dict[tuple[str, str, int], int] = defaultdict(int)
    for unit in base:
        base_counts[(unit.category, unit.path, unit.line)] += unit.count
    for unit in base:
        if not unit.left:
            continue
        line = still_there.get((unit.category, unit.path, unit.function, unit.text))
        if line is None:
            place = places[(unit.category, unit.path, unit.line, False)]
            place.at_head, place.source = False, unit.source
            place.count = base_counts[(unit.category, unit.path, unit.line)]
        else:
            place = places[(unit.category, unit.path, line, True)]
        _show(place, unit, -unit.left)
    return places


def _show(place: _Place, unit: _Unit, net: int) -> None:
    place.net += net
    place.bytes += unit.left_bytes if net > 0 else -unit.left_bytes
    place.ops |= {unit.op}
    place.copied_by = place.copied_by or unit.copied_by


def _head_lines_by_text(head: list[_Unit]) -> dict[tuple[str, str, str, str], int]:
    """(category, path, function, text) -> the first head line of that text there."""
    lines: dict[tuple[str, str, str, str], int] = {}
    for unit in head:
        key = (unit.category, unit.path, unit.function, unit.text)
        lines[key] = min(lines.get(key, unit.line), unit.line)
    return lines


def site_label(delta: PerfDelta) -> str:
    return f"{delta.check}|{delta.category}|{delta.path}:{delta.line}"


def detail(delta: PerfDelta) -> str:
    """``+1 sync at loopy/worker/model_runner.py:212 — step_tokens.item()``."""
    change = delta.head_count - delta.base_count
    where = f"{delta.path}:{delta.line}" if delta.path else "(outside the repository)"
    text = f" — {delta.source}" if delta.source else ""
    if delta.copied_by:
        text += f" (while the copy at {copying_line(delta.copied_by).site} is in flight)"
    if delta.cause:
        text += f" (cause, in set-up: {delta.cause})"
    return f"{change:+d} {delta.category} at {where}{text}"
