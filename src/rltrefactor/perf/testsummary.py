"""Both sides' test runs -> a PerfSummary: deltas on the lines of touched functions only.

Per selected test, in order:

1. a test that failed, errored or skipped on either side is left out, with the reason;
2. a line whose counts of a category differ between the test's two runs on a side is
   unstable: its ops (the same statement, by function and source text, on both sides)
   are dropped before pairing and the line is listed;
3. only ops in the functions the change touched are compared (``deltas.compare``, the
   same pairing as for micro-checks): what the test's set-up does in untouched code is
   never reported, whether it cancels out or not. A test that reached no changed code
   but set-up functions (``set_up_only``: a buffer made pageable in ``__init__``) is
   compared on every line outside its set-up, as a micro-check is, and each of its
   deltas names the changed set-up line as its cause;
4. a site measured by several tests is reported once, by the test that changes it least
   (the closest to one call), so one addition is one finding.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Iterable, Mapping

from ..types import ChangeSet, FileError
from .attribution import normalize_source, outer_definition_name
from .coverage import Touched
from .deltas import compare, site_label
from .protocol import CountRow, Measurement
from .records import PerfDelta, PerfDeviceEvidence, PerfSummary, PerfTestsRun, PerfUnstableLine
from .setup_causes import set_up_lines, with_causes
from .sides import SideRun
from .testmap import TestMap

Site = tuple[str, str, int]  # category, path, line
Statement = tuple[str, str, str, str]  # category, path, function, normalized source


def summarize_tests(change: ChangeSet, touched: Touched, mapped: TestMap, head: SideRun, base: SideRun) -> PerfSummary:
    renames = {f.old_path: f.path for f in change.files if f.old_path and f.old_path != f.path}
    errors = [FileError(e.path, f"head: tracing tests: {e.message}", e.line or None) for e in mapped.errors]
    for side, run in (("head", head), ("base", base)):
        errors += [FileError(e.path, f"{side}: {e.message}", e.line or None) for e in run.errors]
    left_out: dict[str, str] = {}
    unstable: list[PerfUnstableLine] = []
    by_test: dict[str, list[PerfDelta]] = {}
    ops: dict[str, str] = {}
    set_up_by_test: dict[str, tuple[str, ...]] = {}
    for test in mapped.tests:
        reasons = [f"{side}: {run.skipped[test]}" for side, run in (("base", base), ("head", head)) if test in run.skipped]
        if reasons:
            left_out[test] = "; ".join(reasons)
            continue
        before, after = base.results.get(test), head.results.get(test)
        if before is None or after is None:
            continue  # its failure is in errors
        dropped, lines = _unstable(test, {"base": before, "head": after}, touched, renames)
        unstable += lines
        set_up = set_up_only(mapped.tests[test])
        keep = _attributed if set_up else _in_touched
        kept_base = keep(_without(before.counts, dropped, renames), touched, renames)
        kept_head = keep(_without(after.counts, dropped, {}), touched, {})
        found, labels = compare(test, after.device, kept_base, kept_head, renames)
        if set_up:
            found = with_causes(found, set_up_lines(change, set_up), labels)
            set_up_by_test[test] = set_up
        by_test[test] = found
        ops.update(labels)
    deltas = _once_per_site(by_test)
    compared = tuple(by_test)
    evidence = PerfDeviceEvidence(ops={k: v for k, v in ops.items() if k in {site_label(d) for d in deltas}},
                                  coverage=dict(mapped.tests), set_up=set_up_by_test, torch=head.torch_version)
    devices = sorted({head.results[t].device for t in compared})
    return PerfSummary(
        device=", ".join(devices),
        checks=compared,
        deltas=tuple(sorted(deltas, key=lambda d: (d.path, d.line, d.category, d.check))),
        errors=tuple(errors),
        device_evidence=evidence,
        all_failed=bool(errors) and not compared,
        tests=PerfTestsRun(tuple(mapped.tests), left_out, tuple(unstable), mapped.traced),
    )


def _touched_functions(touched: Touched) -> dict[str, set[str]]:
    """path -> the outer definitions a row names (``CountRow.function``) that were touched."""
    return {path: {outer_definition_name(name) for name in names} for path, names in touched.items()}


def set_up_only(hits: Iterable[str]) -> tuple[str, ...]:
    """A test's touched entries when every one it reached outside its test files is a
    set-up function (``__init__``, ``load_*``, ``warmup``, ... or code nested in one);
    else (): the measured part of the test runs changed code of its own."""
    from ..config import DEFAULT_TEST_PATHS
    from ..context.execution import is_setup_name
    from ..library.globs import matches

    engine = [hit for hit in hits if not matches(hit.partition("::")[0], DEFAULT_TEST_PATHS)]
    set_up = [hit for hit in engine
              if any(is_setup_name(part) for part in hit.partition("::")[2].split(".") if not part.startswith("<"))]
    return tuple(set_up) if set_up and len(set_up) == len(engine) else ()


def _attributed(rows: Iterable[CountRow], _touched: Touched, _renames: Mapping[str, str]) -> list[CountRow]:
    """Every op at a repository line: a test whose set-up alone reached the change is
    compared on all its lines, as a micro-check is (its set-up's ops are on none)."""
    return [row for row in rows if row.path]


def _in_touched(rows: Iterable[CountRow], touched: Touched, renames: Mapping[str, str]) -> list[CountRow]:
    functions = _touched_functions(touched)
    return [row for row in rows if row.function in functions.get(renames.get(row.path, row.path), ())]


def _statement(row: CountRow, renames: Mapping[str, str]) -> Statement:
    return (row.category, renames.get(row.path, row.path), row.function, normalize_source(row.source))


def _without(rows: Iterable[CountRow], dropped: set[Statement], renames: Mapping[str, str]) -> list[CountRow]:
    return [row for row in rows if _statement(row, renames) not in dropped]


def _per_site(rows: Iterable[CountRow]) -> dict[Site, int]:
    counts: dict[Site, int] = defaultdict(int)
    for row in rows:
        counts[(row.category, row.path, row.line)] += row.count
    return counts


def _unstable(test: str, sides: Mapping[str, Measurement], touched: Touched,
              renames: Mapping[str, str]) -> tuple[set[Statement], list[PerfUnstableLine]]:
    """Statements to drop on both sides, and the unstable lines within touched functions."""
    dropped: set[Statement] = set()
    listed: list[PerfUnstableLine] = []
    for side, result in sides.items():
        names = renames if side == "base" else {}
        first, second = _per_site(result.counts), _per_site(result.repeat_counts)
        rows = {(r.category, r.path, r.line): r for r in (*result.counts, *result.repeat_counts)}
        for site in sorted(set(first) | set(second)):
            if first.get(site, 0) == second.get(site, 0):
                continue
            row = rows[site]
            dropped.add(_statement(row, names))
            if _in_touched([row], touched, names):
                listed.append(PerfUnstableLine(test, side, row.category, row.path, row.line, row.source,
                                               (first.get(site, 0), second.get(site, 0))))
    return dropped, listed


def _once_per_site(by_test: Mapping[str, list[PerfDelta]]) -> list[PerfDelta]:
    best: dict[tuple[str, str, int, bool], PerfDelta] = {}
    for test in sorted(by_test):
        for delta in by_test[test]:
            key = (delta.category, delta.path, delta.line, delta.added)
            held = best.get(key)
            if held is None or abs(delta.head_count - delta.base_count) < abs(held.head_count - held.base_count):
                best[key] = delta
    return list(best.values())


def merge(checks: PerfSummary | None, tests: PerfSummary) -> PerfSummary:
    """Micro-checks and tests side by side: a function both reach is measured by both."""
    if checks is None:
        return tests
    evidence = replace(
        checks.device_evidence,
        ops={**checks.device_evidence.ops, **tests.device_evidence.ops},
        coverage={**checks.device_evidence.coverage, **tests.device_evidence.coverage},
        set_up={**checks.device_evidence.set_up, **tests.device_evidence.set_up},
        torch=checks.device_evidence.torch or tests.device_evidence.torch,
    )
    measured = bool(checks.checks or checks.head_only or tests.checks)
    return replace(
        checks,
        device=", ".join(sorted({d for s in (checks, tests) for d in s.device.split(", ") if d})),
        checks=checks.checks + tests.checks,
        deltas=tuple(sorted(checks.deltas + tests.deltas, key=lambda d: (d.path, d.line, d.category, d.check))),
        errors=checks.errors + tests.errors,
        device_evidence=evidence,
        all_failed=not measured and (checks.all_failed or tests.all_failed),
        tests=tests.tests,
    )
