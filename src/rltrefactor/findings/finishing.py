"""The final pass over findings: every source of findings (the rule matchers, the perf
hook) goes through it once, in this order.

1. suppression: a directive on a finding's line marks it, whatever produced the finding
   (one without a reason silences nothing: its own finding takes that finding's severity);
2. scoping: a static finding outside the change is dropped (a measured addition belongs
   to the change by construction);
3. pre-existing: a static finding whose identity also exists at the base is marked, and
   so is one whose code moved here from another definition or file of the change;
4. occurrence: each hit's fingerprint gets its index among equal identities;
5. confirmation: a measured addition on the line of a static finding of its area
   confirms that finding instead of being a second record of one problem;
6. baseline: each hit it records is dropped (one entry per hit, before merging);
7. repeats: one finding per rule per definition (a measured addition stays one per line);
8. merging: findings of several rules on one problem become one naming every rule;
9. frequency (full scans only): a finding of a rule about per-step code, in code nothing is
   seen running per step or otherwise (``execution == "unknown"``), is held back unless
   asked for. A diff review keeps it: the change's author knows how often their code runs.
10. new code (full scans only): a finding of rules that report on new code alone
   (``reports-on: new-code``) is held back unless asked for, or unless one of its rules is
   selected by id. A diff review keeps it: the change adds that code.

The manual checklist is derived from what remains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Literal, Mapping

from ..change.contents import read_sources
from ..perf.delta_findings import confirm
from .merging import merge_findings
from .moves import MovedToRunLess, mark_moved
from .preexisting import complete_head, mark_preexisting
from .repeats import group_repeats
from ..matching.rule_findings import number_occurrences, with_note
from .suppression import mark_suppressed, mark_suppressed_per_file
from ..source.syntax import DefinitionMap, definitions
from ..types import ChangedFile, ChangeSet, Drop, FileOutcome, Finding

if TYPE_CHECKING:
    from .baseline import Baseline, BaselineReport
    from ..matching.engine import Engine
    from ..library.model import Rule

Scope = Literal["lines", "changed-functions", "files"]
# Manual rules of this area apply to a change of a looped (recurrent-depth) engine even
# without a finding: no matcher can see whether a loop's exit condition changed meaning.
LOOPED_ENGINE_AREA = "loop-semantics"


@dataclass(frozen=True)
class Matched:
    """What the sources of findings produced for one review: the pass's input."""

    change: ChangeSet
    files: Mapping[str, ChangedFile]  # the files the engine reviewed, by path
    outcomes: tuple[FileOutcome, ...]
    texts: Mapping[str, str]  # head texts of those files
    scope: Scope
    engine: Engine  # reviews the base (pre-existing) and the rest of the head (occurrences)
    rules: tuple[Rule, ...]  # the rules run, for the manual checklist
    measured: tuple[Finding, ...] = ()  # the perf hook's additions, as findings


@dataclass(frozen=True)
class Finished:
    findings: tuple[Finding, ...]  # sorted by location
    drops: tuple[Drop, ...]
    checklist: tuple[Rule, ...]  # manual rules of the areas the change touched
    baseline: BaselineReport | None = None
    warnings: tuple[str, ...] = ()
    moved_to_run_less: tuple[MovedToRunLess, ...] = ()  # improvements: never findings


@dataclass(frozen=True)
class HeldBackShown:
    """Which findings a full scan holds back are reported all the same."""

    unknown_frequency: bool = False
    new_code_rules: bool = False


def finish(
    matched: Matched, baseline: tuple[str, Baseline] | None = None, *, shown: HeldBackShown = HeldBackShown()
) -> Finished:
    """Findings as reported: the pass above, applied once to every source's findings."""
    texts = _HeadTexts(matched.change, matched.texts)
    outcomes, measured = mark_suppressed_per_file(matched.outcomes, matched.measured, texts.get)
    kept, drops = scope_findings(outcomes, matched.files, matched.change, matched.scope, matched.texts,
                                 definitions_of=lambda path, text: matched.engine.model(path, text).definitions)
    line_limited = matched.scope == "lines" and not matched.change.full_scan
    heads = complete_head(kept, outcomes, matched.files, matched.engine, matched.texts, kept_on_lines=line_limited)
    kept = mark_preexisting(kept, heads, matched.files, matched.change, matched.engine, matched.texts)
    kept, moved_to_run_less = mark_moved(kept, matched.change, matched.engine, matched.texts)
    changed = {} if matched.change.full_scan else {path: f.added_lines for path, f in matched.files.items()}
    kept = number_occurrences(kept, heads, changed) + number_occurrences(measured, {})
    kept, confirmations = confirm(kept)
    drops.extend(confirmations)
    report: BaselineReport | None = None
    warnings: tuple[str, ...] = ()
    if baseline is not None:
        kept, report, warnings = _apply_baseline(kept, drops, baseline, matched)
    # A measured addition is its own line's count: it stays one finding per line.
    still_measured = [f for f in kept if f.perf is not None and not f.confirmed]
    kept, repeats = group_repeats([f for f in kept if f.perf is None or f.confirmed])
    kept = _name_baselined(kept, drops) + still_measured
    drops.extend(repeats)
    kept, merged = merge_findings(kept, texts.get)
    drops.extend(merged)
    if matched.change.full_scan and not shown.unknown_frequency:
        kept, held = hold_unknown_frequency(kept)
        drops.extend(held)
    if matched.change.full_scan and not shown.new_code_rules:
        kept, held = hold_new_code_rules(kept, _new_code_rules(matched.rules, matched.engine.config.select))
        drops.extend(held)
    looped = _changes_looped_code(matched.change, texts, matched.engine)
    return Finished(
        findings=tuple(sorted(kept, key=_location)),
        drops=tuple(drops),
        checklist=manual_checklist(kept, matched.change, matched.rules, looped=looped),
        baseline=report,
        warnings=warnings,
        moved_to_run_less=moved_to_run_less,
    )


def hold_unknown_frequency(findings: Iterable[Finding]) -> tuple[list[Finding], list[Drop]]:
    """Findings whose claim is about per-step code but whose code nothing is seen running
    at any frequency, as ``unknown-frequency`` drops; the rest kept. Suppressed findings
    and measured additions stay: the user wrote the first, the perf hook saw the second."""
    kept: list[Finding] = []
    held: list[Drop] = []
    for finding in findings:
        unknown = finding.execution == "unknown" and not finding.suppressed and finding.perf is None
        if unknown:
            held.append(Drop(finding, "unknown-frequency"))
        else:
            kept.append(finding)
    return kept, held


def hold_new_code_rules(findings: Iterable[Finding], new_code: frozenset[str]) -> tuple[list[Finding], list[Drop]]:
    """Findings whose every rule (merged ones included) reports on new code alone, as
    ``new-code-rule`` drops; the rest kept. Suppressed findings and measured additions stay."""
    kept: list[Finding] = []
    held: list[Drop] = []
    for finding in findings:
        rules = (finding.rule_id, *finding.also_rules)
        if all(rule in new_code for rule in rules) and not finding.suppressed and finding.perf is None:
            held.append(Drop(finding, "new-code-rule"))
        else:
            kept.append(finding)
    return kept, held


def _new_code_rules(rules: Iterable[Rule], selected: Iterable[str]) -> frozenset[str]:
    """Ids of the rules run that report on new code alone, less those selected by id."""
    named = set(selected)
    return frozenset(rule.id for rule in rules if rule.reports_on == "new-code" and rule.id not in named)


def finish_measured(change: ChangeSet, measured: Iterable[Finding]) -> tuple[Finding, ...]:
    """The perf hook's findings alone (``rltrefactor perf``): the steps of the pass that
    apply to measurements, suppression first."""
    texts = _HeadTexts(change, {})
    marked = [f for path, group in _by_path(measured).items() for f in mark_suppressed(group, texts.get(path))]
    return tuple(sorted(number_occurrences(marked, {}), key=_location))


def _location(finding: Finding) -> tuple[str, int, int, str]:
    return finding.path, finding.span.line, finding.span.column, finding.rule_id


def _by_path(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    grouped: dict[str, list[Finding]] = {}
    for finding in findings:
        grouped.setdefault(finding.path, []).append(finding)
    return grouped


class _HeadTexts:
    """Head texts: those the review read, others (a measured line elsewhere) read once."""

    def __init__(self, change: ChangeSet, texts: Mapping[str, str]) -> None:
        self._change = change
        self._texts = dict(texts)

    def get(self, path: str) -> str:
        if path not in self._texts:
            text = read_sources(self._change, [path])[path] if path and self._change.repo_root is not None else ""
            self._texts[path] = text if isinstance(text, str) else ""
        return self._texts[path]


def scope_findings(
    outcomes: Iterable[FileOutcome], by_path: Mapping[str, ChangedFile], change: ChangeSet, scope: Scope,
    texts: Mapping[str, str],
    definitions_of: Callable[[str, str], DefinitionMap] = lambda path, text: definitions(text),
) -> tuple[list[Finding], list[Drop]]:
    """Findings of the change (``scope``), and the others as ``outside-change`` drops.
    ``definitions_of``: the definitions of a file (path, text), as its review read them."""
    kept: list[Finding] = []
    drops: list[Drop] = []
    for outcome in outcomes:
        changed = by_path[outcome.path]
        touched_defs: set[str] | None = None
        for finding in outcome.findings:
            if change.full_scan or scope == "files":
                inside = True
            elif scope == "changed-functions":
                if touched_defs is None:
                    defs = definitions_of(outcome.path, texts[outcome.path])
                    touched_defs = {defs.enclosing(line).qualname for line in changed.added_lines}
                inside = finding.definition in touched_defs
            else:
                span = finding.span
                inside = any(line in changed.added_lines for line in range(span.line, span.end_line + 1))
            if inside:
                kept.append(finding)
            else:
                drops.append(Drop(finding, "outside-change"))
    return kept, drops


def _apply_baseline(
    kept: list[Finding], drops: list[Drop], baseline: tuple[str, Baseline], matched: Matched
) -> tuple[list[Finding], BaselineReport, tuple[str, ...]]:
    """Hits the baseline records move to ``drops``, one entry per hit (before repeats are
    merged, so a new hit beside baselined ones is still reported). Stale entries are
    counted only in files the review matched in full: elsewhere a hit was never looked for."""
    from .baseline import BaselineReport, apply_baseline, stale_warning

    path, recorded = baseline
    whole = matched.change.full_scan or matched.scope == "files"
    kept, dropped, stale = apply_baseline(kept, recorded, frozenset(matched.files) if whole else frozenset())
    drops.extend(dropped)
    report = BaselineReport(path, len(dropped), stale)
    return kept, report, (stale_warning(path, len(stale)),) if stale else ()


def _name_baselined(kept: list[Finding], drops: Iterable[Drop]) -> list[Finding]:
    """A new finding in a definition where the baseline records hits of its rule says which
    lines those are: its own lines are the new ones."""
    baselined: dict[tuple[str, str, str], list[int]] = {}
    for drop in drops:
        if drop.reason == "baseline" and drop.finding.definition != "<module>":
            found = drop.finding
            baselined.setdefault((found.path, found.rule_id, found.definition), []).append(found.span.line)
    named = []
    for finding in kept:
        lines = sorted(set(baselined.get((finding.path, finding.rule_id, finding.definition), ())))
        if lines and finding.status == "new" and not finding.suppressed:
            where = "hit at line" if len(lines) == 1 else "hits at lines"
            finding = with_note(finding, f"New beside the baselined {where} {', '.join(map(str, lines))} of this rule here.")
        named.append(finding)
    return named


def manual_checklist(
    findings: Iterable[Finding], change: ChangeSet, rules: Iterable[Rule], *, looped: bool = False
) -> tuple[Rule, ...]:
    """Manual rules (no matcher) of the areas the change touched, in library order.

    Touched areas: those of the rules that produced findings (suppressed ones
    included), plus ``LOOPED_ENGINE_AREA`` when a Python file changed and the changed
    code looks like a looped engine.
    """
    areas = {f.area for f in findings}
    if looped and any(f.is_python for f in change.files):
        areas.add(LOOPED_ENGINE_AREA)
    return tuple(r for r in rules if not r.automated and r.area in areas)


def _changes_looped_code(change: ChangeSet, texts: _HeadTexts, engine: Engine) -> bool:
    """Whether a changed line, at the reviewed head, lies in code iterating a recurrence
    (every line of a full scan)."""
    from ..context.recurrence import changes_recurrence

    files = [f for f in change.files if f.is_python and f.status != "deleted"]
    path_of = {texts.get(f.path): f.path for f in files}
    return changes_recurrence(
        ((texts.get(f.path), None if change.full_scan else f.added_lines | f.deletion_anchors) for f in files),
        tree_of=lambda text: engine.model(path_of[text], text).tree,
    )
