"""Findings per rule before and after a change, from two ``evaluate.py`` output folders.

Usage: compare.py BEFORE_DIR AFTER_DIR  (prints one Markdown table per corpus)
"""

from __future__ import annotations

import collections
import json
import os
import sys


def counts(path: str) -> tuple[collections.Counter, collections.Counter, int]:
    data = json.load(open(path))
    ranges = collections.Counter(f["rule"] for r in data["ranges"] for f in r["findings"])
    full = collections.Counter(f["rule"] for f in data["full"]["findings"])
    return ranges, full, sum(r["added_lines"] for r in data["ranges"])


def main(before_dir: str, after_dir: str) -> None:
    for name in sorted(os.listdir(after_dir)):
        if not name.endswith(".json") or not os.path.exists(os.path.join(before_dir, name)):
            continue
        rb, fb, added = counts(os.path.join(before_dir, name))
        ra, fa, _ = counts(os.path.join(after_dir, name))
        print(f"### {name[:-5]} ({added} added lines in its ranges)\n")
        print("| rule | ranges before | ranges after | per 1k added lines after | full scan before | full scan after |")
        print("|---|---:|---:|---:|---:|---:|")
        for rule in sorted(set(rb) | set(ra) | set(fb) | set(fa), key=lambda r: -(rb[r] + fb[r])):
            print(f"| {rule} | {rb[rule]} | {ra[rule]} | {1000 * ra[rule] / max(added, 1):.2f} | {fb[rule]} | {fa[rule]} |")
        print(f"| **total** | {sum(rb.values())} | {sum(ra.values())} | {1000 * sum(ra.values()) / max(added, 1):.2f} | {sum(fb.values())} | {sum(fa.values())} |\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
