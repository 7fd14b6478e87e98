"""Benchmark rltrefactor side by side with its anchors on the same files, in one run.

    .venv/bin/python bench/run.py            # full: torch corpus, median of 5 runs
    .venv/bin/python bench/run.py --quick    # 1 run, a 131-file corpus

Builds the corpora (bench/corpora.py) and the anchors venv (bench/tools.py) under
bench/work, measures every command as a whole process (bench/measure.py), prints the
tables and writes bench/RESULTS.md. What is measured and why: bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpora  # noqa: E402
import report  # noqa: E402
import rltcli  # noqa: E402
import tools  # noqa: E402
from history import RegistryUnavailable  # noqa: E402
from measure import TIME_BIN, Measurement, cpu_prefix, measure  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORES = 2
# A tool whose first run takes longer than SLOW_S gets at most 3 runs (median of 3);
# longer than VERY_SLOW_S, that one run (its run-to-run spread is small next to its size).
SLOW_S, VERY_SLOW_S = 60.0, 180.0
LARGE_PR = "PR 2 large files"  # also measured with Semgrep's diff mode


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def probe(tool: tools.Tool, cwd: str) -> str:
    """One unmeasured run whose output says what the tool saw (files, findings, errors)."""
    done = subprocess.run([*cpu_prefix(CORES), *tool.argv], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **tool.env}, timeout=3600)
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        return f"exit {done.returncode}" + (f"; stderr: {done.stderr.strip()[-160:]}" if done.returncode > 1 else "")
    if "reviewed" in doc:
        errors = doc.get("errors", [])
        first = f" (first: {errors[0]['message'][:100]})" if errors else ""
        return f"{len(doc['reviewed']['files'])} files reviewed, {len(doc['findings'])} findings, {len(errors)} file errors{first}"
    if "paths" in doc:
        return f"{len(doc['paths'].get('scanned', []))} files scanned, {len(doc['results'])} results, {len(doc['errors'])} errors"
    return f"exit {done.returncode}"


def run_tool(tool: tools.Tool, cwd: str, runs: int, info: dict[str, str]) -> Measurement:
    log(f"  {tool.name} ...")
    # Warm variants need the run anyway; cold ones would pay a second cold run for it.
    if tool.prime or "--json" in tool.argv or "--diff" in tool.argv:
        if tool.prepare:
            tool.prepare()
        info[tool.name] = "; ".join(x for x in (tool.note, probe(tool, cwd)) if x)
    else:
        info[tool.name] = tool.note
    argv = (*cpu_prefix(CORES), *tool.argv)
    first = measure(tool.name, argv, runs=1, cwd=cwd, env=tool.env or None, before_each=tool.prepare)
    rest_runs = 0 if first.wall_s > VERY_SLOW_S else min(runs, 3) - 1 if first.wall_s > SLOW_S else runs - 1
    if rest_runs <= 0:
        return first
    rest = measure(tool.name, argv, runs=rest_runs, cwd=cwd, env=tool.env or None, before_each=tool.prepare)
    return Measurement(tool.name, tool.argv, first.samples + rest.samples, rest.stderr_tail)


def full_scans(corpus: corpora.Corpus, runs: int, info: dict[str, str], *, with_anchors: bool) -> list[Measurement]:
    log(f"full scan: {corpus.name} ({corpus.files} files)")
    chosen = (tools.anchors() if with_anchors else []) + tools.rltrefactor_variants(corpus.name)
    return [run_tool(t, corpus.path, runs, info) for t in chosen]


def pr_reviews(ranges: list[corpora.PrRange], runs: int, info: dict[str, str]) -> list[Measurement]:
    results = []
    for r in ranges:
        cache = os.path.join(corpora.WORK, "cache", "pr-" + r.name.replace(" ", "-").replace(",", ""))
        tool = tools.Tool(r.name, (*rltcli.command(), "review", "--diff", r.span, "--format", "json"),
                          rltcli.env(RLTREFACTOR_CACHE_DIR=cache), tools._fresh_dir(cache),
                          note=f"{r.source}: {r.files} Python files touched; fresh cache dir each run")
        results.append(run_tool(tool, r.repo, runs, info))
        anchor = tools.semgrep_diff(r.span.split("..")[0], f"{r.name}: Semgrep diff mode") if r.name == LARGE_PR else None
        if anchor is not None:
            results.append(run_tool(anchor, r.repo, runs, info))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 run, the small torch corpus")
    parser.add_argument("--runs", type=int, help="runs per command (default 5, --quick 1)")
    parser.add_argument("--output", help="the page to write (default RESULTS.md, --quick RESULTS-quick.md)")
    args = parser.parse_args(argv)
    # A quick run never overwrites the full run's page unless told to.
    args.output = args.output or os.path.join(HERE, "RESULTS-quick.md" if args.quick else "RESULTS.md")
    runs = args.runs or (1 if args.quick else 5)
    started = time.time()
    notes = tools.install_anchors(log)
    # Every tool runs as installed: bytecode written once and reused. An environment that
    # forbids writing it makes each Python tool recompile its own sources on every run.
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        notes.append("PYTHONDONTWRITEBYTECODE was set in this environment and is unset for every tool measured, "
                     "so that Python tools reuse their compiled bytecode as an installed tool does.")
    if rltcli.prepare_rule_index():
        notes.append("rltrefactor's compiled rule index (written beside its bytecode by the first review of an "
                     "installed version) was built once before measuring; cold means an empty result cache.")
    torch_full = corpora.torch_corpus(quick=False)
    corpus = corpora.torch_corpus(quick=True) if args.quick else torch_full
    demo = corpora.demo_corpus()
    if demo is None:
        notes.append("examples/demo_engine is absent: demo corpus skipped")
    try:
        ranges, sizes = corpora.pr_ranges(), corpora.size_pair(torch_full)
    except RegistryUnavailable as exc:
        ranges, sizes = [], []
        notes.append(f"PR ranges skipped: {exc}")
    one_line = corpora.one_line_change()
    ranges += [corpora.large_file_pr(), *([one_line] if one_line else [])]
    # One notes table per section: the same tool names recur in every section.
    info: dict[str, dict[str, str]] = {"full": {}, "demo": {}, "pr": {}}
    full = full_scans(corpus, runs, info["full"], with_anchors=True)
    demo_rows = full_scans(demo, runs, info["demo"], with_anchors=True) if demo else []
    log("PR-sized reviews")
    pr_rows = pr_reviews(ranges + sizes, runs, info["pr"])
    text = render(args, runs, corpus, demo, full, demo_rows, pr_rows, info, notes, [s.name for s in sizes])
    with open(args.output, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(text)
    log(f"wrote {os.path.relpath(args.output)} in {time.time() - started:.0f} s")
    return 0


def render(args, runs, corpus, demo, full, demo_rows, pr_rows, info, notes, size_names) -> str:
    by_name = {m.name: m for m in full}
    # The reference is the tool as users run it: one process per core (its default).
    cold = next((m.name for m in full if m.name == f"rltrefactor cold, --jobs {CORES}"), "") or next(
        (m.name for m in full if m.name.startswith("rltrefactor cold")), ""
    )
    warm = cold.replace("cold", "warm")
    reference = by_name.get(cold)
    pr = {m.name: m for m in pr_rows}
    targets = report.check_targets(by_name, pr, cold, warm, size_names, LARGE_PR)
    lines = [
        "# rltrefactor benchmark results",
        "",
        f"Generated by `.venv/bin/python bench/run.py{' --quick' if args.quick else ''}`"
        f"{f' --runs {args.runs}' if args.runs else ''}: median of {runs} run(s) per command"
        f"{'' if runs > 1 else ' (a quick run: indicative only)'}; pinned to {CORES} cores where the machine has more.",
        "",
        "## Machine and versions",
        "",
        *[f"- {k}: {v}" for k, v in report.machine().items()],
        f"- memory measured with: {'`/usr/bin/time -v` (max RSS)' if TIME_BIN else 'RUSAGE_CHILDREN (max RSS)'} and a 20 ms /proc sampler (tree RSS)",
        *[f"- {k}: {v}" for k, v in tools.versions().items()],
        "",
        f"## Full scan: {corpus.source}, {corpus.files} files",
        "",
        *report.table(full, reference, info["full"]),
        "",
    ]
    if demo:
        lines += [f"## Full scan: {demo.source}, {demo.files} files", "",
                  *report.table(demo_rows, next((m for m in demo_rows if m.name == cold), None), info["demo"]), ""]
    lines += ["## PR-sized reviews (`rltrefactor review --diff A..B`, whole process)", "",
              *report.table(pr_rows, None, info["pr"]), ""]
    lines += [f"## Targets (full-scan reference: `{cold}`)", "", *report.targets_lines(targets), ""]
    lines += ["## Exact commands", "", "Run in the corpus repository (full scans) or the range's repository (PR rows).", ""]
    lines += [f"- {m.name}: `{report.shown(m.command)}`" for m in full + pr_rows]
    lines += ["", "## Notes", "", *[f"- {n}" for n in notes + _standing_notes()], ""]
    return "\n".join(lines)


def _standing_notes() -> list[str]:
    other = os.environ.get("BENCH_RLTREFACTOR_SRC")  # rltrefactor: ignore[env-read-outside-config] the same harness switch, read where it is reported
    return [f"rltrefactor measured from the sources in {other} (BENCH_RLTREFACTOR_SRC), not this checkout's src/."] * bool(other) + [
        "max RSS is the largest single process of the tree; tree RSS is the sampled sum over all processes "
        "(parent, workers, helper binaries such as semgrep-core) and is the one the memory target uses.",
        "Semgrep runs 4 syntactic rules; rltrefactor runs its whole library; Fixit and TorchFix their default rules; "
        "ruff every rule (`--select ALL`). Wall times therefore compare tools as users run them, not equal work.",
        f"A tool whose first run exceeds {SLOW_S:.0f} s is run at most 3 times (median of 3); "
        f"over {VERY_SLOW_S:.0f} s, once. The runs column says how many runs each median has.",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
