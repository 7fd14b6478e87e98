"""The workflows: ``review_change`` (static review, optional perf hook and baseline),
``measure`` (the perf hook alone) and ``record_baseline``. Requests in, typed results out;
never prints: what the user should be told comes back as ``warnings``.

Invariant: each workflow loads the configuration and the rule library once (``_load``)
and hands them to every step that needs them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping

from .cache import ResultCache
from .callindex import CallIndex, build_index
from .changes import collect_changes
from .config import Config, check_names, default_cache_dir, load_config
from .engine import Engine, select_rules
from .execution import execution_map
from .executor import default_jobs, review_files
from .rule_findings import normalise_code
from .globs import matches
from .library.model import Library, Rule
from .rule_index import load_rules
from .preexisting import mark_preexisting
from .contents import read_sources
from .syntax import definitions, parse_tree
from .types import (
    ChangedFile, ChangedFunction, ChangeSet, Drop, FileError, FileOutcome, Finding, PerfSummary, ReviewResult, Severity, at_least,
)

if TYPE_CHECKING:
    from .baseline import Baseline, BaselineReport
    from .matchers.base import Matcher
    from .perf.hook import PerfPlan, Profile

Scope = Literal["lines", "changed-functions", "files"]


@dataclass(frozen=True)
class PerfRequest:
    timeout: float = 60.0
    profile: Profile | None = None
    out_dir: str | None = None
    window: int = 1
    device: str = "auto"
    memory_mb: int = 8192  # resident memory a micro-check process may use
    on_plan: Callable[[PerfPlan], None] | None = None  # told what will be executed, before it runs


@dataclass(frozen=True)
class ReviewRequest:
    repo: str = "."
    diff: str | None = None
    diff_file: str | None = None
    staged: bool = False
    paths: tuple[str, ...] = ()
    scope: Scope = "lines"
    overrides: Mapping[str, Any] | None = None  # Config field name -> value
    cache_dir: str | None = None  # None: the user cache directory
    use_cache: bool = True
    jobs: int | None = None  # None: one per core for large scans
    progress: Callable[[int, int], None] | None = None  # (files done, files to do)
    perf: PerfRequest | None = None  # also run the perf hook on the change
    baseline: str | None = None  # baseline file: the findings it records do not fail


@dataclass(frozen=True)
class ReviewReport:
    """A review and what was learned beside it, for the reports and the user."""

    result: ReviewResult
    baseline: BaselineReport | None = None  # None: no baseline was applied
    warnings: tuple[str, ...] = ()  # one line each, to be shown to the user


@dataclass(frozen=True)
class _Loaded:
    """One command's configuration and rule library, loaded once, shared by its steps."""

    config: Config
    library: Library
    matchers: Mapping[str, Matcher]  # automated rules' matchers by id (see ``rule_index``)


def _load(repo_root: str, overrides: Mapping[str, Any] | None = None) -> _Loaded:
    config = load_config(repo_root, overrides)
    library, matchers = load_rules(config.rule_dirs)
    return _Loaded(config, library, matchers)


def review_change(request: ReviewRequest) -> ReviewReport:
    """The static review, then the perf hook (``request.perf``), then the baseline."""
    result, loaded = _static_review(request)
    if request.perf is not None:
        result = _with_perf(result, request.perf, loaded)
    if request.baseline is None:
        return ReviewReport(result)
    return _with_baseline(result, request.baseline)


def review(request: ReviewRequest) -> ReviewResult:
    """``review_change`` without the baseline report and the warnings."""
    return review_change(request).result


def _static_review(request: ReviewRequest) -> tuple[ReviewResult, _Loaded]:
    started = time.perf_counter()
    change = collect_changes(
        request.repo, diff=request.diff, diff_file=request.diff_file, staged=request.staged, paths=request.paths
    )
    loaded = _load(change.repo_root or request.repo, request.overrides)
    config, library = loaded.config, loaded.library
    check_names(config, request.overrides or {}, library)
    rules = select_rules(library, config)
    engine = Engine(rules, config, frozenset(r.id for r in library.rules), matchers=loaded.matchers)
    loaded_at = time.perf_counter()

    targets = [f for f in change.files if _reviewable(f, change, request.scope, config)]
    cache = ResultCache(request.cache_dir or default_cache_dir(), repr((library, config))) if request.use_cache else None
    outcomes, sources, errors = _review_targets(request, change, targets, engine, cache)
    matched = time.perf_counter()

    by_path = {f.path: f for f in targets}
    kept, drops = _scope(outcomes, by_path, change, request.scope, sources)
    kept = mark_preexisting(kept, outcomes, by_path, change, engine, sources, kept_on_lines=request.scope == "lines")
    kept, repeats = group_repeats(kept)
    drops.extend(repeats)
    # A changed file with a recorded error (syntax, encoding, size, a matcher that gave
    # up) was not fully reviewed, even where the engine read part of it.
    unreviewable = tuple(sorted({e.path for e in errors} & set(by_path)))
    result = ReviewResult(
        change=change,
        library_version=library.version,
        rules_run=rules,
        files_reviewed=tuple(o.path for o in outcomes),
        files_unreviewable=unreviewable,
        findings=tuple(sorted(kept, key=lambda f: (f.path, f.span.line, f.span.column, f.rule_id))),
        drops=tuple(drops),
        errors=tuple(errors),
        timings={
            "load": loaded_at - started,
            "match": matched - loaded_at,
            "total": time.perf_counter() - started,
            **{f"rule:{rule_id}": seconds for rule_id, seconds in engine.rule_seconds.items()},
        },
        fail_on=config.fail_on,
        fail_on_unreviewable=config.fail_on_unreviewable,
        changed_functions=_changed_functions(change, targets, sources, rules, config, engine.call_index),
    )
    return result, loaded


def _call_index(change: ChangeSet, texts: Mapping[str, str], engine: Engine, request: ReviewRequest) -> CallIndex | None:
    """The repository's call index, built only when a rule that depends on where code
    runs may hit in a reviewed file: most small changes never pay for it."""
    if not any(engine.may_need_execution(path, text) for path, text in texts.items()):
        return None
    return build_index(change, engine.config, (request.cache_dir or default_cache_dir()) if request.use_cache else None)


def _changed_functions(
    change: ChangeSet,
    targets: list[ChangedFile],
    sources: Mapping[str, str | FileError],
    rules: tuple[Rule, ...],
    config: Config,
    call_index: CallIndex | None = None,
) -> tuple[ChangedFunction, ...]:
    """Where each function the change adds lines to runs, for rules that depend on it."""
    if change.full_scan or not any(rule.applicability.hot_paths_only for rule in rules):
        return ()
    found: dict[tuple[str, str], ChangedFunction] = {}
    for target in targets:
        text = sources.get(target.path)
        if not isinstance(text, str) or not target.added_lines or matches(target.path, config.test_paths):
            continue
        where = execution_map(
            parse_tree(text), hot_functions=config.hot_functions,
            offline_file=matches(target.path, config.cold_paths), per_step_file=matches(target.path, config.hot_paths),
            repository=call_index.for_file(target.path) if call_index is not None else None,
        )
        for line in sorted(target.added_lines):
            function = where.at(line)
            if function is None:
                key = (target.path, "<module>")
                found.setdefault(key, ChangedFunction(target.path, "<module>", "module", "top-level statements"))
            else:
                key = (target.path, function.qualname)
                found.setdefault(key, ChangedFunction(target.path, function.qualname, function.kind, function.evidence))
    return tuple(found.values())


def _review_targets(
    request: ReviewRequest, change: ChangeSet, targets: list[ChangedFile], engine: Engine, cache: ResultCache | None
) -> tuple[list[FileOutcome], dict[str, str], list[FileError]]:
    """Outcomes of the files to review, the texts read, and every per-file error."""
    sources = read_sources(change, [f.path for f in targets])
    errors: list[FileError] = [text for text in sources.values() if isinstance(text, FileError)]
    texts = {path: text for path, text in sources.items() if isinstance(text, str)}
    engine.call_index = _call_index(change, texts, engine, request)
    # Outside the changed statements no finding can be kept, so they are not matched.
    limits = None
    if not change.full_scan and request.scope != "files":
        limits = {f.path: f.added_lines for f in targets}
    by_file = review_files(
        engine, texts, cache=cache, jobs=request.jobs or default_jobs(), lines=limits,
        kept_on_lines=request.scope == "lines", progress=request.progress,
    )
    outcomes = [by_file[f.path] for f in targets if f.path in by_file]
    for outcome in outcomes:
        errors.extend(outcome.errors)
    return outcomes, texts, errors


def _reviewable(changed: ChangedFile, change: ChangeSet, scope: Scope, config: Config) -> bool:
    if changed.status == "deleted" or changed.binary or not changed.is_python:  # rltrefactor: ignore[string-state-comparison] a typed Literal, checked by the type checker
        return False
    if config.exclude and matches(changed.path, config.exclude):
        return False
    return change.full_scan or scope == "files" or bool(changed.added_lines)


def _scope(
    outcomes: list[FileOutcome], by_path: Mapping[str, ChangedFile], change: ChangeSet, scope: Scope,
    sources: Mapping[str, str],
) -> tuple[list[Finding], list[Drop]]:
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
                    defs = definitions(sources[outcome.path])
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


def group_repeats(findings: list[Finding]) -> tuple[list[Finding], list[Drop]]:
    """One new finding per rule per function, and per rule per line of code repeated in a
    file: the first, naming the lines of the others.

    A reviewer acts once on a function that repeats one mistake, or on one line of code
    written again elsewhere in the file; the repeats go to ``drops``. Suppressed and
    pre-existing findings stay as they are."""
    ordered = sorted(findings, key=lambda f: (f.path, f.span.line, f.span.column, f.rule_id))
    first: dict[tuple[str, str, str], int] = {}
    kept: list[Finding] = []
    repeats: list[Drop] = []
    for finding in ordered:
        if finding.status != "new" or finding.suppressed:  # rltrefactor: ignore[string-state-comparison] a typed Literal, checked by the type checker
            kept.append(finding)
            continue
        keys = [(finding.path, finding.rule_id, "code:" + normalise_code(finding.snippet))] if finding.snippet.strip() else []
        if finding.definition != "<module>":
            keys.append((finding.path, finding.rule_id, "in:" + finding.definition))
        index = next((first[key] for key in keys if key in first), None)
        if index is None:
            for key in keys:
                first[key] = len(kept)
            kept.append(finding)
            continue
        if finding.span.line not in kept[index].also_at and finding.span.line != kept[index].span.line:
            kept[index] = replace(kept[index], also_at=kept[index].also_at + (finding.span.line,))
        repeats.append(Drop(finding, "repeat-in-function"))
    return [_name_repeats(f) for f in kept], repeats


def _name_repeats(finding: Finding) -> Finding:
    if not finding.also_at:
        return finding
    lines = ", ".join(str(line) for line in finding.also_at)
    where = "line" if len(finding.also_at) == 1 else "lines"
    return replace(finding, impact=f"{finding.impact} The same at {where} {lines}.")


def _run_hook(change: ChangeSet, request: PerfRequest, config: Config) -> PerfSummary:
    from .perf.hook import plan, run_perf

    if request.on_plan is not None:
        request.on_plan(plan(change, hooks_dir=config.perf_hooks))
    return run_perf(
        change, hooks_dir=config.perf_hooks, timeout=request.timeout, profile=request.profile,
        out_dir=request.out_dir, window=request.window, device=request.device, memory_mb=request.memory_mb,
    )


def _with_perf(result: ReviewResult, request: PerfRequest, loaded: _Loaded) -> ReviewResult:
    """Run the perf hook on the reviewed change and merge its measured additions.

    Static findings on a line where an addition was measured become ``confirmed``.
    """
    from .perf import confirm, perf_findings

    change = result.change
    summary = _run_hook(change, request, loaded.config)
    measured = perf_findings(summary, change=change, library=loaded.library)
    findings = sorted(confirm(result.findings, summary) + measured, key=lambda f: (f.path, f.span.line, f.span.column, f.rule_id))
    timings = {**result.timings, "perf": summary.wall_seconds,
               "total": result.timings.get("total", 0.0) + summary.wall_seconds}
    return replace(result, findings=tuple(findings), perf=summary, errors=result.errors + summary.errors,
                   timings=timings)


def _with_baseline(result: ReviewResult, path: str) -> ReviewReport:
    """Findings recorded in the baseline at ``path`` move to ``drops``; stale entries are reported."""
    from .baseline import BaselineReport, apply_baseline, load_baseline

    result, stale = apply_baseline(result, load_baseline(path))
    report = BaselineReport(path, sum(d.reason == "baseline" for d in result.drops), stale)
    if not stale:
        return ReviewReport(result, report)
    stale_count = f"{len(stale)} stale baseline entry" if len(stale) == 1 else f"{len(stale)} stale baseline entries"
    warning = (f"{stale_count} (recorded findings that no longer occur; --format json lists them); "
               f"regenerate {path} with 'rltrefactor baseline'")
    return ReviewReport(result, report, (warning,))


@dataclass(frozen=True)
class MeasureRequest:
    """The perf hook alone, on one change source (as in ``ReviewRequest``)."""

    repo: str = "."
    diff: str | None = None
    diff_file: str | None = None
    staged: bool = False
    paths: tuple[str, ...] = ()
    fail_on: Severity | None = None  # None: the configuration's fail-on
    perf: PerfRequest = PerfRequest()


@dataclass(frozen=True)
class MeasureResult:
    """Every delta the hook measured, and its additions as findings of the perf rules."""

    summary: PerfSummary
    findings: tuple[Finding, ...]
    fail_on: Severity  # the request's threshold, else the configuration's

    @property
    def failing(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if at_least(f.severity, self.fail_on))

    @property
    def gate_failed(self) -> bool:
        return bool(self.failing)


def measure(request: MeasureRequest) -> MeasureResult:
    """Run the perf hook on a change: every delta, improvements included."""
    from .perf import perf_findings

    change = collect_changes(
        request.repo, diff=request.diff, diff_file=request.diff_file, staged=request.staged, paths=request.paths
    )
    loaded = _load(change.repo_root or request.repo)
    summary = _run_hook(change, request.perf, loaded.config)
    findings = perf_findings(summary, change=change, library=loaded.library)
    return MeasureResult(summary, findings, request.fail_on or loaded.config.fail_on)


@dataclass(frozen=True)
class BaselineRequest:
    review: ReviewRequest  # without a change source: the whole repository
    output: str  # the baseline file to write


def record_baseline(request: BaselineRequest) -> Baseline:
    """Review, then record every unsuppressed finding in ``request.output``."""
    review_request = request.review
    if not (review_request.diff or review_request.diff_file or review_request.staged or review_request.paths):
        review_request = replace(review_request, paths=(review_request.repo,))
    from .baseline import write_baseline

    return write_baseline(review(review_request), request.output)
