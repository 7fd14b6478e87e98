"""Plain renderings of a perf run for ``rltrefactor perf``: text, JSON and a JSON-ready dict.

Review reports (``review --perf``) show perf findings like any other finding; these
functions render what only the perf command shows: the plan, every delta (improvements
included), per-check totals, device evidence, what nothing measured and the profiled
operator table.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..types import Finding
from ..perf.records import PerfSummary, PerfTotals
from ..perf.deltas import detail
from ..perf.summary import change_text, changes_by_check, changes_to_list
from ..perf.unmeasured import not_measured_lines, not_measured_record
from .paths import escape_document, escape_undecodable, quote_path

if TYPE_CHECKING:
    from ..perf.hook import PerfPlan

_TABLE_ROWS = 15


def plan_text(the_plan: PerfPlan) -> str:
    tests = (f"the tests reaching the change, of pytest {' '.join(the_plan.tests) or '(its own discovery)'}"
             if the_plan.tests is not None else "")
    if the_plan.files:
        lines = [f"perf: executing micro-checks from {', '.join(the_plan.files)}", *([f"  and {tests}"] if tests else [])]
    else:
        lines = [f"perf: executing {tests}"]  # no checks: the plan is refused unless tests were asked for
    lines.append(f"  base {the_plan.base[:12]} (temporary worktree) vs head {the_plan.head[:12]}")
    if the_plan.note:
        lines.append(f"  note: {the_plan.note}")
    return "\n".join(lines)


def render_perf_text(summary: PerfSummary) -> str:
    evidence = summary.device_evidence
    coverage, totals = evidence.coverage, evidence.totals
    if summary.all_failed:
        out = [f"perf: every micro-check failed ({len(summary.errors)} error(s)); nothing was compared "
               f"({summary.wall_seconds:.1f} s)"]
    else:
        tests = len(set(summary.checks) & set(summary.tests.selected)) if summary.tests is not None else 0
        what = f"{len(summary.checks) - tests} micro-check(s)" + (f" and {tests} test(s)" if summary.tests else "")
        out = [f"perf: {what} cover the change on {summary.device or 'no device'} ({summary.wall_seconds:.1f} s)"]
    changes = {change.check: change for change in changes_by_check(summary)}
    for check in summary.checks:
        set_up = " (by its set-up only: the measured call runs no changed code)" if check in evidence.set_up else ""
        out.append(f"  {check}  covers {', '.join(coverage.get(check, ()))}{set_up}")
        if check in totals:
            out.append(f"    per call: base {_totals(totals[check].base)} -> head {_totals(totals[check].head)}")
        if check in changes:
            out.append(f"    {change_text(changes[check])}")
    for check in summary.head_only:
        out.append(f"  {check}  covers {', '.join(coverage.get(check, ()))} (new code: measured at head only)")
        if check in totals:
            out.append(f"    per call: head {_totals(totals[check].head)}")
    added = [d for d in summary.deltas if d.added]
    removed = [d for d in summary.deltas if not d.added]
    if added:
        out += [f"added ({len(added)}):"] + [f"  {detail(d)}  [{d.check}]" for d in added]
    if removed:
        out += [f"removed ({len(removed)}), improvements:"] + [f"  {detail(d)}  [{d.check}]" for d in removed]
    if summary.checks and not summary.deltas:
        reached = " in the code the checks reached" if summary.not_measured else ""
        out.append(f"no added or removed syncs, copies or allocations{reached}")
    out += not_measured_lines(summary.not_measured)
    for name, reason in sorted(evidence.skipped.items()):
        out.append(f"skipped {name}: {reason}")
    if summary.tests is not None:
        out += _tests_text(summary)
    out += [f"error {quote_path(e.path)}{f':{e.line}' if e.line else ''}: {e.message}" for e in summary.errors]
    if summary.profile_rows:
        out.append(f"profiled operators (ops-only; profiled numbers, not performance results) in {summary.artifacts_dir}:")
        out.append("  operator | count base->head | self cpu us base->head | self device us base->head")
        for row in summary.profile_rows[:_TABLE_ROWS]:
            out.append(f"  {row.operator[:60]} | {row.base_count}->{row.head_count} | "
                       f"{row.base_self_cpu_us}->{row.head_self_cpu_us} | "
                       f"{row.base_self_device_us}->{row.head_self_device_us}")
    return escape_undecodable("\n".join(out) + "\n")  # names inside details and messages too


def _tests_text(summary: PerfSummary) -> list[str]:
    """Which tests were selected, and what was left out of the comparison and why."""
    tests = summary.tests
    assert tests is not None  # called only for a run with tests
    how = "traced" if tests.traced else "from the cache"
    out = [f"tests reaching the change: {len(tests.selected)} ({how}), {len(tests.left_out)} left out, "
           f"{len(tests.unstable)} unstable line(s) dropped"]
    out += [f"left out {name}: {reason}" for name, reason in sorted(tests.left_out.items())]
    out += [f"unstable {u.path}:{u.line} ({u.side}, {u.category} {u.runs[0]} then {u.runs[1]}) in {u.test}"
            for u in tests.unstable]
    return out


def _totals(totals: PerfTotals | None) -> str:
    return "-" if totals is None else f"sync {totals.sync} copy {totals.copy} alloc {totals.alloc}"


def perf_to_dict(summary: PerfSummary) -> dict[str, Any]:
    """JSON-ready: every field of the summary, deltas with their ``added`` flag and detail,
    per check the counts added and removed (improvements), and what nothing measured."""
    data = asdict(summary)
    data["deltas"] = [{**asdict(d), "added": d.added, "detail": detail(d)} for d in summary.deltas]
    data["per_check"] = changes_to_list(summary)
    data["not_measured"] = [not_measured_record(f) for f in summary.not_measured]
    return data


def render_perf_json(summary: PerfSummary, findings: tuple[Finding, ...]) -> str:
    """The ``rltrefactor/perf/v1`` document: the summary and the findings of its additions."""
    from .json import finding_record

    document = {"schema": "rltrefactor/perf/v1", **perf_to_dict(summary),
                "findings": [finding_record(f) for f in findings]}
    return json.dumps(escape_document(document), indent=2, default=str) + "\n"
