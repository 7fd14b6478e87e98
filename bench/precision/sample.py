"""Print a sample of findings per rule, with the flagged line, for triage by reading.

Usage: sample.py RESULTS.json [RULE] [N]
"""

from __future__ import annotations

import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from corpora import repo_for  # noqa: E402


def main(path: str, rule: str | None, count: int) -> None:
    data = json.load(open(path))
    repo = repo_for(data["corpus"])
    findings = [f for r in data["ranges"] for f in r["findings"]] + data["full"]["findings"]
    seen, unique = set(), []
    for finding in findings:
        key = (finding["path"], finding["line"], finding["rule"])
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    rules = sorted({f["rule"] for f in unique}) if rule in (None, "all") else [rule]
    rng = random.Random(0)
    for name in rules:
        chosen = [f for f in unique if f["rule"] == name]
        rng.shuffle(chosen)
        print(f"### {name} ({len(chosen)} unique)")
        for finding in chosen[:count]:
            file = os.path.join(repo, finding["path"])
            text = open(file).read().splitlines() if os.path.exists(file) else []
            line = text[finding["line"] - 1].strip() if finding["line"] <= len(text) else finding.get("snippet", "")
            print(f"  {finding['path']}:{finding['line']} [{finding['definition']}]  {line[:150]}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None, int(sys.argv[3]) if len(sys.argv) > 3 else 12)
