"""``review(...)``: a change in, a ReviewResult out. Never prints."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping

from .cache import ResultCache
from .changes import collect_changes
from .config import Config, check_names, default_cache_dir, load_config
from .engine import Engine, select_rules
from .execution import execution_map
from .findings import normalise_code
from .globs import matches
from .library.loader import load_library
from .library.model import Rule
from .preexisting import mark_preexisting
from .scan import default_jobs, review_files
from .engine import FileOutcome
from .source import definitions, parse_tree, read_sources
from .types import ChangedFile, ChangedFunction, ChangeSet, Drop, FileError, Finding, ReviewResult

if TYPE_CHECKING:
    from .perf.hook import Profile

Scope = Literal["lines", "changed-functions", "files"]


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


def review(request: ReviewRequest) -> ReviewResult:
    started = time.perf_counter()
    change = collect_changes(
        request.repo, diff=request.diff, diff_file=request.diff_file, staged=request.staged, paths=request.paths
    )
    config = load_config(change.repo_root or request.repo, request.overrides)
    library = load_library(config.rule_dirs)
    check_names(config, request.overrides or {}, library)
    rules = select_rules(library, config)
    engine = Engine(rules, config, frozenset(r.id for r in library.rules))
    loaded = time.perf_counter()

    targets = [f for f in change.files if _reviewable(f, change, request.scope, config)]
    cache = ResultCache(request.cache_dir or default_cache_dir(), repr((library, config))) if request.use_cache else None
    outcomes, sources, errors = _review_targets(request, change, targets, engine, cache)
    matched = time.perf_counter()

    by_path = {f.path: f for f in targets}
    kept, drops = _scope(outcomes, by_path, change, request.scope, sources)
    kept = mark_preexisting(kept, outcomes, by_path, change, engine, sources)
    kept, repeats = group_repeats(kept)
    drops.extend(repeats)
    # A changed file with a recorded error (syntax, encoding, size, a matcher that gave
    # up) was not fully reviewed, even where the engine read part of it.
    unreviewable = tuple(sorted({e.path for e in errors} & set(by_path)))
    return ReviewResult(
        change=change,
        library_version=library.version,
        rules_run=rules,
        files_reviewed=tuple(o.path for o in outcomes),
        files_unreviewable=unreviewable,
        findings=tuple(sorted(kept, key=lambda f: (f.path, f.span.line, f.span.column, f.rule_id))),
        drops=tuple(drops),
        errors=tuple(errors),
        timings={
            "load": loaded - started,
            "match": matched - loaded,
            "total": time.perf_counter() - started,
            **{f"rule:{rule_id}": seconds for rule_id, seconds in engine.rule_seconds.items()},
        },
        fail_on=config.fail_on,
        fail_on_unreviewable=config.fail_on_unreviewable,
        changed_functions=_changed_functions(change, targets, sources, rules, config),
    )


def _changed_functions(
    change: ChangeSet,
    targets: list[ChangedFile],
    sources: Mapping[str, str | FileError],
    rules: tuple[Rule, ...],
    config: Config,
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
    # Outside the changed statements no finding can be kept, so they are not matched.
    limits = None
    if not change.full_scan and request.scope != "files":
        limits = {f.path: f.added_lines for f in targets}
    by_file = review_files(
        engine, texts, cache=cache, jobs=request.jobs or default_jobs(), lines=limits, progress=request.progress
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


@dataclass(frozen=True)
class PerfRequest:
    timeout: float = 60.0
    profile: Profile | None = None
    out_dir: str | None = None
    window: int = 1
    device: str = "auto"
    memory_mb: int = 8192  # resident memory a micro-check process may use


def perf_hooks_dir(change: ChangeSet) -> str:
    return load_config(change.repo_root or ".").perf_hooks


def with_perf(result: ReviewResult, request: PerfRequest) -> ReviewResult:
    """Run the perf hook on the reviewed change and merge its measured additions.

    Static findings on a line where an addition was measured become ``confirmed``.
    """
    from .perf import confirm, perf_findings, run_perf

    change = result.change
    config = load_config(change.repo_root or ".")
    summary = run_perf(
        change, hooks_dir=config.perf_hooks, timeout=request.timeout, profile=request.profile,
        out_dir=request.out_dir, window=request.window, device=request.device, memory_mb=request.memory_mb,
    )
    library = load_library(config.rule_dirs)
    measured = perf_findings(summary, change=change, library=library)
    findings = sorted(confirm(result.findings, summary) + measured, key=lambda f: (f.path, f.span.line, f.span.column, f.rule_id))
    timings = {**result.timings, "perf": summary.wall_seconds,
               "total": result.timings.get("total", 0.0) + summary.wall_seconds}
    return replace(result, findings=tuple(findings), perf=summary, errors=result.errors + summary.errors,
                   timings=timings)
