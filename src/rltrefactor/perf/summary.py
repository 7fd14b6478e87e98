"""Both sides' runs -> a PerfSummary: which checks cover the change, what they add; and,
per check, the counts added and removed (improvements) that every report shows.

A check covers the change when its body ran changed code, or when only its set-up did
(a buffer made pageable in ``__init__``): its deltas then name the changed set-up line as
their cause (``setup_causes``). A check is compared when it covers the change and ran on both sides with the same counts
in every repeat. A check that fails at base while everything it covers is new in the
change is measured at head only; a base failure of a check that covers nothing touched
does not matter.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from ..change import contents
from ..source import syntax
from ..types import ChangeSet, FileError
from .records import PerfCheckTotals, PerfCudaComparison, PerfDelta, PerfDeviceEvidence, PerfSummary, PerfTotals
from .coverage import Touched, covered_by_declaration, covered_by_trace
from .deltas import compare
from .protocol import Measurement
from .setup_causes import set_up_lines, with_causes
from .sides import SideError, SideRun

Coverage = dict[str, tuple[str, ...]]  # check -> touched "path::qualname" entries it covers


def select(head: SideRun, touched: Touched) -> Coverage:
    """Checks covering the change -> the touched entries they cover: those their body ran,
    and those only their set-up ran (``set_up_only``)."""
    selected: Coverage = {}
    set_up = set_up_only(head, touched)
    for name, result in head.results.items():
        info = head.loaded.get(name)
        declared = info.covers if info else ()
        hits = covered_by_declaration(declared, touched) if declared else covered_by_trace(result.coverage, touched)
        hits = sorted({*hits, *set_up.get(name, ())})
        if hits:
            selected[name] = tuple(hits)
    return selected


def set_up_only(head: SideRun, touched: Touched) -> Coverage:
    """Checks whose set-up ran changed code while their body ran none -> what the set-up ran.
    A check that declares ``covers=`` says itself what it exercises: never one of these."""
    found: Coverage = {}
    for name, result in head.results.items():
        info = head.loaded.get(name)
        if info is not None and info.covers:
            continue
        if covered_by_trace(result.coverage, touched):
            continue  # the body runs changed code: its deltas are the change's own
        hits = covered_by_trace(result.setup_coverage, touched)
        if hits:
            found[name] = tuple(hits)
    return found


def summarize(change: ChangeSet, head: SideRun, base: SideRun, coverage: Coverage,
              set_up: Coverage | None = None) -> PerfSummary:
    """``set_up``: of the covering checks, those whose set-up alone ran changed code
    (``set_up_only``); each of their deltas names the changed set-up line as its cause."""
    set_up = {name: hits for name, hits in (set_up or {}).items() if name in coverage}
    renames = {f.old_path: f.path for f in change.files if f.old_path and f.old_path != f.path}
    head_only = _head_only(change, head, base, coverage)
    errors = [FileError(e.path, f"head: {e.message}", e.line) for e in head.errors]
    errors += [FileError(e.path, f"base: {e.message}", e.line) for e in base.errors
               if _concerns(e, head, coverage) and e.check not in head_only]
    deltas: list[PerfDelta] = []
    ops: dict[str, str] = {}
    totals: dict[str, PerfCheckTotals] = {}
    cuda: dict[str, PerfCudaComparison] = {}
    for name in coverage:
        before, after = base.results.get(name), head.results.get(name)
        if before is None or after is None:
            continue  # its failure is already in errors, or the code it covers is new
        if not (before.deterministic and after.deterministic):
            errors.append(_unstable(head, name, {"base": before, "head": after}))
            continue
        found, labels = compare(name, after.device, before.counts, after.counts, renames)
        if name in set_up:
            found = with_causes(found, set_up_lines(change, set_up[name]), labels)
        deltas += found
        ops.update(labels)
        totals[name] = PerfCheckTotals(before.run_totals[0], after.run_totals[0])
        if after.evidence is not None:
            cuda[name] = PerfCudaComparison(before.evidence, after.evidence)
    checks = tuple(totals)
    totals.update({n: PerfCheckTotals(None, head.results[n].run_totals[0]) for n in head_only})
    evidence = PerfDeviceEvidence(ops=ops, coverage=coverage, set_up=set_up, skipped={**base.skipped, **head.skipped},
                                  totals=totals, cuda=cuda, torch=head.torch_version)
    return PerfSummary(
        device=", ".join(sorted({head.results[n].device for n in (*checks, *head_only)})),
        checks=checks,
        deltas=tuple(sorted(deltas, key=lambda d: (d.path, d.line, d.category, d.check))),
        errors=tuple(errors),
        device_evidence=evidence,
        head_only=tuple(head_only),
        all_failed=bool(errors) and not checks and not head_only and (bool(coverage) or not head.results),
    )


def _head_only(change: ChangeSet, head: SideRun, base: SideRun, coverage: Coverage) -> list[str]:
    """Covering checks that ran at head and failed at base only because everything they
    cover is new in the change: counts shown, nothing to compare, not a failure."""
    failed_at_base = {e.check for e in base.errors if e.check}
    wanted = [n for n in coverage if n in head.results and n in failed_at_base]
    if not wanted:
        return []
    old_paths = {f.path: f.old_path for f in change.files if f.old_path}  # added files have none
    paths = sorted({hit.split("::", 1)[0] for n in wanted for hit in coverage[n]})
    texts = contents.read_base_sources(change, [old_paths[p] for p in paths if p in old_paths])
    existing: dict[str, set[str]] = {}
    for path in paths:
        text = texts.get(old_paths.get(path, ""))
        existing[path] = ({d.qualname for d in syntax.definitions(text).definitions} | {"<module>"}
                          if isinstance(text, str) else set())
    return [n for n in wanted
            if all(hit.split("::", 1)[1] not in existing[hit.split("::", 1)[0]] for hit in coverage[n])]


def _concerns(error: SideError, head: SideRun, coverage: Coverage) -> bool:
    """A base-side failure matters only for a check that covers the change."""
    if error.check:
        return error.check in coverage
    files = {head.loaded[name].path for name in coverage if name in head.loaded}
    return not error.path or error.path in files


def _unstable(head: SideRun, name: str, sides: dict[str, Measurement]) -> FileError:
    where = head.loaded.get(name)
    totals = "; ".join(f"{side}: " + " / ".join(_totals(t) for t in result.run_totals)
                       for side, result in sides.items() if not result.deterministic)
    return FileError(
        where.path if where else "",
        f"micro-check {name}: counts differ between repeated runs ({totals}); make the body "
        "deterministic (fixed inputs, no time- or order-dependent paths); no delta reported",
        where.line if where else None,
    )


def _totals(totals: PerfTotals) -> str:
    return f"sync {totals.sync} copy {totals.copy} alloc {totals.alloc}"


@dataclass(frozen=True)
class CheckChange:
    """What one check's deltas add and remove per call, by category (both as counts >= 0)."""

    check: str
    added: PerfTotals
    removed: PerfTotals


def changes_by_check(summary: PerfSummary) -> tuple[CheckChange, ...]:
    """Per compared check with a delta, in the summary's check order."""
    added: dict[str, Counter[str]] = {}
    removed: dict[str, Counter[str]] = {}
    for delta in summary.deltas:
        change = delta.head_count - delta.base_count
        side = added if change > 0 else removed
        side.setdefault(delta.check, Counter())[delta.category] += abs(change)
    order = [*summary.checks, *sorted({d.check for d in summary.deltas} - set(summary.checks))]
    return tuple(CheckChange(name, _counted(added.get(name)), _counted(removed.get(name)))
                 for name in order if name in added or name in removed)


def _counted(counts: Counter[str] | None) -> PerfTotals:
    counts = counts or Counter()
    return PerfTotals(sync=counts["sync"], copy=counts["copy"], alloc=counts["alloc"], race=counts["race"])


def improvements(summary: PerfSummary) -> tuple[PerfDelta, ...]:
    """The removed syncs, copies and allocations: no findings, shown beside the additions."""
    return tuple(d for d in summary.deltas if not d.added)


def change_text(change: CheckChange) -> str:
    """``added +2 sync, +1 alloc · improvements -47 sync`` (a side with nothing is left out)."""
    parts = []
    for label, totals, sign in (("added", change.added, "+"), ("improvements", change.removed, "-")):
        counts = [f"{sign}{n} {category}" for category, n in asdict(totals).items() if n]
        if counts:
            parts.append(f"{label} {', '.join(counts)}")
    return " · ".join(parts)


def changes_to_list(summary: PerfSummary) -> list[dict[str, Any]]:
    """JSON-ready per-check changes: ``{"check", "added": {...}, "removed": {...}}``."""
    return [asdict(change) for change in changes_by_check(summary)]
