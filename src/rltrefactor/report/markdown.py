"""The PR summary: findings, dispositions, perf deltas and the manual checklist.

A pure function of the result and the link context: the caller looks up the remote
(``links.remote_url``) and passes it in, so the same result always renders the same
text. Sections are fixed and always in this order: header, findings, pre-existing
findings (on request), dispositions, perf, manual checklist, files not reviewed; a
section with nothing to say is left out, except findings, which then says so. Without a
rules reference to link to, a last section gives the texts of the rules named above.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, fields
from typing import Iterable, Mapping, Sequence

from ..library.model import Rule
from ..perf.records import PerfDelta, PerfProfileRow, PerfSummary, PerfTestsRun, UnmeasuredFunction
from ..findings.result import ReviewResult
from ..types import Finding
from .links import WebRepo, permalink, rule_url, tool_version, web_repo
from .paths import escape_undecodable, quote_path

NOTHING_FOUND = "No applicable issue was found."


@dataclass(frozen=True)
class _Links:
    repo: WebRepo | None
    head_sha: str | None
    base_sha: str | None
    docs_url: str | None  # None: rule ids are not linked; ``_rule_texts`` carries them
    anchors: Mapping[str, str]  # rule id -> anchor in the rules reference

    def location(self, path: str, line: int, end_line: int | None = None, *, base: bool = False) -> str:
        label = f"{quote_path(path)}:{line}"
        url = permalink(self.repo, self.base_sha if base else self.head_sha, path, line, end_line)
        return f"[`{label}`]({url})" if url else f"`{label}`"

    def rule(self, rule_id: str) -> str:
        url = rule_url(self.anchors.get(rule_id, rule_id), self.docs_url)
        return f"[`{rule_id}`]({url})" if url else f"`{rule_id}`"


def render_markdown(
    result: ReviewResult,
    *,
    remote_url: str | None = None,
    head_sha: str | None = None,
    docs_url: str | None = None,
    show_preexisting: bool = False,
    all_manual: bool = False,
    explain: bool = False,
) -> str:
    """The summary as GitHub-flavoured Markdown.

    ``head_sha`` overrides the head commit permalinks point at (default: the reviewed
    head commit; staged and working-tree reviews get plain ``path:line`` locations).
    Rule ids link into ``docs_url``; without one, the summary ends with the texts of the
    rules it names, folded.
    Pre-existing findings (not introduced by the change) get their own section only
    with ``show_preexisting``. The manual checklist is the result's (the areas the change
    touched), or every manual rule with ``all_manual``. A finding's impact cell holds its
    impact and evidence; ``explain`` adds its notes (the caveats of the claim).
    """
    change = result.change
    sha = head_sha or (change.head.ref if change.head.kind == "git" else None)
    anchors = {r.id: r.anchor for r in result.rules_run}
    links = _Links(web_repo(remote_url), sha, change.base, docs_url, anchors)
    shown = [f for f in result.findings if not f.suppressed]
    new = [f for f in shown if f.status == "new"]
    preexisting = [f for f in shown if show_preexisting and f.status == "pre-existing"]
    suppressed = [f for f in result.findings if f.suppressed]
    checklist = _manual_rules(result, all_manual)
    blocks = [
        _header(result, links),
        _findings("Findings", new, links, empty=NOTHING_FOUND, explain=explain),
        _findings("Pre-existing findings", preexisting, links, explain=explain),
        _dispositions(suppressed, links),
        _perf(result.perf, links),
        _checklist(checklist, links, all_manual),
        _file_errors(result),
        "" if docs_url else _rule_texts(
            result, [rule for f in (*new, *preexisting, *suppressed) for rule in (f.rule_id, *f.also_rules)], checklist),
    ]
    # Names inside messages and evidence too: the summary must encode as UTF-8.
    return escape_undecodable("\n\n".join(block for block in blocks if block) + "\n")


def _manual_rules(result: ReviewResult, all_manual: bool) -> tuple[Rule, ...]:
    return tuple(r for r in result.rules_run if not r.automated) if all_manual else result.checklist


def _header(result: ReviewResult, links: _Links) -> str:
    change = result.change
    what = change.description or "the change"
    parts = [f"Reviewed **{_inline(what)}**"]
    if change.base:
        parts.append(f"base `{change.base[:12]}`")
    parts.append(f"head {_head_label(result, links)}")
    parts.append(f"rule library {result.library_versions or result.library_version}")
    parts.append(f"rltrefactor {tool_version()}")
    run = len(result.rules_run)
    # Counted as `rltrefactor rules list` counts the library, whatever the run selected.
    ran = f"{run} of {_plural(result.library_rules, 'rule')} run" if result.library_rules > run else f"{_plural(run, 'rule')} run"
    counts = f"{ran} on {_plural(len(result.files_reviewed), 'file')}"
    moved = result.improvements
    if moved:
        counts += f" · {_plural(moved, 'improvement')}: code moved to run less often"
    if result.baselined:
        counts += f" · {_plural(result.baselined, 'finding')} held back by the baseline"
    if result.unknown_frequency:
        counts += (f" · {_plural(result.unknown_frequency, 'finding')} held back: per-step claims in code nothing "
                   "is seen running (`--show-unknown-frequency`)")
    if result.new_code_rules:
        counts += f" · {_plural(result.new_code_rules, 'finding')} held back: rules reported on new code only (`--show-held-back`)"
    return "## rltrefactor review\n\n" + " · ".join(parts) + f" · {counts}."


def _head_label(result: ReviewResult, links: _Links) -> str:
    head = result.change.head
    if links.head_sha:
        short = f"`{links.head_sha[:12]}`"
        if links.repo is not None and links.repo.forge != "other":
            return f"[{short}]({links.repo.commit(links.head_sha)})"
        return short
    return "staged changes (index)" if head.kind == "index" else "working tree"


def _findings(title: str, findings: Sequence[Finding], links: _Links, *, empty: str = "", explain: bool = False) -> str:
    if not findings:
        return f"### {title}\n\n{empty}" if empty else ""
    rows = ["| Severity | Location | Rule | Impact | Fix |", "|---|---|---|---|---|"]
    for f in sorted(findings, key=lambda f: (f.path, f.span.line, f.span.column, f.rule_id)):
        confidence = f" · {f.confidence} confidence" if f.confidence else ""
        severity = f.severity + confidence + (" · confirmed by perf" if f.confirmed else "")
        where = links.location(f.path, f.span.line, f.span.end_line)
        if f.also_at:
            where += f" (also {'line' if len(f.also_at) == 1 else 'lines'} {', '.join(map(str, f.also_at))})"
        rule = " ".join(links.rule(rule_id) for rule_id in (f.rule_id, *f.also_rules)) + f" {_cell(f.title)}"
        impact = "\n".join(part for part in (f.impact, f.evidence, *(f.notes if explain else ())) if part)
        rows.append(f"| {severity} | {where} | {rule} | {_cell(impact)} | {_cell(f.fix)} |")
    return f"### {title} ({len(findings)})\n\n" + "\n".join(rows)


def _dispositions(findings: Sequence[Finding], links: _Links) -> str:
    if not findings:
        return ""
    items = []
    for f in sorted(findings, key=lambda f: (f.path, f.span.line, f.rule_id)):
        reason = _inline(f.disposition) if f.disposition else "(no reason given)"
        where = links.location(f.path, f.span.line, f.span.end_line)
        items.append(f"- {links.rule(f.rule_id)} at {where}: not adopted: {reason}")
    return "### Dispositions\n\n" + "\n".join(items)


def _perf(perf: PerfSummary | None, links: _Links) -> str:
    if perf is None:
        return ""
    ran = f"{_plural(len(perf.checks), 'micro-check')} ran at base and head on `{perf.device}`"
    parts = ["### Perf", f"{ran} ({perf.wall_seconds:.1f} s)."]
    if perf.deltas:
        parts.append(_perf_changes(perf))
        parts.append(_perf_table(perf.deltas, links))
    else:
        reached = " in the code the checks reached" if perf.not_measured else ""
        parts.append(f"No device synchronization, copy or allocation was added or removed{reached}.")
    if perf.not_measured:
        parts.append(_not_measured(perf.not_measured, links))
    if perf.tests is not None:
        parts.append(_tests(perf.tests, links))
    if perf.profile_rows:
        parts.append(_profile_table(perf.profile_rows))
    if perf.artifacts_dir:
        parts.append(f"Profile artifacts: `{perf.artifacts_dir}`")
    if perf.errors:
        failed = [f"- `{quote_path(e.path)}`: {_inline(e.message)}" for e in perf.errors]
        parts.append("Micro-checks that did not complete:\n\n" + "\n".join(failed))
    return "\n\n".join(parts)


def _not_measured(functions: Sequence[UnmeasuredFunction], links: _Links) -> str:
    """Changed per-step code no check reached, each marked "not measured"."""
    from ..perf.unmeasured import SCAFFOLD_COMMAND

    items = [f"- {links.location(f.path, f.line)} `{f.qualname}` ({f.execution}"
             + (f": {_inline(f.evidence)}" if f.evidence else "") + "): **not measured**" for f in functions]
    return ("#### Not measured\n\nChanged code that runs per step, or might, and that no micro-check reached; "
            "the result above says nothing about it.\n\n" + "\n".join(items)
            + f"\n\nWrite a micro-check for one with `{SCAFFOLD_COMMAND} {functions[0].target}`.")


def _tests(tests: PerfTestsRun, links: _Links) -> str:
    """The tests that measured the change, and what was left out of the comparison."""
    how = "traced at the head" if tests.traced else "selection read from the cache"
    out = [f"#### Tests\n\n{_plural(len(tests.selected), 'test')} reach the changed functions ({how})."]
    if tests.left_out:
        out.append("Left out (failed, errored or skipped on a side):\n\n"
                   + "\n".join(f"- `{name}`: {_inline(reason)}" for name, reason in sorted(tests.left_out.items())))
    if tests.unstable:
        out.append("Unstable lines, dropped (counts differed between a test's two runs):\n\n" + "\n".join(
            f"- {links.location(u.path, u.line, base=u.side == 'base')} {u.category} {u.runs[0]} then {u.runs[1]}"
            f" in `{u.test}`" for u in tests.unstable))
    return "\n\n".join(out)


def _perf_changes(perf: PerfSummary) -> str:
    """Per check, what it adds and what it removes: removals are improvements, shown beside."""
    from ..perf.summary import change_text, changes_by_check

    return "\n".join(f"- `{_cell(change.check)}`: {change_text(change)}" for change in changes_by_check(perf))


def _perf_table(deltas: Iterable[PerfDelta], links: _Links) -> str:
    rows = ["| Check | Category | Site | Base | Head | Delta | Device |", "|---|---|---|---|---|---|---|"]
    for d in deltas:
        if d.path:
            # A removed site's line number belongs to the base revision.
            site = links.location(d.path, d.line, base=not d.added)
            if d.source.strip():
                site += f" `{_code(d.source)}`"
        else:
            site = "(outside the repository)"
        delta = f"{d.head_count - d.base_count:+d}"
        if d.bytes_delta:
            delta += f" ({d.bytes_delta:+,d} B)"
        counts = [str(d.base_count), str(d.head_count), delta]
        if d.cause:
            site += f" (cause, in set-up: {_cell(d.cause)})"
        cells = [f"`{_cell(d.check)}`", d.category, site, *counts, _cell(d.device)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _profile_table(profiled: Sequence[PerfProfileRow]) -> str:
    rows = [asdict(row) for row in profiled]
    columns: list[str] = [f.name for f in fields(PerfProfileRow)]
    lines = [
        "#### Profiled operator comparison",
        "",
        "_Profiled numbers from the micro-checks, base vs head: they locate where the change "
        "alters device work, and are not performance results._",
        "",
        "| " + " | ".join(_cell(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in rows:
        lines.append("| " + " | ".join(_cell(str(row.get(c, ""))) for c in columns) + " |")
    return "\n".join(lines)


def _checklist(rules: Sequence[Rule], links: _Links, all_manual: bool) -> str:
    if not rules:
        return ""
    items = [f"- [ ] **{_inline(r.title)}** {links.rule(r.id)} ({r.area})" for r in rules]
    if all_manual:
        intro = "_Rules a reviewer checks by hand, in every area._"
    else:
        intro = "_Rules a reviewer checks by hand, for the areas this change touched (`--checklist all` lists every area)._"
    return "### Manual checklist\n\n" + intro + "\n\n" + "\n".join(items)


def _rule_texts(result: ReviewResult, named: Sequence[str], checklist: Sequence[Rule]) -> str:
    """The rules the summary names, each folded under its id: what a rules reference
    would say, for a summary that has none to link to."""
    by_id = {r.id: r for r in result.rules_run}
    rules = [by_id[rule_id] for rule_id in dict.fromkeys(named) if rule_id in by_id]
    rules += [r for r in checklist if r not in rules]
    if not rules:
        return ""
    items = []
    for r in rules:
        body = [f"**Problem.** {_inline(r.problem)}", f"**Preferred approach.** {_inline(r.preferred)}",
                f"**Reasonable exceptions.** {_inline(r.exceptions)}"]
        if r.references:
            body.append("**References.** " + ", ".join(_inline(ref) for ref in r.references))
        summary = f"<code>{html.escape(r.id)}</code> {html.escape(_inline(r.title))}"
        items.append(f"<details><summary>{summary}</summary>\n\n" + "\n\n".join(body) + "\n\n</details>")
    return "### Rules\n\n" + "\n\n".join(items)


def _file_errors(result: ReviewResult) -> str:
    listed = set(result.perf.errors) if result.perf is not None else set()  # under "Perf" already
    errors = [e for e in result.errors if e not in listed]
    if not errors:
        return ""
    items = []
    for e in errors:
        where = f"{quote_path(e.path)}:{e.line}" if e.line is not None else quote_path(e.path)
        items.append(f"- `{where}`: {_inline(e.message)}")
    return "### Files not reviewed\n\n" + "\n".join(items)


def _cell(text: str) -> str:
    """Text safe inside one table cell: no pipe ends the cell, no newline ends the row."""
    text = text.strip().replace("|", "\\|")
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def _inline(text: str) -> str:
    return " ".join(text.split())


def _code(text: str) -> str:
    # Inside a table cell even code spans end at a bare pipe; backticks would end the span.
    return _cell(text).replace("`", "'")


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
