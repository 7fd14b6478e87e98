"""Full scans of whole engines with the default configuration, compared with an earlier
library's scans of the same sources, and random samples of their findings to judge.

Usage:
    .venv/bin/python bench/engine_scans.py vllm sglang deepspeed --label 1.11.0 \
        --against 1.10.0=bench/work/value_types/{name}-types.json --sample 30 --seed 11 > sample.jsonl
    .venv/bin/python bench/engine_scans.py vllm sglang deepspeed --label 1.11.0 \
        --against 1.10.0=bench/work/value_types/{name}-types.json --write bench/WHOLE_ENGINES.md

A scan is read from ``bench/work/engine_scans/NAME-LABEL.json``: the JSON report of
``rltrefactor review NAME --no-cache --format json --jobs 2`` run in the engine's git
repository (``bench/value_types.py`` says how those are built), with its wall seconds in
``walls.txt``. Findings are compared by (path, line, rule). Judgements are read from
``bench/engine_scans_judgements.jsonl`` (one per sampled finding, with a reason) and from
the earlier judged samples (``engines_judgements.jsonl``, ``value_types_judgements.jsonl``),
so the page says which judged findings each scan keeps.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "work", "engine_scans")
SAMPLES = os.path.join(HERE, "engine_scans_judgements.jsonl")
EARLIER = (os.path.join(HERE, "engines_judgements.jsonl"), os.path.join(HERE, "value_types_judgements.jsonl"))
Key = tuple[str, int, str]
MARKER = "<!-- written by hand below -->"


def findings(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    report = data.get("report", data)  # bench/value_types.py keeps the report under "report"
    return report["findings"]


def judgements(paths: tuple[str, ...], label: str | None = None) -> dict[tuple[str, Key], str]:
    found: dict[tuple[str, Key], str] = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if label is None or row.get("label") == label:
                    found[(row["engine"], (row["path"], row["line"], row["rule"]))] = row["verdict"]
    return found


def key(finding: dict[str, Any]) -> Key:
    return (finding["path"], finding["line"], finding["rule"])


def held_back(path: str) -> int:
    """Findings the full scan held back because how often their code runs is unknown."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return int(data.get("report", data)["summary"].get("unknown_frequency", 0))


def walls() -> dict[str, float]:
    path = os.path.join(WORK, "walls.txt")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        return {name: float(seconds) for name, seconds in (line.split() for line in handle if line.strip())}


def sample(name: str, scan: list[dict[str, Any]], size: int, seed: int) -> list[dict[str, Any]]:
    chosen = random.Random(f"{name}-{seed}").sample(scan, min(size, len(scan)))
    return [{"engine": name, "path": f["path"], "line": f["line"], "rule": f["rule"], "severity": f["severity"],
             "impact": f["impact"], "notes": f.get("notes", []), "execution": f.get("execution")} for f in chosen]


def page(names: list[str], label: str, against: tuple[str, str], seed: int) -> list[str]:
    old_label, pattern = against
    judged = judgements(EARLIER + (SAMPLES,))
    fresh = judgements((SAMPLES,), label=f"{label} seed {seed}")
    took = walls()
    lines = [
        f"# Full scans of whole engines: library {label} against {old_label}", "",
        f"`.venv/bin/python bench/engine_scans.py {' '.join(names)} --label {label} --against {old_label}={pattern}"
        f" --write bench/WHOLE_ENGINES.md`: each engine scanned with the default configuration (type engine"
        f" and call index on), `--jobs 2`, no cache, on the shared 2-core machine.", "",
        f"| engine | findings {old_label} | findings {label} | held back, frequency unknown | gone | new | errors"
        " | wall s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    kept_rows, sample_rows = [], []
    for name in names:
        scan = os.path.join(WORK, f"{name}-{label}.json")
        new = findings(scan)
        old = findings(pattern.format(name=name))
        new_keys, old_keys = set(map(key, new)), set(map(key, old))
        errors = sum(1 for f in new if f["severity"] == "error")
        lines.append(f"| {name} | {len(old)} | {len(new)} | {held_back(scan)} | {len(old_keys - new_keys)}"
                     f" | {len(new_keys - old_keys)}"
                     f" | {errors} | {took.get(name, float('nan')):.0f} |")
        verdicts = collections.Counter()
        for k in old_keys:
            verdict = judged.get((name, k))
            if verdict is not None:
                verdicts[("kept" if k in new_keys else "gone", verdict)] += 1
        kept_rows.append(f"| {name} | " + " | ".join(
            " / ".join(str(verdicts[(side, v)]) for v in ("true", "debatable", "false")) for side in ("kept", "gone")) + " |")
        drawn = collections.Counter(fresh[(name, key(f))] for f in new if (name, key(f)) in fresh)
        if drawn:
            total = sum(drawn.values())
            sample_rows.append(f"| {name} | {total} | " + " | ".join(
                f"{drawn[v]} ({100 * drawn[v] // total} %)" for v in ("true", "debatable", "false")) + " |")
    lines += ["", f"Judged findings of the {old_label} scans (every earlier judged sample), kept or gone in {label}:", "",
              "| engine | kept: true / debatable / false | gone: true / debatable / false |", "| --- | --- | --- |",
              *kept_rows]
    if sample_rows:
        lines += ["", f"Fresh random samples of the {label} scans (`--sample 30 --seed {seed}`), judged by hand with the"
                  f" code read around each line (`bench/engine_scans_judgements.jsonl`, a reason each):", "",
                  "| engine | judged | true | debatable | false |", "| --- | ---: | ---: | ---: | ---: |", *sample_rows]
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="+", help="engine names: bench/work/engine_scans/NAME-LABEL.json")
    parser.add_argument("--label", required=True)
    parser.add_argument("--against", required=True, help="LABEL=PATTERN, {name} standing for the engine")
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--write", help="write the page here, keeping what follows the marker")
    args = parser.parse_args()
    old_label, _, pattern = args.against.partition("=")
    if args.sample:
        for name in args.names:
            for row in sample(name, findings(os.path.join(WORK, f"{name}-{args.label}.json")), args.sample, args.seed):
                print(json.dumps(row))
        return
    lines = page(args.names, args.label, (old_label, pattern), args.seed)
    if not args.write:
        sys.stdout.write("\n".join(lines))
        return
    kept = ""
    if os.path.exists(args.write):
        with open(args.write, encoding="utf-8") as handle:
            text = handle.read()
        kept = text[text.index(MARKER):] if MARKER in text else ""
    with open(args.write, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n" + (kept or MARKER + "\n"))


if __name__ == "__main__":
    main()
