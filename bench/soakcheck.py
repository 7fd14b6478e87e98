"""Review every consecutive range of a History in every output format and check the runs.

What must hold for every run (a violation is a ``Problem``, never an exception):
- the process exits 0 or 1 and its stderr holds no traceback and no internal error;
- json and sarif output parse as JSON;
- every Python file the range touches at its head (``git diff --name-status -M``:
  added, modified, renamed) and to which it adds lines is either in ``reviewed.files``
  or in ``errors`` with a message. A file the range only deletes lines from, or renames
  unchanged, has no added line to report on under the default scope; it is counted
  (``unreviewable``) rather than required;
- every finding names a reviewed file.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field

import rltcli
from history import History, touched_python

FORMATS = ("text", "json", "sarif", "github", "markdown")
_CRASH_MARKERS = ("Traceback (most recent call last)", "internal error")


@dataclass(frozen=True)
class Problem:
    range: str
    format: str
    what: str


@dataclass(frozen=True)
class RangeRecord:
    range: str
    touched: int
    unreviewable: int
    reviewed: int
    findings: int
    errors: tuple[str, ...]
    seconds: dict[str, float]
    exit_codes: dict[str, int]


@dataclass
class SoakResult:
    package: str
    records: list[RangeRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _run(repo: str, span: str, fmt: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [*rltcli.command(), "review", "--repo", repo, "--diff", span, "--format", fmt],
        cwd=repo, capture_output=True, text=True, env=rltcli.env(), timeout=1800,
    )
    return done, time.perf_counter() - started


def _process_problems(span: str, fmt: str, done: subprocess.CompletedProcess) -> list[Problem]:
    problems = []
    if done.returncode not in (0, 1):
        problems.append(Problem(span, fmt, f"exit {done.returncode}: {done.stderr.strip()[-400:]}"))
    for marker in _CRASH_MARKERS if done.returncode in (0, 1) else ():
        if marker in done.stderr:
            problems.append(Problem(span, fmt, f"stderr holds {marker!r}: {done.stderr.strip()[-400:]}"))
    if fmt in ("json", "sarif") and done.returncode in (0, 1):
        try:
            json.loads(done.stdout)
        except ValueError as exc:
            problems.append(Problem(span, fmt, f"output is not JSON: {exc}"))
    return problems


def coverage_problems(span: str, document: dict, required: set[str]) -> list[Problem]:
    reviewed = set(document.get("reviewed", {}).get("files", []))
    errored = {e["path"] for e in document.get("errors", []) if e.get("message")}
    problems = [
        Problem(span, "json", f"{path}: touched at the head but neither reviewed nor reported as an error")
        for path in sorted(required - reviewed - errored)
    ]
    problems += [
        Problem(span, "json", f"{f['path']}:{f['line']}: finding in a file that was not reviewed")
        for f in document.get("findings", []) if f["path"] not in reviewed
    ]
    return problems


def soak_range(history: History, base: str, head: str, result: SoakResult) -> None:
    span = f"{base}..{head}"
    touched = touched_python(history.repo, base, head)
    required = {t.path for t in touched if t.added_lines > 0}
    seconds, codes, document = {}, {}, None
    for fmt in FORMATS:
        done, took = _run(history.repo, span, fmt)
        seconds[fmt], codes[fmt] = round(took, 2), done.returncode
        result.problems += _process_problems(span, fmt, done)
        if fmt == "json" and done.returncode in (0, 1):
            try:
                document = json.loads(done.stdout)
            except ValueError:
                document = None
    if document is not None:
        result.problems += coverage_problems(span, document, required)
    document = document or {}
    result.records.append(RangeRecord(
        range=span, touched=len(touched), unreviewable=len(touched) - len(required),
        reviewed=len(document.get("reviewed", {}).get("files", [])),
        findings=len(document.get("findings", [])),
        errors=tuple(f"{e['path']}:{e.get('line') or ''} {e['message']}" for e in document.get("errors", [])),
        seconds=seconds, exit_codes=codes,
    ))


def soak(history: History) -> SoakResult:
    result = SoakResult(history.package)
    for base, head in history.ranges():
        soak_range(history, base, head, result)
    return result
