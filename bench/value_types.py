"""What the type engine changes in full scans of whole engines: findings gone, findings kept,
and how the judged ones fare.

Usage:
    .venv/bin/python bench/value_types.py DIR [DIR ...] [--write bench/VALUE_TYPES.md]
    .venv/bin/python bench/value_types.py DIR ... --sample 30 --seed 7   # print a sample to judge

Each DIR is an engine's Python sources in a git repository of one commit (``bench/engines.py``
builds them under ``bench/work/engines/``); its name is the folder's. Each is scanned twice
with the command line, as a user runs it (``rltrefactor review PKG --no-cache --format json
--jobs 1``, PKG the package folder inside DIR), once with ``type-engine = false`` and once
with the default; the outputs are kept in ``bench/work/value_types/`` and reused unless
``--rescan``. The page compares the two scans by (path, line, rule), and reads the judged
findings of ``bench/engines_judgements.jsonl`` (earlier random samples of the same engines)
and ``bench/value_types_judgements.jsonl`` (samples of the scan with the engine) to say which
judged findings each scan keeps.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORK = os.path.join(HERE, "work", "value_types")
TOOL = os.path.join(ROOT, ".venv", "bin", "rltrefactor")
JUDGED = (os.path.join(HERE, "engines_judgements.jsonl"), os.path.join(HERE, "value_types_judgements.jsonl"))
Key = tuple[str, int, str]
MARKER = "<!-- written by hand below -->"


def scan(engine_dir: str, with_types: bool, rescan: bool) -> dict[str, Any]:
    """The scan's JSON report and its wall time, run once and kept."""
    name = os.path.basename(os.path.normpath(engine_dir))
    out = os.path.join(WORK, f"{name}-{'types' if with_types else 'plain'}.json")
    if os.path.exists(out) and not rescan:
        with open(out, encoding="utf-8") as handle:
            return json.load(handle)
    os.makedirs(WORK, exist_ok=True)
    config = os.path.join(WORK, f"{name}-{'types' if with_types else 'plain'}.toml")
    with open(config, "w", encoding="utf-8") as handle:
        handle.write(f"type-engine = {'true' if with_types else 'false'}\n")
    started = time.perf_counter()
    proc = subprocess.run(
        [TOOL, "review", name, "--no-cache", "--format", "json", "--jobs", "1", "--config", config],
        cwd=engine_dir, capture_output=True, text=True, check=False,
    )
    if proc.returncode not in (0, 1):
        sys.exit(f"bench/value_types.py: scan of {engine_dir} failed: {proc.stderr.strip()}")
    report = {"wall_s": time.perf_counter() - started, "stderr": proc.stderr.strip(), "report": json.loads(proc.stdout)}
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    return report


def keys(report: dict[str, Any]) -> dict[Key, dict[str, Any]]:
    found: dict[Key, dict[str, Any]] = {}
    for finding in report["report"]["findings"]:
        for line in (finding["line"], *finding.get("also_at", ())):
            found[(finding["path"], line, finding["rule"])] = finding
    return found


def judged(engine: str) -> dict[Key, dict[str, Any]]:
    rows: dict[Key, dict[str, Any]] = {}
    for path in JUDGED:
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if row.get("engine") == engine:
                    rows[(row["path"], row["line"], row["rule"])] = row
    return rows


def compare(engine_dir: str, rescan: bool) -> dict[str, Any]:
    name = os.path.basename(os.path.normpath(engine_dir))
    plain, typed = scan(engine_dir, False, rescan), scan(engine_dir, True, rescan)
    before, after = keys(plain), keys(typed)
    verdicts: dict[str, collections.Counter[str]] = {"kept": collections.Counter(), "gone": collections.Counter()}
    for key, row in judged(name).items():
        if key in before or key in after:
            verdicts["kept" if key in after else "gone"][row["verdict"]] += 1
    severity = collections.Counter(f["severity"] for f in typed["report"]["findings"])
    return {
        "engine": name, "plain_s": plain["wall_s"], "typed_s": typed["wall_s"],
        "plain": len(plain["report"]["findings"]), "typed": len(typed["report"]["findings"]),
        "gone": sorted(set(before) - set(after)), "new": sorted(set(after) - set(before)),
        "verdicts": verdicts, "errors": severity.get("error", 0),
        "warnings": [line for line in typed["stderr"].splitlines() if line.startswith("type engine")],
    }


def render(results: list[dict[str, Any]]) -> str:
    lines = [
        "# What the type engine changes in full scans",
        "",
        "`.venv/bin/python bench/value_types.py " + " ".join(r["engine"] for r in results) + "`: each engine scanned",
        "with `type-engine = false` and with the default, one job, no cache, on the shared 2-core machine.",
        "Findings are compared by (path, line, rule), the lines a finding also stands for included.",
        "",
        "| engine | findings without | findings with | gone | new | errors with | wall s without | wall s with |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(f"| {r['engine']} | {r['plain']} | {r['typed']} | {len(r['gone'])} | {len(r['new'])} | {r['errors']} "
                     f"| {r['plain_s']:.0f} | {r['typed_s']:.0f} |")
    lines += ["", "Judged findings of these engines (the earlier samples of bench/engines_judgements.jsonl and the samples below),", "kept or gone with the engine:", "",
              "| engine | kept: true / debatable / false | gone: true / debatable / false |", "| --- | --- | --- |"]
    for r in results:
        cell = {k: " / ".join(str(r["verdicts"][k].get(v, 0)) for v in ("true", "debatable", "false")) for k in ("kept", "gone")}
        lines.append(f"| {r['engine']} | {cell['kept']} | {cell['gone']} |")
    lines += ["", "Random samples of 30 findings of each scan with the engine (`--sample 30 --seed 7`), judged by hand",
              "with the code read around each line (`bench/value_types_judgements.jsonl`, one reason each):", "",
              "| engine | true | debatable | false |", "| --- | ---: | ---: | ---: |"]
    for r in results:
        sample = collections.Counter(row["verdict"] for row in _sampled(r["engine"]))
        if sample:
            lines.append(f"| {r['engine']} | {sample['true']} | {sample['debatable']} | {sample['false']} |")
    for r in results:
        if r["warnings"]:
            lines += ["", f"{r['engine']}: " + "; ".join(r["warnings"])]
    return "\n".join(lines) + "\n"


def _sampled(engine: str) -> list[dict[str, Any]]:
    """The judged rows of this engine's samples of the scan with the engine."""
    if not os.path.exists(JUDGED[1]):
        return []
    with open(JUDGED[1], encoding="utf-8") as handle:
        return [row for row in map(json.loads, handle) if row.get("engine") == engine]


def print_sample(engine_dir: str, size: int, seed: int) -> None:
    """``size`` findings of the scan with the engine, drawn at random, with their code."""
    typed = scan(engine_dir, True, False)
    findings = typed["report"]["findings"]
    for finding in random.Random(seed).sample(findings, min(size, len(findings))):
        path = os.path.join(engine_dir, finding["path"])
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read().splitlines()
        line = finding["line"]
        print(f"== {finding['path']}:{line} {finding['rule']} {finding['severity']}")
        print("\n".join(f"{n:5} {text[n - 1]}" for n in range(max(1, line - 6), min(len(text), line + 3) + 1)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", help="engine repositories (a git repository of the engine's sources each)")
    parser.add_argument("--write", help="write the page here (bench/VALUE_TYPES.md)")
    parser.add_argument("--rescan", action="store_true", help="scan again instead of reading the kept scans")
    parser.add_argument("--sample", type=int, default=0, help="print this many findings of each scan with the engine")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.sample:
        for engine_dir in args.dirs:
            print_sample(engine_dir, args.sample, args.seed)
        return 0
    page = render([compare(engine_dir, args.rescan) for engine_dir in args.dirs])
    if args.write:
        kept = ""
        if os.path.exists(args.write):  # what follows the marker is written by hand: kept
            with open(args.write, encoding="utf-8") as handle:
                _, marker, rest = handle.read().partition(MARKER)
            kept = marker + rest
        with open(args.write, "w", encoding="utf-8") as handle:
            handle.write(page + ("\n" + kept if kept else ""))
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
