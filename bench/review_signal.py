"""Review signal on real engine changes: recall on real fixes, noise on ordinary commits.

Usage:
    .venv/bin/python bench/review_signal.py [--corpus DIR] [--work DIR] [--label NAME] [--write bench/SIGNAL.md]

Reads the evaluation corpus (default ``../shared/corpus`` beside the checkout: 32 real
fixes reversed into defect-introducing changes, and 55 ordinary commits), materializes
one git repository per entry under ``--work`` with the corpus's own ``materialize.py``,
and reviews ``base..head`` of each with the **default** configuration (the repositories
carry no ``pyproject.toml``), in-process, without a cache.

A case is a hit when a new, unsuppressed finding of the case's area lies within ±2 lines
of its defect range or one of its extra ranges. Noise is every new, unsuppressed finding
on the ordinary commits, per 1000 added lines. ``--dump FILE`` writes every noise finding
(rule, path, line, snippet, fingerprint) as JSON lines for hand judgement; judgements
live in ``bench/signal_judgements.jsonl`` (one ``{"label", "id", "rule", "path", "line",
"verdict", "reason"}`` per line) and are summarised per label.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

from rltrefactor.api import ReviewRequest, review  # noqa: E402

DEFAULT_CORPUS = os.path.join(os.path.dirname(ROOT), "shared", "corpus")
JUDGEMENTS = os.path.join(HERE, "signal_judgements.jsonl")
WINDOW = 2  # lines either side of a defect range that still count as a hit


def load(corpus: str, name: str) -> list[dict]:
    with open(os.path.join(corpus, name), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def materialize(corpus: str, work: str, ids: list[str]) -> None:
    missing = [i for i in ids if not os.path.isdir(os.path.join(work, i, ".git"))]
    if missing:
        subprocess.run([sys.executable, os.path.join(corpus, "materialize.py"), work, *missing], check=True,
                       stdout=subprocess.DEVNULL)


def review_entry(work: str, entry_id: str) -> tuple[list, float]:
    started = time.perf_counter()
    result = review(ReviewRequest(repo=os.path.join(work, entry_id), diff="base..head", use_cache=False, jobs=1))
    findings = [f for f in result.findings if f.status == "new" and not f.suppressed]  # rltrefactor: ignore[string-state-comparison] a typed Literal, checked by the type checker
    return findings, time.perf_counter() - started


def is_hit(case: dict, finding) -> bool:
    if finding.path != case["path"] or finding.area != case["area"]:
        return False
    ranges = [case["defect_lines"], *case.get("extra_defect_ranges", [])]
    first, last = finding.span.line, finding.span.end_line
    return any(first <= b + WINDOW and last >= a - WINDOW for a, b in ranges)


def evaluate(corpus: str, work: str) -> dict:
    cases, noise = load(corpus, "cases.jsonl"), load(corpus, "noise.jsonl")
    materialize(corpus, work, [e["id"] for e in cases + noise])
    case_rows, noise_rows, seconds = [], [], []
    for case in cases:
        findings, spent = review_entry(work, case["id"])
        seconds.append(spent)
        hits = [f for f in findings if is_hit(case, f)]
        case_rows.append({"case": case, "hit": bool(hits), "rules": sorted({f.rule_id for f in hits}),
                          "findings": len(findings)})
    for entry in noise:
        findings, spent = review_entry(work, entry["id"])
        seconds.append(spent)
        noise_rows.append({"entry": entry, "findings": findings})
    return {"cases": case_rows, "noise": noise_rows, "seconds": seconds}


def recall_table(rows: list[dict]) -> list[str]:
    groups: dict[str, list[dict]] = collections.defaultdict(list)
    for row in rows:
        case = row["case"]
        groups[f"area {case['area']}"].append(row)
        groups[f"kind {case['kind']}"].append(row)
        groups[f"repo {case['repo']}"].append(row)
        if not case["defect_is_omission"]:
            groups[f"area {case['area']}, non-omission"].append(row)
    groups["all"] = rows
    groups["all, non-omission"] = [r for r in rows if not r["case"]["defect_is_omission"]]
    out = ["| group | hits | cases | recall |", "|---|---:|---:|---:|"]
    for name in sorted(groups, key=lambda n: (not n.startswith("all"), n)):
        group = groups[name]
        hits = sum(r["hit"] for r in group)
        out.append(f"| {name} | {hits} | {len(group)} | {100 * hits / len(group):.0f} % |")
    return out


def noise_by_repository(rows: list[dict]) -> list[str]:
    per_repo: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for row in rows:
        counts = per_repo[row["entry"]["repo"]]
        counts[0] += row["entry"]["added_lines"]
        counts[1] += len(row["findings"])
    out = ["| repository | added lines | noise findings | per 1000 added lines |", "|---|---:|---:|---:|"]
    for repo, (added, found) in sorted(per_repo.items()):
        out.append(f"| {repo} | {added} | {found} | {1000 * found / added:.2f} |")
    return out


def leave_one_repo_out(data: dict) -> list[str]:
    """Per rule: where it hits and where it is noisy, and what remains without its best repository.

    The repository a rule was written from is not recorded, so the table assumes the worst:
    the repository where the rule hits most is the one it was fitted to, and the rule is
    judged on every other repository.
    """
    hits: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    noise: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for row in data["cases"]:
        for rule in row["rules"]:
            hits[rule][row["case"]["repo"]] += 1
    for row in data["noise"]:
        for finding in row["findings"]:
            noise[finding.rule_id][row["entry"]["repo"]] += 1
    out = ["| rule | hits | repositories hit | noise | repository left out | hits elsewhere | noise elsewhere |",
           "|---|---:|---:|---:|---|---:|---:|"]
    for rule in sorted(set(hits) | set(noise), key=lambda r: (-sum(hits[r].values()), r)):
        left_out = min(hits[rule], key=lambda repo: (-hits[rule][repo], repo)) if hits[rule] else "—"
        out.append(f"| {rule} | {sum(hits[rule].values())} | {len(hits[rule])} | {sum(noise[rule].values())} | "
                   f"{left_out.split('/')[-1]} | {sum(hits[rule].values()) - hits[rule][left_out]} | "
                   f"{sum(noise[rule].values()) - noise[rule][left_out]} |")
    return out


def judgement_summary(label: str) -> list[str]:
    if not os.path.exists(JUDGEMENTS):
        return []
    with open(JUDGEMENTS, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    rows = [r for r in rows if r["label"] == label]
    if not rows:
        return []
    verdicts = collections.Counter(r["verdict"] for r in rows)
    total = len(rows)
    return [f"Hand-judged noise findings ({label}): {total} — "
            + ", ".join(f"{v} {verdicts[v]} ({100 * verdicts[v] / total:.0f} %)" for v in ("true", "debatable", "false"))]


def render(label: str, data: dict, corpus: str) -> str:
    added = sum(r["entry"]["added_lines"] for r in data["noise"])
    noise = [f for r in data["noise"] for f in r["findings"]]
    per_rule = collections.Counter(f.rule_id for f in noise)
    seconds = sorted(data["seconds"])
    lines = [f"## {label}", "", *recall_table(data["cases"]), "",
             f"Noise: {len(noise)} findings on {len(data['noise'])} ordinary commits, {added} added lines: "
             f"**{1000 * len(noise) / added:.2f} per 1000 added lines**.", "",
             "| rule | noise findings | per 1000 added lines |", "|---|---:|---:|"]
    for rule, count in per_rule.most_common():
        lines.append(f"| {rule} | {count} | {1000 * count / added:.2f} |")
    lines += ["", "Noise per repository:", "", *noise_by_repository(data["noise"]), "",
              "Leave one repository out: each rule's hits and noise without the repository where it hits most "
              "(the worst case for a rule fitted to one engine).", "", *leave_one_repo_out(data), "",
              *judgement_summary(label), "",
              f"Review time per entry: median {seconds[len(seconds) // 2]:.2f} s, max {seconds[-1]:.2f} s.", "",
              "| case | kind | area | hit | rules | findings in change |", "|---|---|---|---|---|---:|"]
    for row in data["cases"]:
        case = row["case"]
        kind = case["kind"] + (" (omission)" if case["defect_is_omission"] else "")
        lines.append(f"| {case['id']} | {kind} | {case['area']} | {'yes' if row['hit'] else 'no'} | "
                     f"{', '.join(row['rules'])} | {row['findings']} |")
    return "\n".join(lines) + "\n"


def dump(path: str, label: str, data: dict, work: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in data["noise"]:
            for f in row["findings"]:
                handle.write(json.dumps({"label": label, "id": row["entry"]["id"], "rule": f.rule_id, "path": f.path,
                                         "line": f.span.line, "definition": f.definition, "snippet": f.snippet.strip(),
                                         "fingerprint": f.fingerprint}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=DEFAULT_CORPUS)
    parser.add_argument("--work", default=os.path.join(HERE, "work", "signal"))
    parser.add_argument("--label", default="current")
    parser.add_argument("--write", help="append the section to this Markdown file (replacing a section of the same label)")
    parser.add_argument("--dump", help="write every noise finding as JSON lines, for judgement")
    parser.add_argument("--misses", action="store_true", help="print the cases missed")
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.corpus, "cases.jsonl")):
        print(f"signal: no corpus at {args.corpus}; pass --corpus DIR", file=sys.stderr)
        return 2
    data = evaluate(args.corpus, args.work)
    section = render(args.label, data, args.corpus)
    print(section)
    if args.misses:
        for row in data["cases"]:
            if not row["hit"]:
                print("missed", row["case"]["id"], row["case"]["path"], row["case"]["defect_lines"])
    if args.dump:
        dump(args.dump, args.label, data, args.work)
    if args.write:
        write_section(args.write, args.label, section)
    return 0


def write_section(path: str, label: str, section: str) -> None:
    text = Path(path).read_text(encoding="utf-8") if os.path.exists(path) else ""
    parts = text.split("\n## ")
    kept = [p for p in parts[1:] if not p.startswith(label + "\n")]
    head = parts[0] if parts and not parts[0].startswith("## ") else ""
    body = head.rstrip("\n") + "\n\n" + "".join("## " + p.rstrip("\n") + "\n\n" for p in kept) + section
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(body.lstrip("\n"))


if __name__ == "__main__":
    sys.exit(main())
