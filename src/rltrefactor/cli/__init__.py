"""Command line: parse arguments, call one API workflow, pick a reporter, set the exit code.

Exit codes: 0 no failing finding; 1 failing findings; 2 usage, configuration, input
error, or an internal error (one line on stderr, never a traceback); 141 when the reader
of stdout left early (``| head``), as for a process that SIGPIPE ends, quietly.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import TYPE_CHECKING, Callable, NoReturn, Sequence

from .. import __version__
from ..errors import ConfigError, RltError
from ..perf.records import PerfSummary
from ..findings.result import ReviewResult
from ..severity import SEVERITIES

if TYPE_CHECKING:
    from ..api import PerfRequest, ReviewRequest
    from ..findings.baseline import BaselineReport
    from ..perf.hook import PerfPlan

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_STDOUT_CLOSED = 141  # 128 + SIGPIPE, what a shell reports for a process the signal ends
FORMATS = ("text", "json", "sarif", "github", "markdown")
CONFIG_HELP = ("the configuration file (default: rltrefactor.toml, .rltrefactor.toml or [tool.rltrefactor] in "
               "pyproject.toml, at the repository root)")
EXIT_CODES = (
    "exit codes: 0 no new, unsuppressed finding at or above --fail-on; 1 such findings; "
    "2 usage, configuration, input or internal error (one line on stderr)"
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(  # type: ignore[override]  # one signature for argparse's overloads
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """Unknown arguments are blamed on the (sub)command that was given them."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            owner = getattr(parsed, "command_parser", self)
            owner.error(f"unrecognized arguments: {' '.join(extras)}{_near_option(owner, extras[0])}")
        return parsed


# A scan of fewer files finishes before a progress line would help.
PROGRESS_MIN_FILES = 50

def _near_option(parser: argparse.ArgumentParser, given: str) -> str:
    from ..library.fields import closest

    if not given.startswith("--"):
        return ""
    near = closest(given.split("=")[0], [o for o in parser._option_string_actions if o.startswith("--")])
    return f"; did you mean {near}?" if near else ""


def _add_change_source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("change source (one of; PATHs also limit --diff or --staged)")
    source.add_argument("paths", nargs="*", metavar="PATH",
                        help="review whole files or directories (full scan); with --diff or --staged, only the change under them")
    source.add_argument("--diff", metavar="REF|A..B|A...B", help="review what the branch changes since REF (working tree included), or a git range read at B")
    source.add_argument("--diff-file", metavar="PATCH", help="review a unified diff ('-' for stdin); contents from --repo's working tree")
    source.add_argument("--staged", action="store_true", help="review the index against HEAD (pre-commit)")
    parser.add_argument("--repo", default=".", help="repository root (default: current directory)")
    parser.add_argument("--config", metavar="PATH", help=CONFIG_HELP)


def _add_review_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--scope", choices=("lines", "changed-functions", "files"), default="lines",
                        help="which findings count as part of the change (default: lines the change adds)")
    parser.add_argument("--show-preexisting", action="store_true", help="also show findings whose code existed at the base")
    parser.add_argument("--show-unknown-frequency", action="store_true",
                        help="full scans: also show findings about per-step code in functions nothing is seen "
                             "running (a diff review always shows them)")
    parser.add_argument("--show-held-back", action="store_true",
                        help="full scans: also show every finding they hold back: those of --show-unknown-frequency "
                             "and those of rules reported on new code only (a diff review always shows both)")
    parser.add_argument("--fail-on", choices=SEVERITIES, help="lowest severity that fails the run")
    parser.add_argument("--fail-on-unreviewable", action="store_true",
                        help="also fail (exit 1) when a changed file could not be reviewed (syntax error, not UTF-8, "
                             "binary, too large, blob absent); --staged fails so unless unreviewable = \"warn\"")
    parser.add_argument("--checklist", choices=("touched", "all"), default="touched",
                        help="markdown: manual checklist of the areas the change touches (default) or of every area")
    parser.add_argument("--select", type=_csv, default=(), metavar="IDS", help="comma-separated rule ids, areas or opt-in groups (pedantic) to run")
    parser.add_argument("--ignore", type=_csv, default=(), metavar="IDS", help="comma-separated rule ids or areas to skip")
    parser.add_argument("--quiet", "-q", action="store_true", help="text: only the summary line")
    parser.add_argument("--statistics", action="store_true", help="text: counts per rule")
    parser.add_argument("--explain", action="store_true",
                        help="text, markdown: each finding's full text, with the caveats of its claim (JSON has them as 'notes')")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    parser.add_argument("--baseline", metavar="FILE", help="only findings not recorded in FILE fail (see 'rltrefactor baseline')")
    parser.add_argument("--update-pr-body", metavar="FILE", help="write the Markdown summary into a marked section of FILE")
    parser.add_argument("--docs-url", metavar="URL",
                        help="rules reference (made by 'rltrefactor rules docs') that markdown and sarif link rule ids "
                             "to; overrides docs-url in the configuration; without either, no links and the markdown "
                             "summary carries the rule texts")
    parser.add_argument("--perf", action="store_true",
                        help="also run the perf hook: executes the repository's micro-checks at base and head")
    _add_engine_options(parser)
    _add_perf_options(parser)


def _add_perf_options(parser: argparse.ArgumentParser) -> None:
    perf = parser.add_argument_group("perf hook")
    perf.add_argument("--timeout", type=float, default=60.0, metavar="S", help="per micro-check time limit (default 60)")
    perf.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    perf.add_argument("--profile", choices=("ops-only", "full", "both"), help="also capture profiler artifacts into --out")
    perf.add_argument("--out", metavar="DIR", help="artifact directory for --profile (outside the repository)")
    perf.add_argument("--window", type=int, default=1, metavar="N", help="measured calls per profile capture (default 1)")
    perf.add_argument("--memory-limit", type=int, default=8192, metavar="MB",
                      help="resident memory a micro-check process may use before it is killed (default 8192)")
    perf.add_argument("--tests", nargs=argparse.REMAINDER, metavar="PYTEST ARGS",
                      help="also measure the repository's pytest tests that reach the change (last option: the "
                           "rest of the line goes to pytest; none: the perf-tests paths)")


def _add_engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", "-j", type=int, metavar="N", help="processes for large scans (default: one per core)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    parser.add_argument("--cache-dir", metavar="DIR", help="result cache location (default: ~/.cache/rltrefactor)")
    parser.add_argument("--profile-rules", action="store_true",
                        help="print the time spent in each rule's matcher to stderr (use with --no-cache)")


def _csv(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rltrefactor", description="Refactor review for PyTorch inference-engine code.", epilog=EXIT_CODES)
    from .version import VersionAction

    parser.add_argument("--version", action=VersionAction, help="print the tool's and the bundled rule library's versions")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    review = commands.add_parser("review", help="review a change against the rule library", epilog=EXIT_CODES)
    review.set_defaults(command_parser=review)
    _add_change_source(review)
    _add_review_options(review)
    perf = commands.add_parser(
        "perf", help="measure the device syncs, copies and allocations a change adds; "
                     "'perf scaffold PATH::QUALNAME' writes a micro-check of one function",
        epilog="rltrefactor perf scaffold PATH::QUALNAME writes a micro-check of one function "
               "(see rltrefactor perf scaffold --help). " + EXIT_CODES)
    _add_change_source(perf)
    perf.add_argument("--format", choices=("text", "json"), default="text")
    perf.add_argument("--output", "-o", metavar="FILE")
    perf.add_argument("--fail-on", choices=SEVERITIES)
    _add_perf_options(perf)
    perf.set_defaults(handler=_run_perf, command_parser=perf)
    baseline = commands.add_parser(
        "baseline", help="record today's findings so that only new ones fail",
        description="Record today's findings in a baseline file; 'review --baseline FILE' then fails only on "
                    "findings not in it. With no change source (no PATH, --diff, --diff-file or --staged) it "
                    "scans the whole repository.",
    )
    _add_change_source(baseline)
    baseline.add_argument("--output", "-o", default=".rltrefactor-baseline.json", metavar="FILE")
    baseline.add_argument("--update", action="store_true",
                          help="refresh FILE: keep the findings it records that still occur, drop stale entries, "
                               "add nothing new (also turns a baseline of an older format into the current one)")
    _add_engine_options(baseline)
    baseline.set_defaults(handler=_run_baseline, command_parser=baseline, scope="lines", fail_on=None,
                          fail_on_unreviewable=False, select=(), ignore=(), perf=False, baseline=None)
    from .rules import add_rules_parser

    add_rules_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed stdout shows here, not as a message at interpreter exit
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_STDOUT_CLOSED
    return code


def _discard_stdout() -> None:
    """Point stdout at the null device: what is still buffered must not fail again at exit."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # stdout without a file descriptor (replaced by a caller)
        pass


def _main(argv: Sequence[str] | None) -> int:
    from .perf import is_scaffold, scaffold_parser

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = scaffold_parser(_Parser).parse_args(argv[2:]) if is_scaffold(argv) else parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    # Syntax trees are freed by reference counting (they hold no cycles); a review builds
    # millions of nodes, and the default collection threshold spends ~5 % of it on
    # collections that find nothing.
    gc.set_threshold(100_000, 50, 100)
    try:
        return args.handler(args) if hasattr(args, "handler") else _run_review(args)
    except BrokenPipeError:
        raise  # the reader left: ``main`` ends quietly
    except RltError as exc:
        print(f"rltrefactor: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("rltrefactor: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
        if os.environ.get("RLTREFACTOR_DEBUG"):  # rltrefactor: ignore[env-read-outside-config] a process switch for tracebacks, read where errors are printed
            raise
        print(f"rltrefactor: internal error: {type(exc).__name__}: {exc}; rerun with RLTREFACTOR_DEBUG=1 and report it", file=sys.stderr)
        return EXIT_ERROR


def _request(args: argparse.Namespace) -> ReviewRequest:
    from ..api import ReviewRequest

    if args.jobs is not None and args.jobs < 1:
        raise ConfigError(f"--jobs: expected a positive number of processes (got {args.jobs})")
    return ReviewRequest(
        repo=args.repo,
        diff=args.diff,
        diff_file=args.diff_file,
        staged=args.staged,
        paths=tuple(args.paths),
        scope=args.scope,
        overrides={"fail_on": args.fail_on, "select": args.select, "ignore": args.ignore,
                   "fail_on_unreviewable": True if args.fail_on_unreviewable else None,
                   "docs_url": getattr(args, "docs_url", None)},
        cache_dir=args.cache_dir,
        use_cache=not args.no_cache,
        jobs=args.jobs,
        progress=_progress_printer() if sys.stderr.isatty() and _full_scan(args) else None,
        perf=_perf_request(args) if args.perf else None,
        baseline=args.baseline,
        config=args.config,
        show_unknown_frequency=getattr(args, "show_unknown_frequency", False) or getattr(args, "show_held_back", False),
        show_new_code_rules=getattr(args, "show_held_back", False),
    )


def _full_scan(args: argparse.Namespace) -> bool:
    """Paths alone were given, or ``baseline`` was given no change source (it scans the repository)."""
    no_source = not (args.diff or args.diff_file or args.staged or args.paths)
    return bool(args.paths and not (args.diff or args.staged)) or (args.command == "baseline" and no_source)


def _progress_printer() -> Callable[[int, int], None]:
    """Progress for long full scans, on an interactive stderr only; erased when done."""
    import atexit

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(TextColumn("rltrefactor: reviewed"), MofNCompleteColumn(), TextColumn("files"), BarColumn(),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task("review")

    def show(done: int, total: int) -> None:
        if total < PROGRESS_MIN_FILES:
            return
        bar.update(task, completed=done, total=total)
        if not bar.live.is_started:
            bar.start()
            atexit.register(bar.stop)  # a run that stops early still gives the cursor back
        if done == total:
            bar.stop()

    return show


def _print_rule_profile(result: ReviewResult) -> None:
    spent = sorted(((v, k[5:]) for k, v in result.timings.items() if k.startswith("rule:")), reverse=True)
    print(f"{'seconds':>9}  rule   (time in each matcher; reading, parsing and matching took {result.timings.get('match', 0):.2f} s)", file=sys.stderr)
    for seconds, rule_id in spent:
        print(f"{seconds:9.3f}  {rule_id}", file=sys.stderr)


def _run_review(args: argparse.Namespace) -> int:
    from ..api import review_change

    report = review_change(_request(args))
    result = report.result
    if args.profile_rules:
        _print_rule_profile(result)
    if args.update_pr_body:
        from ..report.prbody import update_pr_body

        update_pr_body(args.update_pr_body, _render_markdown(result, args))
    write_report(render(result, args, report.baseline), args.output)
    # After the report: a run stopped by an error says that one line alone.
    for warning in report.warnings:
        print(f"rltrefactor: {warning}", file=sys.stderr)
    if args.staged and result.gate_failed and result.failing:
        print(_blocked_commit(result), file=sys.stderr)
    if args.staged and result.fail_on_unreviewable and result.files_unreviewable:
        print(_blocked_unreviewable(result), file=sys.stderr)
    return _exit_code(result.perf, result.gate_failed)


def _blocked_commit(result: ReviewResult) -> str:
    """What a pre-commit user can do about a failing staged review, in one line."""
    failing = result.failing
    count, them, their = ("1 finding", "it", "its") if len(failing) == 1 else (f"{len(failing)} findings", "them", "each one's")
    return (f"rltrefactor: commit blocked by {count}: fix {them}, or keep {them} with a reason at the end of {their} line: "
            f"# rltrefactor: ignore[{failing[0].rule_id}] <why it is not adopted>; "
            "to commit once without the review: git commit --no-verify")


def _blocked_unreviewable(result: ReviewResult) -> str:
    """What a pre-commit user can do about staged files the review could not read, in one line."""
    from ..report.paths import quote_path

    paths = [quote_path(path) for path in result.files_unreviewable]
    count = "1 staged file" if len(paths) == 1 else f"{len(paths)} staged files"
    return (f"rltrefactor: commit blocked: {count} could not be reviewed ({', '.join(paths[:3])}"
            f"{', ...' if len(paths) > 3 else ''}; the report above says why): fix {'it' if len(paths) == 1 else 'them'}, "
            'or let such files pass with unreviewable = "warn" in the configuration; '
            "to commit once without the review: git commit --no-verify")


def _exit_code(perf: PerfSummary | None, gate_failed: bool) -> int:
    if perf is not None and perf.all_failed:
        return EXIT_ERROR  # the hook measured nothing: a gate must not pass on that
    return EXIT_FINDINGS if gate_failed else EXIT_CLEAN


def _perf_request(args: argparse.Namespace) -> PerfRequest:
    from ..api import PerfRequest

    if args.window < 1 or args.timeout <= 0 or args.memory_limit < 1:
        raise ConfigError(
            f"--window, --timeout and --memory-limit must be positive "
            f"(got {args.window}, {args.timeout} and {args.memory_limit})"
        )
    return PerfRequest(timeout=args.timeout, profile=args.profile, out_dir=args.out, window=args.window,
                       device=args.device, memory_mb=args.memory_limit, on_plan=_print_plan,
                       tests=None if args.tests is None else tuple(args.tests),
                       cache_dir=getattr(args, "cache_dir", None), use_cache=not getattr(args, "no_cache", False))


def _print_plan(the_plan: PerfPlan) -> None:
    from ..report.perf import plan_text

    print(plan_text(the_plan), file=sys.stderr)


def _run_perf(args: argparse.Namespace) -> int:
    """``rltrefactor perf``: the hook alone, every delta (improvements included)."""
    from ..api import MeasureRequest, measure
    from ..report.perf import render_perf_json, render_perf_text

    measured = measure(MeasureRequest(
        repo=args.repo, diff=args.diff, diff_file=args.diff_file, staged=args.staged, paths=tuple(args.paths),
        fail_on=args.fail_on, perf=_perf_request(args), config=args.config,
    ))
    if args.format == "json":
        text = render_perf_json(measured.summary, measured.findings)
    else:
        text = render_perf_text(measured.summary)
    write_report(text, args.output)
    return _exit_code(measured.summary, measured.gate_failed)


def _run_baseline(args: argparse.Namespace) -> int:
    from ..api import BaselineRequest, record_baseline

    recorded = record_baseline(BaselineRequest(_request(args), args.output, update=args.update))
    count = len(recorded.baseline.entries)
    if args.update:
        print(f"rltrefactor: refreshed {args.output}: {count} finding(s) kept, {recorded.stale} stale entry(ies) dropped",
              file=sys.stderr)
    else:
        print(f"rltrefactor: recorded {count} finding(s) in {args.output}", file=sys.stderr)
    return EXIT_CLEAN


def _render_markdown(result: ReviewResult, args: argparse.Namespace) -> str:
    from ..report.links import remote_url
    from ..report.markdown import render_markdown

    change = result.change
    head_sha = None
    if change.head.kind == "worktree" and change.base is not None and change.repo_root:
        from ..change.git import clean_head

        head_sha = clean_head(change.repo_root)
    return render_markdown(
        result,
        head_sha=head_sha,
        remote_url=remote_url(result.change.repo_root or args.repo),
        docs_url=result.docs_url,
        show_preexisting=args.show_preexisting,
        all_manual=args.checklist == "all",
        explain=getattr(args, "explain", False),
    )


def render(result: ReviewResult, args: argparse.Namespace, baseline: BaselineReport | None = None) -> str:
    if args.format == "json":
        from ..report.json import render_json

        return render_json(result, baseline=baseline)
    if args.format == "sarif":
        from ..report.links import remote_url
        from ..report.sarif import render_sarif

        url = remote_url(result.change.repo_root or args.repo)
        return render_sarif(result, docs_url=result.docs_url, remote_url=url)
    if args.format == "github":
        from ..report.github import render_github

        return render_github(result)
    if args.format == "markdown":
        return _render_markdown(result, args)
    from ..report.text import render_text

    color = args.color == "always" or (
        args.color == "auto" and args.output is None and sys.stdout.isatty() and not os.environ.get("NO_COLOR")  # rltrefactor: ignore[env-read-outside-config] the NO_COLOR terminal convention, read where output is coloured
    )
    return render_text(
        result, color=color, show_preexisting=args.show_preexisting, quiet=args.quiet, statistics=args.statistics,
        explain=getattr(args, "explain", False),
    )


def write_report(text: str, output: str | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    from ..change.files import write_atomic

    write_atomic(output, text)
