"""``--format text``: findings grouped by file, a code frame each, one summary line."""

from __future__ import annotations

import io
from collections import Counter
from itertools import groupby

from rich.console import Console
from rich.text import Text

from ..findings.result import ReviewResult
from ..types import Finding
from .paths import escape_undecodable, quote_path

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render_text(
    result: ReviewResult,
    *,
    color: bool = False,
    show_preexisting: bool = False,
    quiet: bool = False,
    statistics: bool = False,
    width: int = 100,
    explain: bool = False,
) -> str:
    """Each finding: its impact, one line of evidence and the fix; ``explain`` adds its
    notes, the caveats and context of the claim."""
    buffer = io.StringIO()
    # markup=False: paths, evidence and messages print as written (`x[i]` is not a style tag).
    console = Console(
        file=buffer, force_terminal=color, color_system="standard" if color else None,
        width=width, highlight=False, soft_wrap=True, markup=False,
    )
    shown = [f for f in result.findings if _visible(f, show_preexisting)]
    if not quiet:
        for path, group in groupby(shown, key=lambda f: f.path):
            console.print(Text(quote_path(path), style="bold underline"))
            for finding in group:
                _print_finding(console, finding, explain)
            console.print()
        for error in result.errors:
            where = f"{quote_path(error.path)}:{error.line}" if error.line else quote_path(error.path)
            console.print(Text.assemble(("error ", "bold magenta"), f"{where}: {error.message}"))
        _print_unchecked(console, result)
        _print_perf_changes(console, result)
        _print_not_measured(console, result)
    if statistics:
        _print_statistics(console, shown)
    console.print(_summary(result, shown, show_preexisting))
    return escape_undecodable(buffer.getvalue())  # names inside messages and evidence too


def _visible(finding: Finding, show_preexisting: bool) -> bool:
    if finding.suppressed:
        return False
    return finding.status == "new" or show_preexisting


def _print_finding(console: Console, finding: Finding, explain: bool) -> None:
    span = finding.span
    also_at = ", ".join(map(str, finding.also_at))
    header = Text.assemble(
        (f"  {quote_path(finding.path)}:{span.line}:{span.column}", "bold"),
        (f" (also {'line' if len(finding.also_at) == 1 else 'lines'} {also_at})" if also_at else "", "dim"),
        "  ",
        (finding.severity, _SEVERITY_STYLE.get(finding.severity, "")),
        (f" ({finding.confidence} confidence)" if finding.confidence else "", "dim"),
        "  ",
        (", ".join((finding.rule_id, *finding.also_rules)), "bold"),
        f"  {finding.title}",
    )
    if finding.moved_from is not None:
        origin = finding.moved_from
        header.append(f"  (pre-existing, moved from {quote_path(origin.path)} {origin.definition})", style="dim")
    elif finding.status == "pre-existing":
        header.append("  (pre-existing)", style="dim")
    if finding.confirmed:
        header.append("  [confirmed by perf hook]", style="green")
    console.print(header)
    if finding.snippet:
        gutter = f"{span.line:>6} │ "
        console.print(Text(gutter, style="dim") + Text(finding.snippet.rstrip()))
        end = span.end_column if span.end_line == span.line else len(finding.snippet.rstrip()) + 1
        width = max(1, end - span.column)
        console.print(Text(" " * 6 + " │ " + " " * (span.column - 1), style="dim") + Text("^" * width, style="red"))
    console.print(Text.assemble(("    impact:   ", "bold"), finding.impact))
    if finding.evidence:
        console.print(Text.assemble(("    evidence: ", "bold"), finding.evidence))
    console.print(Text.assemble(("    fix:      ", "bold"), finding.fix))
    for note in finding.notes if explain else ():
        console.print(Text.assemble(("    note:     ", "dim"), note))


# Changed functions listed by name before the rest are only counted.
_UNCHECKED_SHOWN = 8


def _print_unchecked(console: Console, result: ReviewResult) -> None:
    """Say which changed code device-residency rules skipped, and why."""
    functions = result.changed_functions
    if not functions:
        return
    skipped = [f for f in functions if f.execution in ("one-time", "offline", "per-request")]
    checked = [f for f in functions if f.execution in ("per-step", "unknown")]
    if skipped:
        console.print(Text("Not checked by per-step rules (runs once, per request or offline):", style="bold"))
        for function in skipped[:_UNCHECKED_SHOWN]:
            where = quote_path(function.path)
            console.print(f"  {where}  {function.qualname}  {function.execution}: {function.evidence}")
        if len(skipped) > _UNCHECKED_SHOWN:
            console.print(f"  ... and {len(skipped) - _UNCHECKED_SHOWN} more (--format json lists them all)")
        console.print("  One that runs per step after all: name it in `hot-functions` under [tool.rltrefactor].")
    if not checked:
        console.print(
            "No changed code runs per step, or might: device-residency rules had nothing to check. "
            "If some of it does, name it with `hot-functions` (function-name patterns) or `hot-paths` "
            "(file globs) in the configuration ([tool.rltrefactor] or rltrefactor.toml); they beat what names suggest."
        )
    if skipped or not checked:
        console.print()


def _print_perf_changes(console: Console, result: ReviewResult) -> None:
    """Per check, what the perf hook measured added and removed; removals are improvements,
    never findings, so they are listed here by site."""
    if result.perf is None or not result.perf.deltas:
        return
    from ..perf.deltas import detail
    from ..perf.summary import change_text, changes_by_check, improvements

    console.print(Text("Perf hook, per call (additions are the perf-added-* findings):", style="bold"))
    for change in changes_by_check(result.perf):
        console.print(f"  {change.check}  {change_text(change)}")
    removed = improvements(result.perf)
    for delta in removed[:_UNCHECKED_SHOWN]:
        console.print(Text.assemble(("  improvement ", "green"), f"{detail(delta)}  [{delta.check}]"))
    if len(removed) > _UNCHECKED_SHOWN:
        console.print(f"  ... and {len(removed) - _UNCHECKED_SHOWN} more improvements (--format json lists them all)")
    console.print()


def _print_not_measured(console: Console, result: ReviewResult) -> None:
    """Changed per-step code the perf hook reached with nothing: a clean perf result is
    not coverage of it."""
    if result.perf is None or not result.perf.not_measured:
        return
    from ..perf.unmeasured import not_measured_lines

    heading, *rest = not_measured_lines(result.perf.not_measured, shown=_UNCHECKED_SHOWN)
    console.print(Text("Perf hook, " + heading, style="bold"))
    for line in rest:
        console.print(line)
    console.print()


def _print_statistics(console: Console, shown: list[Finding]) -> None:
    counts = Counter((f.rule_id, f.severity) for f in shown)
    for (rule_id, severity), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        console.print(f"{count:>5}  {severity:<8} {rule_id}")


def _moves_summary(count: int) -> str:
    """The summary's part for code moved to run less often (``ReviewResult.moved_to_run_less``)."""
    return f"{count} improvement{'s' if count != 1 else ''}: code moved to run less often (--format json lists where)"


def _nothing_to_review(result: ReviewResult) -> str:
    """Why a review had no file: an empty change, or PATHs that select none of its files."""
    change = result.change
    if change.unselected:
        elsewhere = "its 1 changed file lies" if change.unselected == 1 else f"its {change.unselected} changed files lie"
        return f"Nothing to review: the paths given select none of the change's files ({elsewhere} elsewhere)."
    if change.full_scan:
        return "Nothing to review: the paths given hold no Python file."
    return "Nothing to review: the change is empty."


def _summary(result: ReviewResult, shown: list[Finding], show_preexisting: bool) -> Text:
    failing = len(result.failing)
    if not result.change.files:
        return Text(_nothing_to_review(result))
    suppressed = sum(f.suppressed for f in result.findings)
    preexisting = sum(f.status == "pre-existing" and not f.suppressed for f in result.findings)
    # Reviewed means fully reviewed here; a file with a recorded error is counted apart.
    reviewed = len(set(result.files_reviewed) - set(result.files_unreviewable))
    parts = [
        f"{len(shown)} finding{'s' if len(shown) != 1 else ''} ({failing} failing at fail-on={result.fail_on})",
        f"{reviewed} file{'s' if reviewed != 1 else ''} reviewed",
    ]
    if suppressed:
        parts.append(f"{suppressed} suppressed")
    if preexisting:
        # The hint names the flag only while the pre-existing findings are hidden.
        parts.append(f"{preexisting} pre-existing" + ("" if show_preexisting else " (--show-preexisting)"))
    if result.baselined:
        parts.append(f"{result.baselined} held back by the baseline")
    if result.unknown_frequency:
        parts.append(f"{result.unknown_frequency} held back: per-step claims in code nothing is seen running "
                     "(--show-unknown-frequency)")
    if result.new_code_rules:
        parts.append(f"{result.new_code_rules} held back: rules reported on new code only (--show-held-back)")
    if result.moved_to_run_less:
        parts.append(_moves_summary(result.improvements))
    unreviewable = len(result.files_unreviewable)
    if unreviewable:
        gate = " (fails the run)" if result.fail_on_unreviewable else ""
        parts.append(f"{unreviewable} file{'s' if unreviewable != 1 else ''} could not be fully reviewed{gate}")
    other_errors = len(result.errors) - sum(e.path in result.files_unreviewable for e in result.errors)
    if other_errors:
        parts.append(f"{other_errors} other error{'s' if other_errors != 1 else ''}")
    parts.append(f"library {result.library_versions or result.library_version}")
    parts.append(f"{result.timings.get('total', 0.0):.2f} s")
    style = "bold red" if result.gate_failed else "bold green"
    return Text(" · ".join(parts), style=style)
