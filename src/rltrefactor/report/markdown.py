"""The PR summary: findings, dispositions, perf deltas and the manual checklist.

A pure function of the result and the link context: the caller looks up the remote
(``links.remote_url``) and passes it in, so the same result always renders the same
text. Sections are fixed and always in this order: header, findings, pre-existing
findings (on request), dispositions, perf, manual checklist, files not reviewed; a
section with nothing to say is left out, except findings, which then says so.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Iterable, Mapping, Sequence

from ..library.model import Rule
from ..types import Finding, PerfDelta, PerfProfileRow, PerfSummary, ReviewResult
from .links import DEFAULT_DOCS_URL, WebRepo, permalink, rule_url, tool_version, web_repo

NOTHING_FOUND = "No applicable issue was found."
# Identifier parts that say "one block runs several times per token" (num_loops,
# exit_depth, recurrent_steps); a plain ``loop`` counts only beside a counting word, so
# an asyncio ``event_loop`` is no evidence.
_LOOP_PARTS = frozenset({"depth", "depths", "loops", "recurrent", "recurrence"})
_LOOP_COUNTERS = frozenset({"idx", "index", "id", "count", "step", "steps", "num", "n", "max", "iter"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class _Links:
    repo: WebRepo | None
    head_sha: str | None
    base_sha: str | None
    docs_url: str
    anchors: Mapping[str, str]  # rule id -> anchor in the rules reference

    def location(self, path: str, line: int, end_line: int | None = None, *, base: bool = False) -> str:
        label = f"{path}:{line}"
        url = permalink(self.repo, self.base_sha if base else self.head_sha, path, line, end_line)
        return f"[`{label}`]({url})" if url else f"`{label}`"

    def rule(self, rule_id: str) -> str:
        anchor = self.anchors.get(rule_id, rule_id)
        return f"[`{rule_id}`]({rule_url(anchor, self.docs_url)})"


def render_markdown(
    result: ReviewResult,
    *,
    remote_url: str | None = None,
    head_sha: str | None = None,
    docs_url: str = DEFAULT_DOCS_URL,
    show_preexisting: bool = False,
    all_manual: bool = False,
) -> str:
    """The summary as GitHub-flavoured Markdown.

    ``head_sha`` overrides the head commit permalinks point at (default: the reviewed
    head commit; staged and working-tree reviews get plain ``path:line`` locations).
    Pre-existing findings (not introduced by the change) get their own section only
    with ``show_preexisting``. The manual checklist is the result's (the areas the change
    touched), or every manual rule with ``all_manual``.
    """
    change = result.change
    sha = head_sha or (change.head.ref if change.head.kind == "git" else None)
    anchors = {r.id: r.anchor for r in result.rules_run}
    links = _Links(web_repo(remote_url), sha, change.base, docs_url, anchors)
    shown = [f for f in result.findings if not f.suppressed]
    blocks = [
        _header(result, links),
        _findings("Findings", [f for f in shown if f.status == "new"], links, empty=NOTHING_FOUND),  # rltrefactor: ignore[string-state-comparison] a typed Literal, checked by the type checker
        _findings(
            "Pre-existing findings",
            [f for f in shown if show_preexisting and f.status == "pre-existing"],  # rltrefactor: ignore[string-state-comparison] a typed Literal, checked by the type checker
            links,
        ),
        _dispositions([f for f in result.findings if f.suppressed], links),
        _perf(result.perf, links),
        _checklist(_manual_rules(result, all_manual), links, all_manual),
        _file_errors(result),
    ]
    return "\n\n".join(block for block in blocks if block) + "\n"


def _manual_rules(result: ReviewResult, all_manual: bool) -> tuple[Rule, ...]:
    return tuple(r for r in result.rules_run if not r.automated) if all_manual else result.checklist


def looks_looped(texts: Iterable[str]) -> bool:
    """Whether code names loop depths or loop counts (``num_loops``, ``exit_depth``)."""
    for text in texts:
        for name in set(_IDENTIFIER.findall(text)):
            parts = set(name.lower().split("_"))
            if parts & _LOOP_PARTS or ("loop" in parts and parts & _LOOP_COUNTERS):
                return True
    return False


def _header(result: ReviewResult, links: _Links) -> str:
    change = result.change
    what = change.description or "the change"
    parts = [f"Reviewed **{_inline(what)}**"]
    if change.base:
        parts.append(f"base `{change.base[:12]}`")
    parts.append(f"head {_head_label(result, links)}")
    parts.append(f"rule library {result.library_version}")
    parts.append(f"rltrefactor {tool_version()}")
    counts = f"{_plural(len(result.rules_run), 'rule')} run on {_plural(len(result.files_reviewed), 'file')}"
    return "## rltrefactor review\n\n" + " · ".join(parts) + f" · {counts}."


def _head_label(result: ReviewResult, links: _Links) -> str:
    head = result.change.head
    if links.head_sha:
        short = f"`{links.head_sha[:12]}`"
        if links.repo is not None and links.repo.forge != "other":
            return f"[{short}]({links.repo.commit(links.head_sha)})"
        return short
    return "staged changes (index)" if head.kind == "index" else "working tree"


def _findings(title: str, findings: Sequence[Finding], links: _Links, *, empty: str = "") -> str:
    if not findings:
        return f"### {title}\n\n{empty}" if empty else ""
    rows = ["| Severity | Location | Rule | Impact | Fix |", "|---|---|---|---|---|"]
    for f in sorted(findings, key=lambda f: (f.path, f.span.line, f.span.column, f.rule_id)):
        severity = f.severity + (" · confirmed by perf" if f.confirmed else "")
        where = links.location(f.path, f.span.line, f.span.end_line)
        rule = f"{links.rule(f.rule_id)} {_cell(f.title)}"
        rows.append(f"| {severity} | {where} | {rule} | {_cell(f.impact)} | {_cell(f.fix)} |")
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
        parts.append(_perf_table(perf.deltas, links))
    else:
        parts.append("No device synchronization, copy or allocation was added or removed.")
    if perf.profile_rows:
        parts.append(_profile_table(perf.profile_rows))
    if perf.artifacts_dir:
        parts.append(f"Profile artifacts: `{perf.artifacts_dir}`")
    if perf.errors:
        failed = [f"- `{e.path}`: {_inline(e.message)}" for e in perf.errors]
        parts.append("Micro-checks that did not complete:\n\n" + "\n".join(failed))
    return "\n\n".join(parts)


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


def _file_errors(result: ReviewResult) -> str:
    listed = set(result.perf.errors) if result.perf is not None else set()  # under "Perf" already
    errors = [e for e in result.errors if e not in listed]
    if not errors:
        return ""
    items = []
    for e in errors:
        where = f"{e.path}:{e.line}" if e.line is not None else e.path
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
