"""Every finding of a fixed set of reviews, as JSON lines, and the rows two snapshots differ in.

Usage:
    .venv/bin/python bench/findings_snapshot.py write OUT.jsonl [--quick]
    .venv/bin/python bench/findings_snapshot.py compare BEFORE.jsonl AFTER.jsonl

``write`` reviews, with the default configuration, in-process and without a cache: every
entry of the evaluation corpus (``base..head``, with ``--scope lines`` and again with
``changed-functions``), the large-file PR of ``bench/corpora.py``, and a full scan of the
torch corpus (``--quick``: its 131-file subset). The sources reviewed are those of the
checkout this file sits in, or of ``BENCH_RLTREFACTOR_SRC``: point it at another
checkout's ``src`` to snapshot that one with the same inputs.

``compare`` prints the rows only one side holds, grouped by review, and the counts; it
exits 1 when any row differs. A row is everything a user sees of a finding: path, span,
rule, status, suppression, confirmation, impact with its evidence and notes, fingerprint
and the lines it also stands for; errors are rows too.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.environ.get("BENCH_RLTREFACTOR_SRC") or os.path.join(ROOT, "src"))  # rltrefactor: ignore[env-read-outside-config] the bench switch bench/README.md documents
sys.path.insert(0, HERE)

from rltrefactor.api import ReviewRequest, review  # noqa: E402

import corpora  # noqa: E402
from review_signal import DEFAULT_CORPUS, load, materialize  # noqa: E402

SIGNAL_WORK = os.path.join(HERE, "work", "signal")


def _rows(label: str, request: ReviewRequest) -> list[dict]:
    result = review(request)
    rows = []
    for finding in result.findings:
        rows.append({
            "review": label, "path": finding.path, "line": finding.span.line, "column": finding.span.column,
            "end": [finding.span.end_line, finding.span.end_column], "rule": finding.rule_id,
            "status": finding.status, "suppressed": finding.suppressed, "confirmed": finding.confirmed,
            "severity": finding.severity, "impact": finding.impact, "evidence": finding.evidence,
            "notes": list(finding.notes), "fingerprint": finding.fingerprint,
            "also_at": list(finding.also_at),
        })
    rows += [{"review": label, "error": error.path, "line": error.line, "message": error.message}
             for error in result.errors]
    return rows


def _reviews(quick: bool) -> list[tuple[str, ReviewRequest]]:
    entries = load(DEFAULT_CORPUS, "cases.jsonl") + load(DEFAULT_CORPUS, "noise.jsonl")
    materialize(DEFAULT_CORPUS, SIGNAL_WORK, [e["id"] for e in entries])
    reviews = []
    for entry in entries:
        repo = os.path.join(SIGNAL_WORK, entry["id"])
        for scope in ("lines", "changed-functions"):
            reviews.append((f"{entry['id']} {scope}", ReviewRequest(
                repo=repo, diff="base..head", scope=scope, use_cache=False, jobs=1)))
    large = corpora.large_file_pr()
    reviews.append((large.name, ReviewRequest(repo=large.repo, diff=large.span, use_cache=False, jobs=1)))
    torch = corpora.torch_corpus(quick)
    reviews.append((f"full scan {torch.name}", ReviewRequest(repo=torch.path, paths=(torch.path,), use_cache=False)))
    return reviews


def write(out: str, quick: bool) -> int:
    count = 0
    with open(out, "w", encoding="utf-8") as handle:
        for label, request in _reviews(quick):
            for row in _rows(label, request):
                handle.write(json.dumps(row, sort_keys=True) + "\n")
                count += 1
    print(f"{out}: {count} rows")
    return 0


def compare(before: str, after: str) -> int:
    def read(path: str) -> collections.Counter[str]:
        with open(path, encoding="utf-8") as handle:
            return collections.Counter(line.strip() for line in handle if line.strip())

    old, new = read(before), read(after)
    only_old, only_new = old - new, new - old
    by_review: dict[str, list[tuple[str, dict]]] = collections.defaultdict(list)
    for sign, rows in (("-", only_old), ("+", only_new)):
        for line in rows.elements():
            row = json.loads(line)
            by_review[row["review"]].append((sign, row))
    for label in sorted(by_review):
        print(f"## {label}")
        for sign, row in sorted(by_review[label], key=lambda item: (item[1].get("path", ""), item[1].get("line", 0), item[0])):
            rest = {k: v for k, v in row.items() if k != "review"}
            print(f"{sign} {json.dumps(rest, sort_keys=True)}")
    print(f"{sum(old.values())} rows before, {sum(new.values())} after; "
          f"{sum(only_old.values())} only before, {sum(only_new.values())} only after")
    return 1 if only_old or only_new else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    writing = commands.add_parser("write")
    writing.add_argument("out")
    writing.add_argument("--quick", action="store_true", help="the 131-file torch subset for the full scan")
    comparing = commands.add_parser("compare")
    comparing.add_argument("before")
    comparing.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "write":
        return write(args.out, args.quick)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
