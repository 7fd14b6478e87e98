"""Where code runs, and what a full scan finds, on whole engines (vLLM and SGLang).

Usage:
    .venv/bin/python bench/engines.py [DIR ...] [--runs N] [--sample 30 --seed 1] [--write bench/ENGINES.md]
    .venv/bin/python bench/engines.py --report-only [--sample 30 --seed 1] [--write bench/ENGINES.md]

Each DIR holds an engine's Python sources (its name is the folder's); without DIR, the
wheels of ``vllm`` and ``sglang`` are downloaded by name (``pip download --no-deps``)
into ``bench/work/wheels`` and their ``.py`` files unzipped. Each engine becomes a git
repository of one commit under ``bench/work/engines/<name>`` (rebuilt only when its
source changes). Then, in this one process:

- the call index's cost (``build_index``) told one large scheduler module: with an empty
  cache directory (cold), with the filled one (warm), and after a function is appended
  to the module in the working tree (told the function added, then every function);
- how many functions each verdict covers (kind and basis): the per-file execution map
  alone, and told what the call index, built over every file without a disk cache,
  proves (``execution_map(tree, declared, repository=index.for_file(path))``);
- a full scan with the default configuration, no cache, one job (``api.review`` with
  ``paths=(dir,)``, what ``rltrefactor review --no-cache --format json DIR`` runs),
  findings counted by rule, severity and execution context. Timed once.

What it measured goes to ``bench/work/engines/results.json`` (every finding included);
``--report-only`` renders the page again from it and ``bench/engines_judgements.jsonl``.
``--sample N --seed S`` prints N findings of each engine drawn at random, with their
code, for judgement by hand. The page keeps whatever follows its hand-written marker.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import glob
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))
sys.path.insert(0, HERE)

import engines_report  # noqa: E402
from report import machine  # noqa: E402
from history import WHEELS, WORK, git  # noqa: E402
from rltrefactor import __version__, code_stamp  # noqa: E402
from rltrefactor.api import ReviewRequest, review  # noqa: E402
from rltrefactor.config import Config, declared_for, load_config  # noqa: E402
from rltrefactor.context.calls.index import CallIndex, build_index  # noqa: E402
from rltrefactor.context.execution import ExecutionMap, execution_map  # noqa: E402
from rltrefactor.source.syntax import parse_tree  # noqa: E402
from rltrefactor.types import ChangeSet, Revision  # noqa: E402

ENGINES = WORK + "/engines"
RESULTS = os.path.join(ENGINES, "results.json")
DEFAULT_NAMES = ("vllm", "sglang")
# A real large scheduler of each engine: many callers, many per-step functions.
TARGETS = {"vllm": "vllm/v1/core/sched/scheduler.py", "sglang": "sglang/srt/managers/scheduler.py"}
APPENDED = "\n\ndef _bench_appended(batch):\n    return batch\n"
T = TypeVar("T")


class BenchError(Exception):
    """Bad input: one line for the user, never a traceback."""


# --- The engines as git repositories ---------------------------------------------------------


def _python_files(root: str) -> Iterator[str]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", ".git"))
        yield from (os.path.relpath(os.path.join(folder, f), root) for f in sorted(files) if f.endswith(".py"))


def _commit(repo: str, message: str) -> None:
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)


def engine_repository(name: str, source: str | None) -> str:
    """``bench/work/engines/<name>``, a git repository of one commit holding the ``.py``
    files of ``source`` (None: of the wheel downloaded by name)."""
    dest = os.path.join(ENGINES, name)
    marker = os.path.join(dest, ".git", "bench-complete")
    stamp = f"{os.path.abspath(source)}: {sum(1 for _ in _python_files(source))} files" if source else f"wheel {name}"
    if os.path.exists(marker) and Path(marker).read_text() == stamp:
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    if source is None:
        _unzip_python(_wheel(name), dest)
    else:
        for rel in _python_files(source):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copyfile(os.path.join(source, rel), os.path.join(dest, rel))
    _commit(dest, stamp)
    Path(marker).write_text(stamp)
    return dest


def _wheel(name: str) -> str:
    found = sorted(glob.glob(os.path.join(WHEELS, f"{name}-*.whl")))
    if not found:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", name, "-d", WHEELS]
        done = subprocess.run(command, capture_output=True, text=True)
        found = sorted(glob.glob(os.path.join(WHEELS, f"{name}-*.whl")))
        if done.returncode != 0 or not found:
            last = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise BenchError(f"pip download --no-deps {name}: {last}; pass the engine's source folder as DIR instead")
    return found[-1]


def _unzip_python(wheel: str, dest: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.endswith(".py") and ".dist-info/" not in member and ".data/" not in member:
                archive.extract(member, dest)


def target_module(name: str, files: list[str]) -> str:
    """The engine's scheduler of ``TARGETS``; else its largest scheduler or model runner."""
    if TARGETS.get(name) in files:
        return TARGETS[name]
    wanted = [f for f in files if os.path.basename(f) in ("scheduler.py", "model_runner.py")] or files
    return max(wanted, key=lambda f: os.path.getsize(os.path.join(ENGINES, name, f)))


# --- Measures -------------------------------------------------------------------------------


def timed(call: Callable[[], T]) -> tuple[T, float, float]:
    """The result, wall seconds and CPU seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _row(measure: str, samples: list[tuple[float, float]], note: str) -> dict[str, Any]:
    return {"measure": measure, "wall": statistics.median(s[0] for s in samples),
            "cpu": statistics.median(s[1] for s in samples), "note": note}


def index_cost(repo: str, target: str, runs: int) -> list[dict[str, Any]]:
    """Cold, warm and after a one-function change: the index told ``target``."""
    config, head = load_config(repo), Revision("git", git(repo, "rev-parse", "HEAD").strip())
    path = os.path.join(repo, target)
    original = Path(path).read_text(encoding="utf-8")
    added = original.count("\n") + 3  # the appended ``def`` line
    samples: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    notes: dict[str, str] = {}

    def build(name: str, revision: Revision, cache: str, lines: set[int] | None, what: str) -> None:
        told = {target: lines} if lines is not None else None
        index, wall, cpu = timed(lambda: build_index(ChangeSet(repo, revision, ()), config, cache, [target], told))
        samples[name].append((wall, cpu))
        verdicts = index.for_file(target)
        notes[name] = (f"{index.indexed:,} files, {index.parsed:,} parsed; {what}; "
                       f"{len(verdicts.functions) if verdicts else 0} verdicts proven")

    for _ in range(runs):
        cache = tempfile.mkdtemp(prefix="engines-bench-")
        try:
            build("cold: empty cache directory", head, cache, None, "every function of the module told")
            build("warm: the same again", head, cache, None, "the answer read whole")
            try:
                Path(path).write_text(original + APPENDED, encoding="utf-8")
                build("one function appended, told it", Revision("worktree"), cache, {added, added + 1},
                      "working tree; told the function added")
                build("one function appended, told every function", Revision("worktree"), cache, None,
                      "working tree; told every function of the module")
            finally:
                Path(path).write_text(original, encoding="utf-8")
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return [_row(name, values, notes[name]) for name, values in samples.items()]


def _read(repo: str, path: str) -> str | None:
    try:
        return Path(repo, path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _verdict_rows(plain: ExecutionMap, told: ExecutionMap, path: str) -> Iterator[dict[str, Any]]:
    """One row per function: its verdict from the file alone and with the index told."""
    by_function = {(f.qualname, f.start_line): f for f in told.functions}
    for alone in plain.functions:
        with_index = by_function[(alone.qualname, alone.start_line)]
        yield {"path": path, "qualname": alone.qualname, "line": alone.start_line,
               "kind": alone.kind, "basis": alone.basis, "evidence": alone.evidence,
               "index_kind": with_index.kind, "index_basis": with_index.basis, "index_evidence": with_index.evidence}


def verdict_coverage(repo: str, files: list[str], runs: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Timings of the per-file maps, alone and with the call index over every file, and
    the verdict of every function (from the last run)."""
    config, head = load_config(repo), Revision("git", git(repo, "rev-parse", "HEAD").strip())
    seconds: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    rows: list[dict[str, Any]] = []
    for _ in range(runs):
        index, wall, cpu = timed(lambda: build_index(ChangeSet(repo, head, ()), config, None, paths=files))
        seconds["call index told every file (no disk cache)"].append((wall, cpu))
        rows, spent = _mapped(repo, files, config, index)
        for name, value in spent.items():
            seconds[name].append(value)
    timings = [_row(name, values, "") for name, values in seconds.items()]
    unread = len(files) - len({r["path"] for r in rows})
    return {"timings": timings, "functions": len(rows), "index_parsed": index.parsed, "files_without_functions": unread}, rows


def _mapped(repo: str, files: list[str], config: Config,
            index: CallIndex) -> tuple[list[dict[str, Any]], dict[str, tuple[float, float]]]:
    spent = {"tree-sitter parse, every file": [0.0, 0.0], "per-file map alone": [0.0, 0.0],
             "per-file map told the call index": [0.0, 0.0]}

    def add(name: str, wall: float, cpu: float) -> None:
        spent[name][0] += wall
        spent[name][1] += cpu

    rows: list[dict[str, Any]] = []
    for path in files:
        text = _read(repo, path)
        if text is None:
            continue
        tree, *parse_time = timed(lambda: parse_tree(text))
        declared = declared_for(config, path)
        plain, *alone_time = timed(lambda: execution_map(tree, declared))
        told, *told_time = timed(lambda: execution_map(tree, declared, repository=index.for_file(path)))
        add("tree-sitter parse, every file", *parse_time)
        add("per-file map alone", *alone_time)
        add("per-file map told the call index", *told_time)
        rows.extend(_verdict_rows(plain, told, path))
    return rows, {name: (value[0], value[1]) for name, value in spent.items()}


def full_scan(repo: str) -> dict[str, Any]:
    """The default configuration's full scan, no cache, one job; every finding kept."""
    request = ReviewRequest(repo=repo, paths=(repo,), use_cache=False, jobs=1)
    result, wall, cpu = timed(lambda: review(request))
    findings = [{"path": f.path, "line": f.span.line, "rule": f.rule_id, "severity": f.severity,
                 "context": f.execution, "evidence": f.execution_evidence, "confidence": f.confidence,
                 "definition": f.definition, "snippet": f.snippet, "also_at": list(f.also_at)}
                for f in result.findings if not f.suppressed]
    _add_basis(repo, findings)
    return {"wall": wall, "cpu": cpu, "files": len(result.files_reviewed), "errors": len(result.errors),
            "suppressed": sum(1 for f in result.findings if f.suppressed), "findings": findings}


def _add_basis(repo: str, findings: list[dict[str, Any]]) -> None:
    """The basis of the verdict on each finding's function, from the per-file map the scan
    used (a full scan runs without the call index by default)."""
    config = load_config(repo)
    by_path: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for finding in findings:
        by_path[finding["path"]].append(finding)
    for path, found in by_path.items():
        text = _read(repo, path)
        mapped = execution_map(parse_tree(text), declared_for(config, path)) if text is not None else None
        for finding in found:
            function = mapped.at(finding["line"]) if mapped is not None else None
            finding["basis"] = function.basis if function is not None else ""


# --- The run -----------------------------------------------------------------------------------


def measure_engine(name: str, repo: str, runs: int) -> dict[str, Any]:
    files = sorted(git(repo, "ls-files", "*.py").split())
    target = target_module(name, files)
    lines = sum(Path(repo, f).read_bytes().count(b"\n") for f in files)
    print(f"{name}: {len(files):,} files, {lines:,} lines; index cost told {target}", file=sys.stderr)
    cost = index_cost(repo, target, runs)
    print(f"{name}: verdicts of every function, {runs} run(s)", file=sys.stderr)
    coverage, verdicts = verdict_coverage(repo, files, runs)
    with open(os.path.join(ENGINES, f"{name}.verdicts.jsonl"), "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in verdicts)
    coverage["counts"] = _verdict_counts(verdicts)
    print(f"{name}: full scan", file=sys.stderr)
    return {"version": _engine_version(repo, name), "files": len(files), "lines": lines, "target": target,
            "target_lines": Path(repo, target).read_bytes().count(b"\n"), "index_cost": cost,
            "coverage": coverage, "scan": full_scan(repo)}


def _verdict_counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    alone = collections.Counter(f"{r['kind']}|{r['basis']}" for r in rows)
    told = collections.Counter(f"{r['index_kind']}|{r['index_basis']}" for r in rows)
    changed = collections.Counter(f"{r['kind']}|{r['index_kind']}" for r in rows if r["kind"] != r["index_kind"])
    return {"alone": dict(alone), "told": dict(told), "changed": dict(changed)}


def _engine_version(repo: str, name: str) -> str:
    text = _read(repo, os.path.join(name, "_version.py")) or ""
    found = re.search(r"""__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", text)
    return found.group(1) if found else "unknown"


def tool_identity() -> str:
    commit = git(ROOT, "rev-parse", "--short", "HEAD").strip()
    dirty = " with uncommitted changes" if git(ROOT, "status", "--porcelain", "--", "src", "rules").strip() else ""
    return f"rltrefactor {__version__}, commit {commit}{dirty} (code stamp {code_stamp()[:12]})"


def print_sample(results: dict[str, Any], size: int, seed: int) -> None:
    """``size`` findings of each engine drawn with ``seed``, each with ±15 lines of code."""
    for name, measured in results["engines"].items():
        ordered = sorted(measured["scan"]["findings"], key=lambda f: (f["path"], f["line"], f["rule"]))
        chosen = random.Random(seed).sample(ordered, min(size, len(ordered)))
        repo = os.path.join(ENGINES, name)
        for n, finding in enumerate(chosen, 1):
            print(f"\n=== {name} {n}/{len(chosen)}: {finding['path']}:{finding['line']} {finding['rule']} "
                  f"[{finding['severity']}; {finding['context'] or '-'}; {finding['basis'] or '-'}] "
                  f"{finding['evidence']}")
            lines = (_read(repo, finding["path"]) or "").split("\n")
            for number in range(max(1, finding["line"] - 15), min(len(lines), finding["line"] + 15) + 1):
                print(f"{'>' if number == finding['line'] else ' '}{number:6d} {lines[number - 1]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", help="engine source folders (default: download vllm and sglang)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each timed measure but the full scan")
    parser.add_argument("--sample", type=int, default=0, help="print this many findings of each engine")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--report-only", action="store_true", help="render the page from the saved results")
    parser.add_argument("--write", help="write the page to this file (bench/ENGINES.md)")
    parser.add_argument("--judgements", default=os.path.join(HERE, "engines_judgements.jsonl"))
    args = parser.parse_args()
    try:
        results = _saved() if args.report_only else _measured(args)
        if args.sample:
            print_sample(results, args.sample, args.seed)
        if args.write:
            page = engines_report.render(results, engines_report.read_judgements(args.judgements), args.write, ENGINES)
            Path(args.write).write_text(page, encoding="utf-8")
    except (BenchError, engines_report.JudgementError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def _saved() -> dict[str, Any]:
    if not os.path.exists(RESULTS):
        raise BenchError(f"{RESULTS}: no saved results; run bench/engines.py without --report-only first")
    loaded: dict[str, Any] = json.loads(Path(RESULTS).read_text(encoding="utf-8"))
    return loaded


def _measured(args: argparse.Namespace) -> dict[str, Any]:
    for source in args.dirs:
        if not os.path.isdir(source):
            raise BenchError(f"{source}: not a folder; pass an engine's source folder (such as /tmp/engines/vllm)")
    sources = [(os.path.basename(os.path.normpath(d)), d) for d in args.dirs] or [(n, None) for n in DEFAULT_NAMES]
    results = _saved() if os.path.exists(RESULTS) else {"engines": {}}
    for name, source in sources:
        repo = engine_repository(name, source)
        results["engines"][name] = measure_engine(name, repo, args.runs)
    results["meta"] = {"machine": machine(), "tool": tool_identity(), "runs": args.runs,
                       "command": "bench/engines.py " + " ".join(sys.argv[1:]),
                       "date": datetime.date.today().isoformat(), "load": os.getloadavg()[0]}
    Path(RESULTS).write_text(json.dumps(results), encoding="utf-8")
    return results


if __name__ == "__main__":
    raise SystemExit(main())
