"""The profile matrix: ops-only and/or full captures per covered check, per side.

Every capture runs in a fresh process and a fresh directory under one run directory
inside ``out_dir``. The first capture is checked against ``LIMITS`` (file size, event
count, export time) before the rest of the matrix starts; an oversized or failing
capture stops the matrix with its error rather than being rerun as is. The base-vs-head
operator table is built from the ops-only summaries and labelled as profiled numbers.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator, Mapping

from ..types import FileError
from .environment import RunnerSetup
from .records import PerfProfileRow, PerfSummary
from .sides import SideRun, run_side

PROFILED_LABEL = "profiled (not a performance result)"


@dataclass(frozen=True)
class ProfileLimits:
    trace_bytes: int = 64 * 1024 * 1024  # gzipped
    events: int = 1_000_000
    export_seconds: float = 60.0


LIMITS = ProfileLimits()


def profile_matrix(summary: PerfSummary, sides: Mapping[str, tuple[str, str]], *, hooks_dir: str, mode: str,
                   out_dir: str, window: int, device: str, timeout: float,
                   limits: ProfileLimits | None = None, setup: RunnerSetup = RunnerSetup()) -> PerfSummary:
    """Capture each covered check on each side; ``sides``: name -> (root, revision)."""
    limits = limits or LIMITS
    run_dir = os.path.join(out_dir, time.strftime("perf-%Y%m%d-%H%M%S"))
    while os.path.exists(run_dir):
        run_dir += "-1"
    modes = ["ops-only", "full"] if mode == "both" else [mode]
    plan = [(check, side, m) for check in summary.checks for side in ("head", "base") for m in modes]
    errors: list[FileError] = []
    done: dict[tuple[str, str, str], str] = {}
    for index, (check, side, m) in enumerate(plan):
        root, revision = sides[side]
        target = os.path.join(run_dir, side, _slug(check), m)
        extra = ["--device", device, "--profile", m, "--out-dir", target, "--window", str(window),
                 "--revision", revision, "--side", side]
        result = run_side(root, hooks_dir, extra, checks=[check], timeout=timeout, setup=setup)
        problem = _problem(result, check, index == 0, limits)
        if problem:
            errors.append(FileError(target, f"{side}: {m} capture of {check}: {problem}"))
            if index == 0:
                errors.append(FileError(run_dir, "profile matrix stopped after the first capture; "
                                        "reduce --window or narrow the check, then capture again"))
                break
            continue
        done[(check, side, m)] = target
    rows = tuple(_table(summary.checks, done))
    return replace(summary, errors=summary.errors + tuple(errors), artifacts_dir=run_dir, profile_rows=rows)


def _slug(check: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", check.replace(":", "."))


def _problem(result: SideRun, check: str, first: bool, limits: ProfileLimits) -> str:
    if result.errors:
        return result.errors[0].message
    if check in result.skipped:
        return f"skipped: {result.skipped[check]}"
    captured = result.captures.get(check)
    if captured is None:
        return "the runner reported no capture"
    if captured.export_error:
        return f"trace export failed: {captured.export_error}; kept the error, not retried"
    if first:
        checks = (("trace_bytes", captured.trace_bytes, limits.trace_bytes), ("events", captured.events, limits.events),
                  ("export_seconds", captured.export_seconds, limits.export_seconds))
        over = [f"{name} {value} > {limit}" for name, value, limit in checks if value > limit]
        if over:
            return f"first capture over the limits ({', '.join(over)})"
    return ""


def _load(directory: str) -> dict[str, Any]:  # ops.json, as capture.operator_summary wrote it
    with open(os.path.join(directory, "ops.json"), encoding="utf-8") as handle:
        summary: dict[str, Any] = json.load(handle)
    return summary


def _table(checks: Iterable[str], done: Mapping[tuple[str, str, str], str]) -> Iterator[PerfProfileRow]:
    """Per check and operator: counts and self times at base and head (ops-only)."""
    for check in checks:
        base_dir, head_dir = done.get((check, "base", "ops-only")), done.get((check, "head", "ops-only"))
        if base_dir is None or head_dir is None:
            continue
        base = {op["name"]: op for op in _load(base_dir)["operators"]}
        head = {op["name"]: op for op in _load(head_dir)["operators"]}
        rows = []
        for name in set(base) | set(head):
            b, h = base.get(name, {}), head.get(name, {})  # ops.json: the capture's file format
            rows.append(PerfProfileRow(
                check=check, operator=name, label=PROFILED_LABEL,
                base_count=b.get("count", 0), head_count=h.get("count", 0),
                base_self_cpu_us=b.get("self_cpu_us", 0.0), head_self_cpu_us=h.get("self_cpu_us", 0.0),
                base_self_device_us=b.get("self_device_us", 0.0), head_self_device_us=h.get("self_device_us", 0.0),
            ))
        rows.sort(key=lambda r: (-abs(r.head_count - r.base_count),
                                 -max(r.head_self_device_us, r.base_self_device_us),
                                 -max(r.head_self_cpu_us, r.base_self_cpu_us), r.operator))
        yield from rows
