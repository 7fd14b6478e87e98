"""What nothing measured: changed functions that run per step, or might, and that no
measurement ran through.

A clean perf result speaks only for the code its checks reached; these functions are
listed beside it as "not measured", so silence is never read as coverage. Where code
runs is the execution stage's verdict (per-step or unknown are listed; one-time and
offline code, classes and module-level statements are not). What was reached is an
input, a set of ``path::qualname`` entries: the micro-checks' coverage today, and any
other measurement of the same change joins the same set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from ..change import contents
from ..config import Config, declared_for
from ..context.execution import EMPTY, ExecutionMap
from ..context.filemodel import FileModel
from ..library.globs import matches
from ..types import ChangeSet
from .coverage import touched_definitions
from .records import PerfSummary, UnmeasuredFunction

if TYPE_CHECKING:
    from ..context.calls.index import CallIndex

Classify = Callable[[str, str], ExecutionMap]  # (repo-relative path, text at head) -> where its functions run
SCAFFOLD_COMMAND = "rltrefactor perf scaffold"


def reached_by_checks(summary: PerfSummary) -> frozenset[str]:
    """The touched ``path::qualname`` entries that a compared or head-only check ran
    through; a check that failed or counted unsteadily measured nothing, and code only a
    check's set-up ran was run, not measured."""
    coverage, set_up = summary.device_evidence.coverage, summary.device_evidence.set_up
    return frozenset(hit for name in (*summary.checks, *summary.head_only) for hit in coverage.get(name, ())
                     if hit not in set_up.get(name, ()))


def classifier(config: Config, call_index: CallIndex | None = None) -> Classify:
    """The execution stage as the review runs it: the configuration's declarations, the
    call index's verdicts when there is one; test files run offline."""

    def classify(path: str, text: str) -> ExecutionMap:
        if matches(path, config.test_paths):
            return EMPTY
        context = call_index.for_file(path) if call_index is not None else None
        return FileModel.read(path, text, declared=declared_for(config, path), repository=context).execution

    return classify


def not_measured(change: ChangeSet, reached: Iterable[str], classify: Classify) -> tuple[UnmeasuredFunction, ...]:
    """Touched functions whose verdict is per-step or unknown and in which nothing of
    ``reached`` ran (an entry counts for the function it names and every function
    enclosing it): per-step ones first, so the first listed is the one a micro-check
    matters most for, then unknown ones, each by path and line."""
    ran: dict[str, list[str]] = {}
    for entry in reached:
        path, _, qualname = entry.partition("::")
        ran.setdefault(path, []).append(qualname)
    found: list[UnmeasuredFunction] = []
    for path, names in sorted(touched_definitions(change).items()):
        text = contents.read_text(change, path)
        if not isinstance(text, str):
            continue  # unreadable at head: touched_definitions read nothing of it either
        where = classify(path, text)
        for name in names:
            function = next((f for f in where.functions if f.qualname == name), None)
            if function is None or function.kind not in ("per-step", "unknown"):
                continue
            if any(q == name or q.startswith(name + ".") for q in ran.get(path, ())):
                continue
            found.append(UnmeasuredFunction(path, function.start_line, name, function.kind, function.evidence))
    return tuple(sorted(found, key=lambda f: (f.execution != "per-step", f.path, f.line, f.qualname)))


def scaffold_command(function: UnmeasuredFunction) -> str:
    return f"{SCAFFOLD_COMMAND} {function.target}"


def describe(function: UnmeasuredFunction) -> str:
    """``path:line  Qual.name  (per-step: evidence)``: one listed function, for text reports."""
    why = f"{function.execution}: {function.evidence}" if function.evidence else function.execution
    return f"{function.path}:{function.line}  {function.qualname}  ({why})"


def not_measured_lines(functions: tuple[UnmeasuredFunction, ...], shown: int | None = None) -> list[str]:
    """The text block every text report prints (empty when nothing is unmeasured): a
    heading, one ``not measured`` line per function, and the command that writes a
    micro-check for the first one."""
    if not functions:
        return []
    lines = [f"not measured ({len(functions)}): changed functions that run per step, or might, and that no "
             "check reached; no result above speaks for them:"]
    listed = functions if shown is None else functions[:shown]
    lines += [f"  not measured  {describe(function)}" for function in listed]
    if len(functions) > len(listed):
        lines.append(f"  ... and {len(functions) - len(listed)} more (--format json lists them all)")
    which = "it" if len(functions) == 1 else "the first"
    lines.append(f"  write a micro-check for {which}: {scaffold_command(functions[0])}")
    return lines


def not_measured_record(function: UnmeasuredFunction) -> dict[str, object]:
    """JSON-ready: the record's fields, ``"status": "not measured"`` and the scaffold command."""
    return {"path": function.path, "line": function.line, "qualname": function.qualname,
            "execution": function.execution, "evidence": function.evidence, "status": "not measured",
            "scaffold": scaffold_command(function)}
