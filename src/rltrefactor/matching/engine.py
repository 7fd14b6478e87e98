"""One file through the rules: prefilter, parse once, match, turn hits into findings."""

from __future__ import annotations

import functools
import itertools
import re
import time
import traceback
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from .rule_findings import fill_template, guards_at, rule_finding, with_execution, with_note, with_unknown_residency
from ..library.globs import matches
from ..library.model import GROUPS, Library, Rule
from ..config import Config, declared_for
from ..config import names_for
from ..context.execution import COLD_KINDS, EMPTY, FREQUENCY_UNKNOWN, ExecutionMap, FunctionExecution, is_setup_name
from ..context.filemodel import FileModel
from ..context.typeengine import TypeEngine
from ..source import syntax
from ..source.aliases import ImportTable
from ..change.contents import FileTexts, ModuleTexts, text_digest
from ..context.module_kinds import kernel_bodies, module_kinds
from .rule_index import build_matcher
from ..source.parsing import CodeSyntaxError, parse_module, syntax_error
from .regions.code import code_text
from .regions.plan import Region, plan_regions
from .regions.reach import MatcherReach, SearchScope, search_scope
from .regions.windows import ChangeWindows, change_windows
from ..source.directives import INVALID_SUPPRESSION
from .directives import invalid_suppressions
from .prefilter import AllOf, Prefilter, Token, search
from ..types import FileError, FileOutcome, Finding, Hit

if TYPE_CHECKING:
    from tree_sitter import Tree

    from ..context.calls.index import CallIndex
    from .matchers.base import FileContext, Matcher


# The most file models a review keeps: a tree holds about 20 bytes per byte of source,
# so a change of thousands of files would otherwise keep them all in memory.
HELD_MODELS = 256


def select_rules(library: Library, config: Config) -> tuple[Rule, ...]:
    """Rules this run applies: active ones of the default group and repository-local
    experimental ones, plus bundled experimental ones selected by id and opt-in group
    rules selected by id or by their group's name."""
    return tuple(
        rule for rule in _wanted(library, config) if not _held_back(rule, config) and _opted_in(rule, config)
    )


def skipped_experimental(library: Library, config: Config) -> tuple[Rule, ...]:
    """Bundled experimental rules of an area the run selects by name, which run only when
    selected by id. A run of the default set says nothing of them (``rules list`` shows them)."""
    areas = {name for name in config.select if name not in GROUPS}
    return tuple(
        rule for rule in _wanted(library, config)
        if rule.area in areas and _held_back(rule, config) and _opted_in(rule, config)
    )


def _wanted(library: Library, config: Config) -> Iterable[Rule]:
    """Rules the selection and ignores leave in, whatever their status but retired.

    A group name in ``select`` opts its rules in without narrowing the run: only ids and
    areas narrow it."""
    narrowing = [name for name in config.select if name not in GROUPS]
    for rule in library.rules:
        if rule.status == "retired":
            continue
        if narrowing and not (rule.id in narrowing or rule.area in narrowing):
            continue
        if rule.id in config.ignore or rule.area in config.ignore:
            continue
        yield rule


def _opted_in(rule: Rule, config: Config) -> bool:
    """A rule outside the default group runs only when its group or its id is selected."""
    return rule.group == "default" or rule.group in config.select or rule.id in config.select


def _held_back(rule: Rule, config: Config) -> bool:
    """A bundled experimental rule runs only when named: its precision is still being
    measured. A repository's own rules are its reviewers' choice and always run."""
    experimental = rule.status == "experimental"
    return experimental and rule.library == "bundled" and rule.id not in config.select


class Engine:
    def __init__(
        self,
        rules: tuple[Rule, ...],
        config: Config,
        known_ids: frozenset[str],
        matcher_factory: Callable[[Rule], Matcher] = build_matcher,
        matchers: Mapping[str, Matcher] | None = None,
        call_index: CallIndex | None = None,
    ) -> None:
        """``matchers``: ready (or deferred, see ``rule_index``) matchers by rule id, used
        for rules the configuration gives no options; the others are built here.
        ``call_index``: where functions run, read across the repository (``callindex``)."""
        self.config = config
        self.call_index = call_index
        self.type_engine: TypeEngine | None = None  # set by the review when the engine may run
        # The repository's modules at the head revision, for matchers that follow imports.
        self.repository_texts: ModuleTexts | None = None
        self.rules = rules
        self.known_ids = known_ids
        ready = matchers or {}
        self._matchers: list[tuple[Rule, Matcher]] = [
            (rule, ready[rule.id] if rule.id in ready and rule.id not in config.rule_options
             else matcher_factory(_with_options(rule, config)))
            for rule in rules if rule.automated
        ]
        self._rule_by_id = {rule.id: rule for rule in rules}
        # Seconds spent in each rule's matcher (positions of its hits included).
        self.rule_seconds: dict[str, float] = {}
        # The models of the file versions a review reads again after matching them (see
        # ``hold_models``), by path; every other model lives as long as one review_file.
        self._held: dict[str, FileModel] = {}
        self._holding: dict[str, str] = {}
        self._trees: dict[str, Tree] = {}  # held file versions' trees, made before their models

    def model(self, path: str, text: str) -> FileModel:
        """The model of ``text``, the file at ``path``: the one held for it, or a new one."""
        held = self._held.get(path)
        if held is not None and held.text == text:
            return held
        made = FileModel(
            path, text, self.held_tree(path, text) or syntax.parse_tree(text), declared=declared_for(self.config, path),
            repository=self.call_index.for_file(path) if self.call_index is not None else None,
            is_test=matches(path, self.config.test_paths), type_engine=self.type_engine,
        )
        if self._holding.get(path) == text:
            self._held[path] = made
        return made

    def hold_models(self, texts: Mapping[str, str]) -> None:
        """Keep the models of these file versions (path -> text) once made, until
        ``release_models``: a review reads the files of a change again after matching
        them (where changed functions run, scoping, pre-existing findings), and each is
        parsed and classified once. Never for a full scan: its trees would all be kept.
        Beyond ``HELD_MODELS`` files, the rest are parsed again where read again. Models and
        trees held before are dropped: they may be of other versions of the same paths."""
        self._held, self._holding, self._trees = {}, dict(itertools.islice(texts.items(), HELD_MODELS)), {}

    def held_tree(self, path: str, text: str) -> Tree | None:
        """The one parse of a held file version, shared by its model and the call index
        (which reads the reviewed files before any model can be made); None for the rest."""
        if self._holding.get(path) != text:
            return None
        if path in self._held:
            return self._held[path].tree
        tree = self._trees.get(path)
        if tree is None:
            tree = self._trees[path] = syntax.parse_fresh(text)
        return tree

    def release_models(self) -> None:
        self._held, self._holding, self._trees = {}, {}, {}

    def add_rule_seconds(self, seconds: Mapping[str, float]) -> None:
        """Fold in matcher times measured elsewhere (a worker process)."""
        for rule_id, spent in seconds.items():
            self.rule_seconds[rule_id] = self.rule_seconds.get(rule_id, 0.0) + spent

    def may_need_execution(self, path: str, text: str) -> bool:
        """Whether a rule that depends on where code runs may hit in the file."""
        return any(rule.applicability.per_step and may_match(matcher.prefilter, text) for rule, matcher in self.applicable(path))

    @functools.cached_property
    def _host_backends(self) -> tuple[str, ...]:
        return names_for(self.config.names).entry("host-backend-paths").values

    def applicable(self, path: str) -> list[tuple[Rule, Matcher]]:
        is_offline = matches(path, self.config.cold_paths)
        is_test = matches(path, self.config.test_paths)
        # An engine's CPU backend computes on the host: there is no device to wait for.
        on_host = matches(path, self._host_backends)
        ignored = {
            name
            for glob, names in self.config.per_path_ignores.items()
            if matches(path, (glob,))
            for name in names
        }
        chosen = []
        for rule, matcher in self._matchers:
            scope = rule.applicability
            if rule.id in ignored or rule.area in ignored:
                continue
            if (scope.per_step and is_offline) or (is_test and not scope.tests) or (on_host and rule.area == "device-residency"):
                continue
            if not matches(path, scope.paths) or (scope.exclude and matches(path, scope.exclude)):
                continue
            chosen.append((rule, matcher))
        return chosen

    def review_file(
        self, path: str, text: str, lines: frozenset[int] | None = None, *, kept_on_lines: bool = True,
        model: FileModel | None = None,
    ) -> FileOutcome:
        """Findings in one file; with ``lines``, only statements touching those lines are
        matched. ``kept_on_lines``: the caller keeps only hits that touch ``lines``, not
        every hit in a function that holds one, so less needs matching. ``model``: the
        file's model when the caller has made it (``self.model(path, text)``)."""
        has_directive = "rltrefactor:" in text
        # Parsing is cheap; always done so that syntax errors are reported.
        model = model if model is not None else self.model(path, text)
        tree = model.tree
        # Matchers match code: tokens in comments and docstrings select nothing.
        code = code_text(text, tree)
        # With ``lines``, most rules' tokens select only inside the touched statements.
        windows = change_windows(text, tree, lines, headers=kept_on_lines) if lines is not None else None
        searched: dict[SearchScope, str] = {}  # the code a rule's tokens are searched in, by scope
        candidates = {}
        for rule, matcher in self.applicable(path):
            scope = search_scope(matcher.reach)
            if scope not in searched:
                searched[scope] = _searched(code, scope, windows, limited=lines is not None)
            if may_match(matcher.prefilter, searched[scope]):
                candidates[rule.id] = (rule, matcher)
        if any(rule.applicability.exclude_modules for rule, _ in candidates.values()):
            kinds = module_kinds(tree, names_for(self.config.names))
            candidates = {
                rule_id: (rule, matcher) for rule_id, (rule, matcher) in candidates.items()
                if kinds.isdisjoint(rule.applicability.exclude_modules)
            }
        if not candidates and not has_directive:
            return FileOutcome(path, (), tuple(syntax_error(path, text, tree)), parsed_lines=0)
        imports = model.imports if candidates else ImportTable({})
        # Worked out only when a rule that depends on where code runs may hit.
        execution = model.execution if any(rule.applicability.per_step for rule, _ in candidates.values()) else EMPTY
        planned = {
            rule_id: (
                _with_aliases(matcher.prefilter, imports),
                _reach(matcher.reach, never_in_cold=rule.applicability.per_step),
            )
            for rule_id, (rule, matcher) in candidates.items()
        }
        regions = plan_regions(
            text, tree, planned, lines=lines, keep_method=functools.partial(is_setup_name, names=names_for(self.config.names)),
            is_cold_line=lambda line: (found := execution.at(line)) is not None and found.kind in COLD_KINDS,
            code=code, windows=windows,
        )
        hits: list[Hit] = []
        errors: list[FileError] = []
        sources = FileTexts(path, text, self.repository_texts)
        for region in regions:
            ctx = self._context(model, region, imports, errors, sources)
            if ctx is not None:
                hits.extend(self._run_matchers(ctx, [candidates[r] for r in sorted(region.rule_ids)], errors))
        file_level = syntax_error(path, text, tree)
        if file_level:  # one message for the file, from the parser that says it best
            errors = file_level + [e for e in errors if not e.syntax]
        names = names_for(self.config.names)
        if hits and names.regex("kernel-decorators").search(code):
            compiled = kernel_bodies(model.definitions, names)
            hits = [h for h in hits if not any(first <= h.span.line <= last for first, last in compiled)]
        hits.sort(key=lambda h: (h.span.line, h.span.column, h.rule_id))
        findings = self._to_findings(model, execution, hits)
        # Directives are reported here; which findings they silence is decided once, for
        # every source of findings, by ``finishing``.
        if has_directive and INVALID_SUPPRESSION in self._rule_by_id:
            findings += invalid_suppressions(
                path, text, model.enclosing, self.known_ids, self._rule_by_id[INVALID_SUPPRESSION]
            )
        parsed_lines = sum(region.parsed_lines for region in regions)
        return FileOutcome(path, tuple(findings), tuple(errors), parsed_lines=parsed_lines, modules_read=sources.modules_read())

    def still_holds(self, outcome: FileOutcome) -> bool:
        """A cached outcome holds while the other modules its matchers read are unchanged."""
        texts = self.repository_texts
        return all(text_digest(texts.read(path) if texts is not None else None) == digest
                   for path, digest in outcome.modules_read)

    def context_digest(self, path: str) -> str:
        """What the call index tells ``path``, as a result-cache key part ("" without an index)."""
        told = self.call_index.for_file(path) if self.call_index is not None else None
        return told.digest if told is not None else ""

    def _context(
        self, model: FileModel, region: Region, imports: ImportTable, errors: list[FileError], sources: FileTexts,
    ) -> FileContext | None:
        path = model.path
        try:
            module = parse_module(region.text)
        except CodeSyntaxError as exc:
            line = region.file_line(exc.line)
            errors.append(FileError(path, f"syntax error: {exc.message}", line, syntax=True))
            return None
        except RecursionError:
            errors.append(FileError(path, "nesting too deep to parse; not reviewed", region.start_line))
            return None
        from .matchers.base import FileContext

        return FileContext(
            model, module, line_offset=region.start_line - 1, file_lines=region.file_lines, imports=imports, text=region.text,
            sources=sources,
        )

    def _run_matchers(self, ctx: FileContext, candidates: list[tuple[Rule, Matcher]], errors: list[FileError]) -> list[Hit]:
        """Every matcher's hits; those of ``runs: per-step`` rules only where the code may
        run per step (the one place that filters cold code: matchers never ask), those of
        ``synchronizing-rules`` only outside a block that allows synchronizations, a branch
        taken when the function's tensors are on the host, and reads after the host has
        already waited for the device."""
        from .fix_shapes import shaped_fix
        from .matchers.context import after_host_wait, in_sync_allowing_block, runs_cold
        from .matchers.residency.locations import in_host_branch
        from .matchers.residency.mirrors import missing_mirror
        from .matchers.residency.portable_paths import portable_path

        hits: list[Hit] = []
        synchronizing = ctx.names.regex("synchronizing-rules")
        for rule, matcher in candidates:
            started = time.perf_counter()
            acknowledges = synchronizing.fullmatch(rule.id) is not None
            try:
                for match in matcher.find(ctx):
                    if rule.applicability.per_step and runs_cold(match.node, ctx):
                        continue
                    if acknowledges and (in_sync_allowing_block(match.node, ctx) or in_host_branch(match.node, ctx)
                                         or after_host_wait(match.node, ctx)):
                        continue
                    bindings = {key.lstrip("$"): value for key, value in match.bindings.items()}
                    hits.append(Hit(rule.id, ctx.span(match.node), ctx.code(match.node), bindings, match.residency,
                                    match.residency_of, match.residency_why, fix=shaped_fix(rule.id, match.node, ctx),
                                    runs_only_where=(missing_mirror(match.node, ctx) or portable_path(match.node, ctx))
                                    if acknowledges else ""))
            except RecursionError:
                errors.append(FileError(ctx.path, f"rule {rule.id}: code nested too deeply to match; file partly reviewed"))
            except Exception as exc:  # a matcher bug must not end the review of other files
                where = traceback.extract_tb(exc.__traceback__)[-1]
                errors.append(FileError(
                    ctx.path,
                    f"rule {rule.id}: matcher crashed ({type(exc).__name__}: {exc} at {where.filename}:{where.lineno}); please report it",
                ))
            self.rule_seconds[rule.id] = self.rule_seconds.get(rule.id, 0.0) + time.perf_counter() - started
        return hits

    def _to_findings(self, model: FileModel, execution: ExecutionMap, hits: Iterable[Hit]) -> list[Finding]:
        path, tree = model.path, model.tree
        lines = model.text.splitlines()
        findings = []
        for hit in hits:
            rule = self._rule_by_id[hit.rule_id]
            where = execution.at(hit.span.line)
            if rule.area == "device-residency" and where is not None and where.on_host:
                continue  # a CPU backend's method: no device to wait for or copy to
            definition = model.enclosing(hit.span.line).qualname
            finding = rule_finding(
                    rule,
                    path,
                    hit.span,
                    impact=fill_template(rule.impact, hit.bindings),
                    fix=hit.fix or fill_template(rule.fix, hit.bindings),
                    definition=definition,
                    matched_text=hit.matched_text,
                    snippet=lines[hit.span.line - 1] if 0 < hit.span.line <= len(lines) else "",
                    guards=guards_at(tree, hit.span.line, syntax.byte_column(lines, hit.span)),
                )
            if rule.applicability.per_step:
                finding = with_execution(finding, rule, _only_where(where, hit.runs_only_where))
            if hit.residency == "unknown":
                finding = with_unknown_residency(finding, hit.residency_of, hit.residency_why)
            elif hit.residency == "device" and hit.residency_why:
                finding = with_note(finding, f"On the device: {hit.residency_why}.")
            findings.append(finding)
        return findings


def _only_where(where: FunctionExecution | None, condition: str) -> FunctionExecution | None:
    """A read in per-step code that runs only where ``condition`` holds (a host copy is
    missing, the tensors are off CUDA) runs as often as it holds: unknown, whatever the
    function's own frequency. Configured per-step code stays per step."""
    if not condition or where is None or where.kind != "per-step" or where.configured:
        return where
    why = f"it runs only where {condition}, and nothing here shows how often that is"
    return replace(where, kind="unknown", evidence=FREQUENCY_UNKNOWN + why, basis="")


def _reach(reach: MatcherReach, *, never_in_cold: bool) -> MatcherReach:
    """A matcher's reach; a rule that applies to hot paths only also never hits in cold code."""
    return replace(reach, never_in_cold=True) if never_in_cold else reach


def _searched(code: str, scope: SearchScope, windows: ChangeWindows | None, *, limited: bool) -> str:
    """The code whose tokens may select a kept hit of a rule of ``scope``."""
    if not limited:
        return code
    if windows is None:
        return ""  # no statement touched: nothing
    stretches = windows.for_scope(scope)
    if stretches is None:
        return code
    # Joined: a token matched across a seam only costs planning a look (it searches each stretch apart).
    return "".join(code[first:stop] for first, stop in stretches)


def may_match(tokens: Prefilter, text: str) -> bool:
    """The cheap test: no tokens, or one of them (a substring or a compiled regex) occurs."""
    if not tokens:
        return True
    return any(
        token in text if isinstance(token, str) else search(token, text) if isinstance(token, re.Pattern) else token.search(text)
        for token in tokens
    )


def _with_aliases(tokens: Prefilter, imports: ImportTable) -> Prefilter:
    """Tokens plus what selects a match that an import renames.

    ``from torch.cuda import synchronize as sync`` puts "synchronize" only on the import
    line; the call site says ``sync()``, so "sync" becomes a token too. A word token
    gains the local names that import aliases give to names containing it.
    """
    if not tokens:
        return tokens
    extra: list[Token] = []
    for token in tokens:
        if isinstance(token, AllOf):
            if token.importable:
                extra.extend(renamed for local, target in imports.aliases.items()
                             if (renamed := token.alias(local, target)) is not None)
            continue
        extra.extend(local for local, target in imports.aliases.items()
                     if local not in target.split(".") and may_match((token,), target))
    return tuple(dict.fromkeys((*tokens, *extra)))


def _with_options(rule: Rule, config: Config) -> Rule:
    extra = config.rule_options.get(rule.id)
    if not extra or rule.matcher is None:
        return rule
    matcher = replace(rule.matcher, options={**rule.matcher.options, **extra})
    return replace(rule, matcher=matcher)
