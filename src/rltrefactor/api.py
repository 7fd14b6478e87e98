"""The workflows: ``review_change`` (static review, optional perf hook and baseline),
``measure`` (the perf hook alone), ``scaffold`` (a micro-check of one function) and
``record_baseline``. Requests in, typed results out;
never prints: what the user should be told comes back as ``warnings``.

Invariant: each workflow loads the configuration and the rule library once (``_load``)
and hands them to every step that needs them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .matching.cache import ResultCache
from .change.changeset import collect_changes
from .config import Config, check_names, default_cache_dir, load_config
from .context.typeengine import WARMED_FILES, budget_for, engine_for, off_warning
from .matching.engine import Engine, select_rules, skipped_experimental
from .matching.executor import default_jobs, review_files
from .matching.rule_options import check_rule_options
from .library.globs import matches
from .library.model import Library, Rule
from .matching.rule_index import load_rules
from .change.contents import RepositoryTexts, read_sources
from .context.configured_names import unmatched_function_warnings
from .findings.finishing import HeldBackShown, Matched, Scope, finish, finish_measured
from .perf.records import PerfSummary
from .findings.result import ReviewResult
from .severity import Severity, at_least
from .types import ChangedFile, ChangedFunction, ChangeSet, FileError, FileOutcome, Finding

if TYPE_CHECKING:
    from .findings.baseline import Baseline, BaselineReport
    from .context.calls.index import CallIndex
    from .matching.matchers.base import Matcher
    from .perf.hook import PerfPlan, Profile
    from .perf.scaffold import Scaffold


@dataclass(frozen=True)
class PerfRequest:
    timeout: float = 60.0
    profile: Profile | None = None
    out_dir: str | None = None
    window: int = 1
    device: str = "auto"
    memory_mb: int = 8192  # resident memory a micro-check process may use
    on_plan: Callable[[PerfPlan], None] | None = None  # told what will be executed, before it runs
    # The repository's tests as micro-checks: None not asked; () the ``perf-tests`` paths; else PYTEST ARGS.
    tests: tuple[str, ...] | None = None
    cache_dir: str | None = None  # where the map of tests is cached; None: the user cache directory
    use_cache: bool = True


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
    config: str | None = None  # the configuration file (``--config``); None: the one at the repository root
    # Full scans: also report per-step findings in code nothing is seen running (held back by default).
    show_unknown_frequency: bool = False
    # Full scans: also report findings of rules that report on new code alone (held back by default).
    show_new_code_rules: bool = False


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


def _load(repo_root: str, overrides: Mapping[str, Any] | None = None, config_file: str | None = None) -> _Loaded:
    config = load_config(repo_root, overrides, config_file)
    library, matchers = load_rules(config.rule_dirs)
    return _Loaded(config, library, matchers)


def review_change(request: ReviewRequest) -> ReviewReport:
    """The static review, then the perf hook (``request.perf``), then the final pass over
    every finding (``finishing``), the baseline's included."""
    baseline = _load_baseline(request.baseline)
    matched, result, loaded = _static_review(request)
    try:
        if request.perf is not None:
            matched, result = _with_perf(matched, result, request.perf, loaded)
        started = time.perf_counter()
        # Pre-existing findings ask the type engine too.
        shown = HeldBackShown(request.show_unknown_frequency, request.show_new_code_rules)
        finished = finish(matched, baseline, shown=shown)
    finally:
        if matched.engine.type_engine is not None:
            matched.engine.type_engine.close()
    matched.engine.release_models()
    total = result.timings.get("total", 0.0) + time.perf_counter() - started
    result = replace(result, findings=finished.findings, drops=finished.drops, checklist=finished.checklist,
                     moved_to_run_less=finished.moved_to_run_less, timings={**result.timings, "total": total})
    # An empty change reviewed nothing, so nothing was held back from it.
    skipped = skipped_experimental(loaded.library, loaded.config) if result.files_reviewed else ()
    warnings = (*loaded.config.warnings, *unmatched_function_warnings(result.change, loaded.config),
                *_experimental_warning(skipped), *off_warning(matched.engine.type_engine),
                *finished.warnings)
    return ReviewReport(result, finished.baseline, warnings)


def _experimental_warning(skipped: tuple[Rule, ...]) -> tuple[str, ...]:
    if not skipped:
        return ()
    ids = [rule.id for rule in skipped]
    count = "1 experimental bundled rule" if len(ids) == 1 else f"{len(ids)} experimental bundled rules"
    return (f"{count} not run; experimental rules run only when selected by id: --select {','.join(ids)} "
            "(beside the areas to run them with the others)",)


def review(request: ReviewRequest) -> ReviewResult:
    """``review_change`` without the baseline report and the warnings."""
    return review_change(request).result


def _load_baseline(path: str | None) -> tuple[str, Baseline] | None:
    """Read before anything is reviewed: a bad baseline file stops the run at once."""
    if path is None:
        return None
    from .findings.baseline import load_baseline

    return path, load_baseline(path)


def _static_review(request: ReviewRequest) -> tuple[Matched, ReviewResult, _Loaded]:
    """What the rules found, for the final pass, and the result around it (its findings
    still unfinished)."""
    started = time.perf_counter()
    change = collect_changes(
        request.repo, diff=request.diff, diff_file=request.diff_file, staged=request.staged, paths=request.paths
    )
    loaded = _load(change.repo_root or request.repo, request.overrides, request.config)
    config, library = loaded.config, loaded.library
    check_names(config, request.overrides or {}, library)
    check_rule_options(config, library)
    rules = select_rules(library, config)
    engine = Engine(rules, config, frozenset(r.id for r in library.rules), matchers=loaded.matchers)
    cache_dir = request.cache_dir or default_cache_dir()
    engine.type_engine = engine_for(change.repo_root or request.repo, config, cache_dir if request.use_cache else None)
    loaded_at = time.perf_counter()

    targets = [f for f in change.files if _reviewable(f, change, request.scope, config)]
    if engine.type_engine is not None:
        engine.type_engine.budget_s = budget_for(len(targets))
    types_key = engine.type_engine.cache_key() if engine.type_engine is not None else "no type engine"
    cache = ResultCache(cache_dir, repr((library, config, types_key))) if request.use_cache else None
    outcomes, sources, errors, changed_functions = _review_targets(request, change, targets, engine, cache, rules)
    matched_at = time.perf_counter()

    by_path = {f.path: f for f in targets}
    # Files git could not give (absent blobs) are no target; those the review reads are errors.
    unread = [e for e in change.errors if not (config.exclude and matches(e.path, config.exclude))]
    errors = unread + errors
    # A changed file with a recorded error (syntax, encoding, size, a matcher that gave
    # up) was not fully reviewed, even where the engine read part of it.
    unreviewable = tuple(sorted({e.path for e in errors} & (set(by_path) | {e.path for e in unread})))
    result = ReviewResult(
        change=change,
        library_version=library.version,
        rules_run=rules,
        files_reviewed=tuple(o.path for o in outcomes),
        files_unreviewable=unreviewable,
        findings=(),
        errors=tuple(errors),
        timings={
            "load": loaded_at - started,
            "match": matched_at - loaded_at,
            "total": time.perf_counter() - started,
            **{f"rule:{rule_id}": seconds for rule_id, seconds in engine.rule_seconds.items()},
        },
        fail_on=config.fail_on,
        fail_on_unreviewable=_unreviewable_fails(config, request.staged),
        docs_url=config.docs_url,
        library_versions=library.versions,
        library_rules=len(library.rules),
        changed_functions=changed_functions,
    )
    return Matched(change, by_path, tuple(outcomes), sources, request.scope, engine, rules), result, loaded


def _with_perf(
    matched: Matched, result: ReviewResult, request: PerfRequest, loaded: _Loaded
) -> tuple[Matched, ReviewResult]:
    """Run the perf hook on the reviewed change; its additions join the final pass."""
    from .perf import perf_findings

    summary = _run_hook(result.change, request, loaded.config, matched.engine.call_index)
    measured = perf_findings(summary, change=result.change, library=loaded.library)
    timings = {**result.timings, "perf": summary.wall_seconds,
               "total": result.timings.get("total", 0.0) + summary.wall_seconds}
    result = replace(result, perf=summary, errors=result.errors + summary.errors, timings=timings)
    return replace(matched, measured=measured), result


def _call_index(
    change: ChangeSet, texts: Mapping[str, str], runs_matter: bool, engine: Engine, request: ReviewRequest,
) -> CallIndex | None:
    """The repository's call index, built only when a rule that depends on where code
    runs may hit in a reviewed file (``runs_matter``): for every review, a change or a
    full scan, unless ``call-index = false``. Reviews of changes, baselines and full scans
    are analysed alike, so that an unchanged tree leaves no baseline entry stale."""
    wanted = engine.config.call_index is not False
    if not wanted or not runs_matter:
        return None
    from .context.calls.index import build_index

    cache_dir = (request.cache_dir or default_cache_dir()) if request.use_cache else None
    # Findings outside the added lines are dropped: the index is asked only about the
    # functions that hold them, unless every line of a reviewed file counts.
    lines = None if change.full_scan or request.scope == "files" else {f.path: f.added_lines for f in change.files}
    return build_index(change, engine.config, cache_dir, paths=texts.keys(), lines=lines, tree_of=engine.held_tree)


def _changed_functions(
    change: ChangeSet, targets: list[ChangedFile], texts: Mapping[str, str], rules: tuple[Rule, ...], engine: Engine,
) -> tuple[ChangedFunction, ...]:
    """Where each function the change adds lines to runs, for rules that depend on it."""
    if change.full_scan or not any(rule.applicability.per_step for rule in rules):
        return ()
    found: dict[tuple[str, str], ChangedFunction] = {}
    for target in targets:
        text = texts.get(target.path)
        if text is None or not target.added_lines or matches(target.path, engine.config.test_paths):
            continue
        model = engine.model(target.path, text)
        for line in sorted(target.added_lines):
            function = model.function_at(line)
            if function is None:
                key = (target.path, "<module>")
                found.setdefault(key, ChangedFunction(target.path, "<module>", "module", "top-level statements"))
            else:
                key = (target.path, function.qualname)
                found.setdefault(key, ChangedFunction(target.path, function.qualname, function.kind, function.evidence))
    return tuple(found.values())


def _review_targets(
    request: ReviewRequest, change: ChangeSet, targets: list[ChangedFile], engine: Engine, cache: ResultCache | None,
    rules: tuple[Rule, ...],
) -> tuple[list[FileOutcome], dict[str, str], list[FileError], tuple[ChangedFunction, ...]]:
    """Outcomes of the files to review, the texts read, every per-file error, and where
    the functions the change adds lines to run."""
    sources = read_sources(change, [f.path for f in targets])
    errors: list[FileError] = [text for text in sources.values() if isinstance(text, FileError)]
    texts = {path: text for path, text in sources.items() if isinstance(text, str)}
    if not change.full_scan:
        # A change's files are read again after matching; each is parsed and classified once.
        engine.hold_models(texts)
    # The files a rule that depends on where code runs may hit in: what the call index and
    # the type engine are started for.
    placed = [path for path, text in texts.items() if engine.may_need_execution(path, text)]
    if engine.type_engine is not None and not change.full_scan:
        for path in placed[:WARMED_FILES]:
            engine.type_engine.warm(path, texts[path])
    engine.call_index = _call_index(change, texts, bool(placed), engine, request)
    engine.repository_texts = RepositoryTexts(change)
    # Before matching: the models made here are those the engine (and its forked workers) match.
    changed_functions = _changed_functions(change, targets, texts, rules, engine)
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
    return outcomes, texts, errors, changed_functions


def _reviewable(changed: ChangedFile, change: ChangeSet, scope: Scope, config: Config) -> bool:
    if changed.status == "deleted" or not changed.is_python or any(e.path == changed.path for e in change.errors):
        return False
    if config.exclude and matches(changed.path, config.exclude):
        return False
    # A Python file git calls binary (NUL bytes) has no lines in the diff: it is read all
    # the same, so that it is reported as not reviewed instead of passing unseen.
    return change.full_scan or scope == "files" or bool(changed.added_lines) or changed.binary


def _unreviewable_fails(config: Config, staged: bool) -> bool:
    """Whether a file the review could not read fails the run: always with
    ``--fail-on-unreviewable`` (or ``fail-on-unreviewable = true``), else as ``unreviewable``
    says; unset, only under pre-commit (``--staged``), whose passing hooks show nothing."""
    if config.fail_on_unreviewable:
        return True
    if config.unreviewable is not None:
        return config.unreviewable == "fail"
    return staged


def _run_hook(change: ChangeSet, request: PerfRequest, config: Config,
              call_index: CallIndex | None = None) -> PerfSummary:
    """The hook's summary, with the changed per-step functions nothing measured."""
    from .perf.environment import RunnerSetup
    from .perf.hook import plan, run_perf
    from .perf.unmeasured import classifier, not_measured, reached_by_checks

    tests = None if request.tests is None else (request.tests or config.perf_tests)
    if request.on_plan is not None:
        request.on_plan(plan(change, hooks_dir=config.perf_hooks, tests=tests))
    summary = run_perf(
        change, hooks_dir=config.perf_hooks, timeout=request.timeout, profile=request.profile,
        out_dir=request.out_dir, window=request.window, device=request.device, memory_mb=request.memory_mb,
        tests=tests, cache_dir=(request.cache_dir or default_cache_dir()) if request.use_cache else None,
        setup=RunnerSetup(stubs=config.perf_stubs, keep_env=config.perf_env),
    )
    if call_index is None and config.call_index is not False:
        from .context.calls.index import build_index

        touched = [c.path for c in change.files if c.is_python and c.status != "deleted"]
        call_index = build_index(change, config, default_cache_dir(), paths=touched)
    unmeasured = not_measured(change, reached_by_checks(summary), classifier(config, call_index))
    return replace(summary, not_measured=unmeasured)


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
    config: str | None = None  # the configuration file (``--config``); None: the one at the repository root


@dataclass(frozen=True)
class MeasureResult:
    """Every delta the hook measured, and its additions as findings of the perf rules."""

    summary: PerfSummary
    findings: tuple[Finding, ...]
    fail_on: Severity  # the request's threshold, else the configuration's

    @property
    def failing(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.suppressed and at_least(f.severity, self.fail_on))

    @property
    def gate_failed(self) -> bool:
        return bool(self.failing)


def measure(request: MeasureRequest) -> MeasureResult:
    """Run the perf hook on a change: every delta, improvements included."""
    from .perf import perf_findings

    change = collect_changes(
        request.repo, diff=request.diff, diff_file=request.diff_file, staged=request.staged, paths=request.paths
    )
    loaded = _load(change.repo_root or request.repo, config_file=request.config)
    summary = _run_hook(change, request.perf, loaded.config)
    findings = finish_measured(change, perf_findings(summary, change=change, library=loaded.library))
    return MeasureResult(summary, findings, request.fail_on or loaded.config.fail_on)


@dataclass(frozen=True)
class ScaffoldRequest:
    target: str  # "path::qualname", the path from the repository root
    repo: str = "."
    force: bool = False  # overwrite an existing check file
    config: str | None = None  # the configuration file (``--config``); None: the one at the repository root


def scaffold(request: ScaffoldRequest) -> Scaffold:
    """Write a micro-check of one function into the configured hooks directory."""
    from .errors import ChangeInputError
    from .change.git import toplevel
    from .perf.scaffold import write_scaffold

    try:
        root = toplevel(request.repo)
    except ChangeInputError:
        root = request.repo  # not a git repository: the hooks directory is still found from here
    config = load_config(root, path=request.config)
    return write_scaffold(root, request.target, hooks_dir=config.perf_hooks, force=request.force)


@dataclass(frozen=True)
class BaselineRequest:
    review: ReviewRequest  # without a change source: the whole repository
    output: str  # the baseline file to write
    update: bool = False  # refresh ``output``: keep the hits it records that still occur, add none


@dataclass(frozen=True)
class BaselineOutcome:
    baseline: Baseline  # what was written
    stale: int = 0  # entries an update left out: what they recorded no longer occurs


def record_baseline(request: BaselineRequest) -> BaselineOutcome:
    """Review, then record every unsuppressed hit in ``request.output`` (or refresh it)."""
    review_request = request.review
    if not (review_request.diff or review_request.diff_file or review_request.staged or review_request.paths):
        review_request = replace(review_request, paths=(review_request.repo,))
    from .findings.baseline import update_baseline, write_baseline

    if request.update:
        return BaselineOutcome(*update_baseline(review(review_request), request.output))
    return BaselineOutcome(write_baseline(review(review_request), request.output))
