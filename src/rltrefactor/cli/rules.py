"""``rltrefactor rules ...``: list, show, check, test, document and scaffold rules.

Each handler returns the exit code: 0 clean, 1 when rule examples fail, and errors
(``RltError``) propagate to ``cli.main``, which prints them and exits with 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Callable, TypeVar

from ..errors import ChangeInputError, ConfigError
from ..library.model import AREAS, Library, Rule

if TYPE_CHECKING:
    from ..authoring.examples import Status
    from ..authoring.target import TargetLibrary

# The handlers import the library machinery (and with it libcst) when they run, so that
# building the command-line parser stays cheap for every other command.


_P = TypeVar("_P", bound=argparse.ArgumentParser)


def add_rules_parser(subparsers: argparse._SubParsersAction[_P]) -> None:
    rules = subparsers.add_parser("rules", help="list, check, test and document the rule library")
    actions = rules.add_subparsers(dest="rules_command", metavar="ACTION", required=True)

    listing = _action(actions, "list", "list rules", _list)
    listing.add_argument("--format", choices=("text", "json"), default="text")
    show = _action(actions, "show", "show one rule in full", _show)
    show.add_argument("rule_id", metavar="ID")
    check = _action(actions, "check", "validate the rule files", _check)
    check.add_argument("--base", metavar="REF", help="also require a version bump when rules/ changed since REF")
    check.add_argument("--repo", default=".", help="repository holding rules/ (default: current directory)")
    test = _action(actions, "test", "run every rule's examples through its matcher", _test)
    test.add_argument("rule_ids", nargs="*", metavar="ID")
    docs = _action(actions, "docs", "render the Markdown rule reference", _docs)
    docs.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout (e.g. docs/rules.md)")
    new = _action(actions, "new", "draft a rule entry from a fixing commit: its changed statements, a pattern", _new)
    new.add_argument("--from-commit", required=True, metavar="SHA")
    new.add_argument("--path", required=True, metavar="FILE", help="repository-relative file the commit fixed")
    new.add_argument("--lines", required=True, metavar="A-B", help="line range of the fix at SHA (lines it changed)")
    new.add_argument("--id", dest="new_id", metavar="ID")
    new.add_argument("--area", choices=AREAS)
    new.add_argument("--repo", default=".")
    new.add_argument("--output", "-o", metavar="FILE", help="append the entry to this rules/<area>.yaml")


def _action(
    actions: argparse._SubParsersAction[_P], name: str, help_text: str,
    handler: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    parser = actions.add_parser(name, help=help_text)
    parser.add_argument("--rule-dir", action="append", default=[], metavar="DIR", help="also load repository-local rules from DIR")
    parser.add_argument("--config", metavar="PATH", help="the configuration file, for its rule-dirs (default: the "
                                                         "repository root's rltrefactor.toml, .rltrefactor.toml or pyproject.toml)")
    parser.set_defaults(handler=handler, command_parser=parser)
    return parser


def _library(args: argparse.Namespace) -> Library:
    """Bundled rules, the configured ``rule-dirs`` of the current repository, and --rule-dir."""
    from ..library.loader import load_library
    from ..matching.matchers.registry import check_matcher

    return load_library(_local_dirs(args), check_rule=check_matcher)


def _local_dirs(args: argparse.Namespace) -> tuple[str, ...]:
    from ..config import load_config

    configured = load_config(getattr(args, "repo", None) or ".", path=args.config).rule_dirs
    return tuple(dict.fromkeys([*configured, *args.rule_dir]))


def _find(library: Library, rule_id: str) -> Rule:
    rule = library.get(rule_id)
    if rule is None:
        from ..library.fields import suggest

        raise ConfigError(f"unknown rule {rule_id!r}{suggest(rule_id, library.by_id)}; list the ids with 'rltrefactor rules list'")
    return rule


def _list(args: argparse.Namespace) -> int:
    out = sys.stdout  # looked up per call: tests and callers may redirect it
    library = _library(args)
    if args.format == "json":
        rows = [
            {"id": r.id, "area": r.area, "title": r.title, "status": r.status, "group": r.group,
             "severity": r.severity, "confidence": r.confidence, "automated": r.automated,
             "kept_default": r.kept_default or None, "reports_on": r.reports_on,
             "precision": None if r.precision is None else {
                 "true": r.precision.true, "debatable": r.precision.debatable, "false": r.precision.false,
                 "measured": r.precision.measured}}
            for r in library.rules
        ]
        out.write(json.dumps(rows, indent=2) + "\n")
        return 0
    width = max(len(r.id) for r in library.rules)
    out.write(f"{'ID':<{width}}  {'AREA':<26} {'STATUS':<12} {'GROUP':<9} {'SEVERITY':<8} {'CHECK':<6} {'TRUE':<9} TITLE\n")
    for r in library.rules:
        kind = "auto" if r.automated else "manual"
        out.write(f"{r.id:<{width}}  {r.area:<26} {r.status:<12} {r.group:<9} {r.severity:<8} {kind:<6} {_true_share(r):<9} {r.title}\n")
    if any(r.kept_default for r in library.rules):
        out.write("* under 50 % true, kept in the default set by exception (see 'rules show ID')\n")
    out.write(f"rule library {library.versions}: {len(library.rules)} rules\n")
    return 0


def _true_share(rule: Rule) -> str:
    """``3/4`` findings judged true, ``0/0`` when none was found, ``-`` when not measured."""
    if rule.precision is None:
        return "-"
    kept = "*" if rule.kept_default else ""  # under half true, kept in the default set by exception
    return f"{rule.precision.true}/{rule.precision.judged}{kept}"


def _show(args: argparse.Namespace) -> int:
    out = sys.stdout  # looked up per call: tests and callers may redirect it
    rule = _find(_library(args), args.rule_id)
    scope = rule.applicability
    fields = [
        ("title", rule.title), ("area", rule.area), ("status", rule.status), ("group", rule.group), ("since", rule.since),
        ("severity", rule.severity), ("confidence", rule.confidence),
        ("precision", "not measured" if rule.precision is None else f"{rule.precision.figure}; measured on {rule.precision.measured}"),
        ("kept default", rule.kept_default or "-"),
        ("reports on", "new code (a full scan holds its findings back)" if rule.reports_on == "new-code" else "all code"),
        ("matcher", _matcher_text(rule)), ("defined at", str(rule.origin)),
        ("applies to", f"paths {', '.join(scope.paths)}; exclude {', '.join(scope.exclude) or '-'}; "
                       "runs: " + ("per-step" if scope.per_step else "anywhere") + f"; tests: {'yes' if scope.tests else 'no'}"),
        ("problem", rule.problem), ("preferred", rule.preferred), ("exceptions", rule.exceptions),
        ("impact", rule.impact), ("fix", rule.fix), ("fix safety", rule.fix_safety),
        ("references", ", ".join(rule.references) or "-"),
    ]  # fmt: skip
    out.write(f"{rule.id}\n")
    for name, value in fields:
        out.write(f"  {name + ':':<12} {value}\n")
    for example in rule.examples:
        out.write(f"\n  {example.kind} example ({example.path}):\n")
        out.write("".join(f"    {line}\n" for line in example.code.rstrip().splitlines()))
    return 0


def _matcher_text(rule: Rule) -> str:
    spec = rule.matcher
    if spec is None:
        return "manual (review checklist)"
    if spec.emitted_by is not None:
        return f"emitted by {spec.emitted_by}"
    return f"python: {spec.python}" if spec.python is not None else "pattern"


def _check(args: argparse.Namespace) -> int:
    out = sys.stdout  # looked up per call: tests and callers may redirect it
    library = _library(args)
    from pathlib import Path

    from ..library.drafts import check_drafts
    from ..library.loader import display_dir
    from ..library.location import bundled_rules_dir

    check_drafts([(bundled_rules_dir(), "rules"), *((Path(d), display_dir(d)) for d in _local_dirs(args))])
    line = f"rule library {library.versions}: {len(library.rules)} rules valid"
    if args.base:
        from ..authoring.versioning import check_version_bump

        previous = check_version_bump(args.repo, args.base)
        line += f"; version moved from {previous}" if previous else f"; rules unchanged since {args.base}"
    out.write(line + "\n")
    return 0


def _test(args: argparse.Namespace) -> int:
    out = sys.stdout  # looked up per call: tests and callers may redirect it
    library = _library(args)
    rules = [_find(library, rule_id) for rule_id in args.rule_ids] if args.rule_ids else list(library.rules)
    counts: dict[Status, int] = {"validated": 0, "noisy": 0, "missing": 0, "error": 0}
    checklist = 0
    for rule in rules:
        from ..authoring.examples import run_examples

        outcomes = run_examples(rule)
        checklist += not outcomes
        for outcome in outcomes:
            counts[outcome.status] += 1
            if not outcome.ok:
                out.write(f"{outcome.status:<9} {rule.id} ({outcome.example.kind} example at {outcome.where}): {outcome.detail}\n")
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n or status == "validated")
    out.write(
        f"examples of {len(rules) - checklist} rule(s), each run through its matcher (a bad example must report "
        f"exactly its marked lines, a good one nothing): {summary}; "
        f"{checklist} rule(s) have no static examples (manual or perf hook)\n"
    )
    return 0 if counts["validated"] == sum(counts.values()) else 1


def _docs(args: argparse.Namespace) -> int:
    out = sys.stdout  # looked up per call: tests and callers may redirect it
    from ..authoring.docs import render_rules_markdown

    text = render_rules_markdown(_library(args))
    if args.output:
        from ..change.files import write_atomic

        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        write_atomic(args.output, text)
    else:
        out.write(text)
    return 0


def _target_library(args: argparse.Namespace) -> TargetLibrary:
    """The library the new rule joins (``authoring.target``): the repository's own, but in
    a checkout of rltrefactor drafting into its bundled ``rules/``."""
    from ..authoring.target import target_library
    from ..config import load_config

    return target_library(args.repo, args.output, load_config(args.repo, path=args.config).rule_dirs)


def _new(args: argparse.Namespace) -> int:
    out = sys.stdout  # looked up per call: tests and callers may redirect it
    from ..authoring.scaffold import parse_line_range, scaffold_rule

    if args.output and os.path.isdir(args.output):
        example = os.path.join(args.output, f"{args.area or 'device-residency'}.yaml")
        raise ChangeInputError(f"{args.output}: is a directory; pass a rules/<area>.yaml file, e.g. {example}")
    stem = os.path.splitext(os.path.basename(args.output or ""))[0]
    if args.output and (stem not in AREAS or (args.area and args.area != stem)):
        # The library loads a rule file only under its area's name: anything else would be refused later.
        example = os.path.join(os.path.dirname(args.output), f"{args.area or 'device-residency'}.yaml")
        raise ChangeInputError(f"{args.output}: rule files are named after their area (got {stem!r}); "
                               f"pass {example}, one of {', '.join(AREAS)}")
    library = _target_library(args)
    draft = scaffold_rule(args.repo, args.from_commit, args.path, parse_line_range(args.lines), rule_id=args.new_id,
                          area=args.area, library=library, config=args.config)
    entry = draft.entry
    if not args.output:
        out.write(entry)
        return 0
    if os.path.exists(args.output):
        with open(args.output, encoding="utf-8") as handle:
            existing = handle.read()
        if "\nrules:" not in "\n" + existing:
            raise ChangeInputError(f"{args.output}: not a rule file (no `rules:` list); pass a rules/<area>.yaml file")
        text = existing.rstrip("\n") + "\n\n" + entry.split("\n", 1)[1]
    else:
        area = args.area or os.path.splitext(os.path.basename(args.output))[0]
        text = f"area: {area}\nrules:\n" + entry.split("\n", 1)[1]
    from ..change.files import write_atomic

    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)  # a first local rule starts its directory
    write_atomic(args.output, text)
    drafted = f"pattern {draft.pattern}" if draft.pattern else "a checklist rule: no pattern drafted, see its comment"
    wrote = ""
    if library.writes and library.path is not None:
        from ..authoring.target import LIBRARY_TEXT

        write_atomic(library.path, LIBRARY_TEXT)
        wrote = f"; wrote {library.label} (version {library.version}, the first of this repository's rule library)"
    load = "" if library.configured else f" --rule-dir {library.directory}"
    then = f"'rltrefactor rules check{load}'"
    if draft.pattern:
        then += f" and 'rltrefactor rules test{load} {draft.rule_id}'"
    reviews = "" if library.configured else (
        f"; reviews load these rules once rule-dirs names {library.directory} (under [tool.rltrefactor])")
    out.write(f"{args.output}: added rule entry {draft.rule_id} ({drafted}){wrote}; fill in the TODO fields, "
              f"then run {then}{reviews}\n")
    return 0
