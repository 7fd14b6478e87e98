"""Precision of findings by the evidence they rest on: where the code runs (configuration,
protocol, call chain, structure, name, unknown) and where the value lives (device, unknown).

Usage:
    .venv/bin/python bench/evidence_precision.py [--label 1.8.0]

Reviews every ordinary commit of the evaluation corpus with the default configuration
(as ``bench/review_signal.py`` does) and joins each noise finding with its hand judgement
in ``bench/signal_judgements.jsonl`` (the rows of ``--label``). Prints one table per
grouping: true / debatable / false and the share true. A finding without a judgement is
counted as unjudged, never guessed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from review_signal import DEFAULT_CORPUS, load, materialize, review_entry  # noqa: E402

SIGNAL_WORK = os.path.join(HERE, "work", "signal")


def _basis(finding) -> str:
    if finding.execution != "per-step":
        return finding.execution or "none"
    evidence = finding.execution_evidence
    if "configuration" in evidence or "hot-paths" in evidence:
        return "per-step by configuration"
    if "protocol model" in evidence:
        return "per-step by protocol"
    if evidence.startswith("per step:") or "only called from" in evidence:
        return "per-step by call chain"
    if "compiled kernel" in evidence:
        return "per-step by structure"
    return "per-step by name"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="1.8.0")
    args = parser.parse_args()
    with open(os.path.join(HERE, "signal_judgements.jsonl"), encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    verdicts = {(r["id"], r["path"], r["line"], r["rule"]): r["verdict"] for r in rows if r["label"] == args.label}
    entries = load(DEFAULT_CORPUS, "noise.jsonl")
    materialize(DEFAULT_CORPUS, SIGNAL_WORK, [e["id"] for e in entries])
    tables: dict[str, collections.Counter[tuple[str, str]]] = collections.defaultdict(collections.Counter)
    for entry in entries:
        findings, _ = review_entry(SIGNAL_WORK, entry["id"])
        for finding in findings:
            verdict = verdicts.get((entry["id"], finding.path, finding.span.line, finding.rule_id), "unjudged")
            residency = "value of unknown residency" if "lives is not visible" in finding.impact else "residency shown or not asked"
            for grouping, key in (("where the code runs", _basis(finding)), ("where the value lives", residency),
                                  ("severity", finding.severity), ("confidence", finding.confidence or "none")):
                tables[grouping][(key, verdict)] += 1
    for grouping, counts in tables.items():
        print(f"\n| {grouping} | true | debatable | false | unjudged | share true |")
        print("|---|---:|---:|---:|---:|---:|")
        for key in sorted({k for k, _ in counts}):
            t, d, f, u = (counts[(key, v)] for v in ("true", "debatable", "false", "unjudged"))
            judged = t + d + f
            print(f"| {key} | {t} | {d} | {f} | {u} | {f'{100 * t // judged} %' if judged else '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
