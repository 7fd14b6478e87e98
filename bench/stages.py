"""Where a full scan's time goes, and what the code it parses costs in other parsers.

Usage:
    .venv/bin/python bench/stages.py [--corpus DIR] [--runs N] [--quick] [--write FILE]

Reviews every file of the corpus (default: the torch corpus of ``bench/run.py``) in one
process, without a cache, through ``rltrefactor.api.review``, and times each stage of
``Engine.review_file`` by wrapping the functions the engine calls (the engine's own
code runs unchanged; each wrapper adds one call and a clock read). Then it parses the very texts the
engine handed LibCST (the regions the rules read) again with LibCST, the standard
library's ``ast`` and tree-sitter, alternating parsers for ``--runs`` rounds, and
reports medians and ratios.

It answers one question for a design decision: how much of a scan is tied to LibCST as
the matching substrate (its parse, and matching and positions on its trees), and what
the same input costs a faster parser. Shares are of one process's work; on 2 cores the
wall is about half of it (see ``bench/RESULTS.md`` for walls side by side with Semgrep).
"""

from __future__ import annotations

import argparse
import ast
import collections
import os
import statistics
import sys
import time
from contextlib import ExitStack
from typing import Any, Callable, Iterator
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))
sys.path.insert(0, HERE)

import corpora  # noqa: E402
from rltrefactor.matching import engine as engine_module  # noqa: E402
from rltrefactor.api import ReviewRequest, review  # noqa: E402
from rltrefactor.matching.matchers import base as matcher_base  # noqa: E402
from rltrefactor.source.parsing import parse_module  # noqa: E402
from rltrefactor.source.syntax import parse_fresh  # noqa: E402

# Stage name -> (object, attribute) the engine calls it through. Nested stages (positions
# inside matching) are reported inside their parent, never added to the total twice.
STAGES: dict[str, tuple[Any, str]] = {
    "tree-sitter parse": (engine_module, "parse_tree"),
    "comment and docstring blanking": (engine_module, "code_text"),
    "prefilter": (engine_module, "may_match"),
    "imports": (engine_module, "import_table"),
    "where code runs": (engine_module, "execution_map"),
    "planning (what each rule reads)": (engine_module, "plan_regions"),
    "LibCST parse": (engine_module, "parse_module"),
    "matching": (engine_module.Engine, "_run_matchers"),
    "findings": (engine_module.Engine, "_to_findings"),
}
NESTED = {"positions of hits": ("matching", matcher_base.FileContext, "span")}
# The stage whose inputs are kept, to be parsed again by the other parsers.
RECORDED = "LibCST parse"
# Stages that exist only on LibCST trees or only to spare LibCST work.
LIBCST_BOUND = ("LibCST parse", "matching", "planning (what each rule reads)")


def timed(spent: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started

    return wrapper


def recording(function: Callable[[str], Any], texts: list[str]) -> Callable[[str], Any]:
    def wrapper(text: str) -> Any:
        texts.append(text)
        return function(text)

    return wrapper


def profile_scan(repo: str) -> tuple[dict[str, float], float, list[str], int]:
    """Seconds per stage, the whole review's seconds, the region texts LibCST parsed,
    and the number of findings."""
    spent: dict[str, float] = collections.defaultdict(float)
    regions: list[str] = []
    timed_stages = {**STAGES, **{name: (owner, attribute) for name, (_, owner, attribute) in NESTED.items()}}
    with ExitStack() as patches:
        for name, (owner, attribute) in timed_stages.items():
            original = getattr(owner, attribute)
            if name == RECORDED:
                original = recording(original, regions)
            patches.enter_context(mock.patch.object(owner, attribute, timed(spent, name, original)))
        started = time.perf_counter()
        result = review(ReviewRequest(repo=repo, paths=(repo,), use_cache=False, jobs=1))
        total = time.perf_counter() - started
    return spent, total, regions, len(result.findings)


def parse_all(texts: list[str]) -> dict[str, Callable[[], None]]:
    def libcst() -> None:
        for text in texts:
            parse_module(text)

    def stdlib_ast() -> None:
        for text in texts:
            ast.parse(text)

    def tree_sitter() -> None:
        for text in texts:
            parse_fresh(text)

    return {"LibCST": libcst, "ast": stdlib_ast, "tree-sitter": tree_sitter}


def rounds(parsers: dict[str, Callable[[], None]], runs: int) -> Iterator[tuple[str, float]]:
    for _ in range(runs):
        for name, parse in parsers.items():  # alternating: the machine's drift hits each alike
            started = time.process_time()
            parse()
            yield name, time.process_time() - started


def render(repo: str, spent: dict[str, float], total: float, texts: list[str], findings: int,
           parse_times: dict[str, list[float]], runs: int) -> str:
    lines_parsed = sum(text.count("\n") for text in texts)
    out = [
        "# Where a full scan's time goes",
        "",
        f"Generated by `.venv/bin/python bench/stages.py --runs {runs}` on `{os.path.relpath(repo, ROOT)}`:",
        f"one process, no cache, {findings} findings, {total:.2f} s in `review`.",
        "",
        "| stage | seconds | share |",
        "|---|---:|---:|",
    ]
    for name in STAGES:
        out.append(f"| {name} | {spent[name]:.2f} | {spent[name] / total:.0%} |")
        for nested, (parent, *_) in NESTED.items():
            if parent == name:
                out.append(f"| &nbsp;&nbsp;of which {nested} | {spent[nested]:.2f} | {spent[nested] / total:.0%} |")
    rest = total - sum(spent[name] for name in STAGES)
    out.append(f"| everything else (reading files, rule selection, report) | {rest:.2f} | {rest / total:.0%} |")
    bound = sum(spent[name] for name in LIBCST_BOUND)
    out += [
        "",
        f"Tied to LibCST as the substrate (its parse, matching on its trees, planning that spares it work): "
        f"**{bound:.2f} s, {bound / total:.0%}**; the rest: {total - bound:.2f} s.",
        "",
        f"## The same input in other parsers: {len(texts)} region texts, {lines_parsed:,} lines",
        "",
        f"Median of {runs} rounds, parsers alternating, CPU seconds of this process.",
        "",
        "| parser | seconds (median) | / LibCST |",
        "|---|---:|---:|",
    ]
    libcst = statistics.median(parse_times["LibCST"])
    for name, times in parse_times.items():
        median = statistics.median(times)
        out.append(f"| {name} | {median:.2f} | {median / libcst:.2f}x |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", help="a repository to scan (default: the torch corpus of bench/run.py)")
    parser.add_argument("--quick", action="store_true", help="the 131-file torch corpus")
    parser.add_argument("--runs", type=int, default=3, help="rounds of the parser comparison (default 3)")
    parser.add_argument("--write", help="also write the report to this file")
    args = parser.parse_args(argv)
    repo = os.path.abspath(args.corpus) if args.corpus else corpora.torch_corpus(quick=args.quick).path
    if not os.path.isdir(repo):
        parser.error(f"--corpus {args.corpus}: no such directory")
    spent, total, texts, findings = profile_scan(repo)
    parse_times: dict[str, list[float]] = collections.defaultdict(list)
    for name, seconds in rounds(parse_all(texts), max(1, args.runs)):
        parse_times[name].append(seconds)
    report = render(repo, spent, total, texts, findings, parse_times, max(1, args.runs))
    print(report, end="")
    if args.write:
        with open(args.write, "w", encoding="utf-8") as handle:
            handle.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
