"""Findings per rule on real engine histories: version-to-version ranges and full scans.

Usage: evaluate.py OUT_DIR [corpus ...]. Writes ``OUT_DIR/<corpus>.json`` (every finding
with its range) and prints one table per corpus: findings per rule, per range and per
1,000 changed (added) Python lines. Findings are sampled for triage from these files.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from corpora import CORPORA, repo_for  # noqa: E402

CLI = os.path.join(os.path.dirname(os.path.dirname(HERE)), ".venv", "bin", "rltrefactor")


def review(repo: str, *args: str) -> dict:
    done = subprocess.run([CLI, "review", *args, "--format", "json", "--no-cache"], cwd=repo, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{repo}: review {' '.join(args)}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def added_python_lines(repo: str, base: str, head: str) -> int:
    out = subprocess.run(["git", "-C", repo, "diff", "--numstat", base, head, "--", "*.py"], capture_output=True, text=True).stdout
    return sum(int(line.split("\t")[0]) for line in out.splitlines() if line.split("\t")[0].isdigit())


def evaluate(name: str) -> dict:
    repo = repo_for(name)
    tags = [f"v{v}" for v in CORPORA[name]]
    ranges = []
    for base, head in zip(tags, tags[1:]):
        result = review(repo, "--diff", f"{base}..{head}")
        ranges.append({"range": f"{base}..{head}", "added_lines": added_python_lines(repo, base, head),
                       "findings": [f for f in result["findings"] if f["status"] == "new"]})
    subprocess.run(["git", "-C", repo, "checkout", "-q", tags[-1]], check=True)
    full = review(repo, ".")
    return {"corpus": name, "ranges": ranges, "full": {"head": tags[-1], "findings": full["findings"]}}


def table(data: dict) -> str:
    added = sum(r["added_lines"] for r in data["ranges"])
    per_rule = collections.Counter(f["rule"] for r in data["ranges"] for f in r["findings"])
    full = collections.Counter(f["rule"] for f in data["full"]["findings"])
    lines = [f"## {data['corpus']} ({len(data['ranges'])} ranges, {added} added lines; full scan of {data['full']['head']})",
             "", "| rule | in ranges | per 1k added lines | full scan |", "|---|---:|---:|---:|"]
    for rule in sorted(set(per_rule) | set(full), key=lambda r: -(per_rule[r] + full[r])):
        rate = 1000 * per_rule[rule] / added if added else 0.0
        lines.append(f"| {rule} | {per_rule[rule]} | {rate:.2f} | {full[rule]} |")
    return "\n".join(lines)


def main(out_dir: str, names: list[str]) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for name in names or list(CORPORA):
        if not os.path.isdir(repo_for(name)):
            print(f"{name}: no repository; run corpora.py {name} first")
            continue
        data = evaluate(name)
        with open(os.path.join(out_dir, f"{name}.json"), "w") as handle:
            json.dump(data, handle, indent=1)
        print(table(data), "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
