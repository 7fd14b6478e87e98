"""What the call index costs: cold, cached, after a one-file change, and in a small PR review.

Usage:
    python bench/callindex_cost.py [--quick] [--runs N] [--compare-src OTHER/src]

Builds the index (``rltrefactor.context.calls.index.build_index``) over the torch corpus of
``bench/run.py`` (a git repository of one commit under ``bench/work``) in this process,
told one large module (``torch/_inductor/scheduler.py``) as a review tells it the
files it reviews: with an empty cache directory (cold, told one function), again with
the filled one (the same revision), and with a function appended to that module in the
working tree (told the function added, then every function of the module). Then times
the whole process of ``rltrefactor review --diff HEAD~1..HEAD`` on the one-line change
of the demo engine with a fresh cache directory each run (``--compare-src``: the same
with another checkout's sources). Prints one table.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))
sys.path.insert(0, HERE)

import corpora  # noqa: E402
from rltrefactor.context.calls.index import CallIndex, build_index  # noqa: E402
from rltrefactor.config import Config  # noqa: E402
from rltrefactor.change.git import git  # noqa: E402
from rltrefactor.types import ChangeSet, Revision  # noqa: E402


def _timed(repo: str, revision: Revision, cache: str, path: str, lines: set[int] | None) -> tuple[float, CallIndex]:
    """Wall seconds of one build told ``path`` (the functions holding ``lines``; None:
    every function of it), and the index; the CPU seconds go to ``_CPU``."""
    started, cpu = time.perf_counter(), time.process_time()
    index = build_index(ChangeSet(repo, revision, ()), Config(), cache, paths=[path],
                        lines={path: lines} if lines is not None else None)
    _CPU.append(time.process_time() - cpu)
    return time.perf_counter() - started, index


_CPU: list[float] = []
# A large module with many callers across the corpus; the first file where it is absent.
_TARGET = "torch/_inductor/scheduler.py"


def _index_rows(repo: str, runs: int) -> list[tuple[str, float, str]]:
    head = Revision("git", git(repo, "rev-parse", "HEAD").strip())
    files = git(repo, "ls-files", "*.py").split("\n")
    path = _TARGET if _TARGET in files else files[0]
    target = os.path.join(repo, path)
    original = Path(target).read_text(encoding="utf-8")
    middle = _middle_function_line(original)
    measured: dict[str, list[float]] = {}
    detail: dict[str, str] = {}

    def record(name: str, seconds: float, index: CallIndex, what: str) -> None:
        measured.setdefault(name, []).append(seconds)
        told = index.for_file(path)
        detail[name] = (f"{index.indexed} files, {index.parsed} parsed; {what}; "
                        f"{len(told.functions) if told else 0} verdicts told; CPU {_CPU[-1]:.2f} s")

    for _ in range(runs):
        cache = tempfile.mkdtemp(prefix="callindex-bench-")
        try:
            record("index cold", *_timed(repo, head, cache, path, {middle}), "told one function of " + path)
            record("index cached, same revision", *_timed(repo, head, cache, path, {middle}), "the told index read whole")
            try:
                added = original.count("\n") + 3
                with open(target, "a", encoding="utf-8") as handle:
                    handle.write("\n\ndef _bench_added(x):\n    return x\n")
                record("index, one file changed", *_timed(repo, Revision("worktree"), cache, path, {added, added + 1}),
                       "working tree; told the function added")
                record("index, one file changed, every function told", *_timed(repo, Revision("worktree"), cache, path, None),
                       f"working tree; told every function of {path}")
            finally:
                with open(target, "w", encoding="utf-8") as handle:
                    handle.write(original)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return [(name, statistics.median(values), detail[name]) for name, values in measured.items()]


def _middle_function_line(text: str) -> int:
    starts = [n for n, line in enumerate(text.split("\n"), 1) if line.lstrip().startswith("def ")]
    return starts[len(starts) // 2] + 1 if starts else 1


def _review_row(runs: int, source: str, label: str) -> tuple[str, float, str] | None:
    pr = corpora.one_line_change()
    if pr is None:
        return None
    walls, cpus = [], []
    for _ in range(runs):
        cache = tempfile.mkdtemp(prefix="callindex-bench-")
        try:
            env = {**os.environ, "PYTHONPATH": source, "RLTREFACTOR_CACHE_DIR": cache}
            started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            command = ["-m", "rltrefactor", "review", "--diff", pr.span, "--repo", pr.repo]
            subprocess.run([sys.executable, *command], env=env, capture_output=True, check=False)
            walls.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return (label, statistics.median(walls),
            f"{pr.name}, whole process, fresh cache dir each run; CPU {statistics.median(cpus):.2f} s")


def _parsed_lines(repo: str) -> tuple[str, float, str]:
    """Lines a full scan hands LibCST without the index and with it: code the index
    proves one-time or offline needs no device-residency matching."""
    from rltrefactor.api import _load
    from rltrefactor.matching.engine import Engine, select_rules

    loaded = _load(repo)
    rules = select_rules(loaded.library, loaded.config)
    paths = git(repo, "ls-files", "*.py").split()
    texts = {p: Path(repo, p).read_text(encoding="utf-8") for p in paths}
    index = build_index(ChangeSet(repo, Revision("worktree"), ()), loaded.config, None, paths=paths)
    counts = []
    for call_index in (None, index):
        engine = Engine(rules, loaded.config, frozenset(r.id for r in loaded.library.rules), call_index=call_index)
        counts.append(sum(engine.review_file(p, t).parsed_lines for p, t in texts.items()))
    change = (counts[1] - counts[0]) / counts[0] * 100 if counts[0] else 0.0
    return ("LibCST-parsed lines, full scan", 0.0, f"{counts[0]:,} without the index, {counts[1]:,} with it ({change:+.1f} %)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 131-file corpus instead of 1,308 files")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare-src", help="also time the review with another checkout's src (before the index)")
    parser.add_argument("--review-only", action="store_true", help="time the one-line review only")
    parser.add_argument("--parsed-lines", action="store_true", help="also count the lines a full scan parses with LibCST")
    args = parser.parse_args()
    if not os.path.isdir(corpora.SITE):  # a worktree without its own venv: the running interpreter's packages
        corpora.SITE = sysconfig.get_paths()["purelib"]
    corpus = corpora.torch_corpus(args.quick)
    rows = _index_rows(corpus.path, args.runs) if not args.review_only else []
    rows.append(_review_row(args.runs, os.path.join(ROOT, "src"), "1-line change review") or ("1-line change review", 0.0, "absent"))
    if args.compare_src:
        rows.append(_review_row(args.runs, args.compare_src, "1-line change review, other src") or ("", 0.0, ""))
    if args.parsed_lines:
        rows.append(_parsed_lines(corpus.path))
    print(f"corpus: {corpus.source}, {corpus.files} files; median of {args.runs} run(s)\n")
    print("| measure | seconds | notes |\n|---|---:|---|")
    for name, seconds, note in rows:
        print(f"| {name} | {seconds:.2f} | {note} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
