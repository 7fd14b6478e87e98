"""What the call index adds to a review of a change, by the size of the repository.

Usage:
    .venv/bin/python bench/callindex_pr_cost.py [--runs N]

The same real one-file change (libcst 1.6.0 -> 1.7.0) committed into a 20-file and a
1,500-file repository (``bench/corpora.size_pair``), reviewed as a whole process
(``rltrefactor review --diff HEAD~1..HEAD``) with a fresh cache directory every run, with
the default configuration (the index on) and with ``call-index = false``. Runs of the
four variants are interleaved so that load on the machine falls on all of them alike.
Prints the medians and the 1,500-to-20 ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import corpora  # noqa: E402

TOOL = os.path.join(ROOT, ".venv", "bin", "rltrefactor")
OFF = "[tool.rltrefactor]\ncall-index = false\n"


def _once(repo: str, span: str, index: bool) -> float:
    config = os.path.join(repo, "pyproject.toml")
    if index:
        if os.path.exists(config):
            os.remove(config)
    else:
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(OFF)  # untracked: read as configuration, not part of the reviewed range
    cache = tempfile.mkdtemp(prefix="rlt-cache-")
    try:
        started = time.perf_counter()
        subprocess.run([TOOL, "review", "--diff", span, "--cache-dir", cache, "--format", "json"], cwd=repo,
                       check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - started
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if os.path.exists(config):
            os.remove(config)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    pairs = corpora.size_pair(corpora.torch_corpus(False))
    times: dict[tuple[str, bool], list[float]] = {(p.name, index): [] for p in pairs for index in (True, False)}
    for _ in range(args.runs):
        for pair in pairs:
            for index in (True, False):
                times[(pair.name, index)].append(_once(pair.repo, pair.span, index))
    print("| change | call index | median wall (s) |")
    print("|---|---|---:|")
    for (name, index), samples in times.items():
        print(f"| {name} | {'on (default)' if index else 'off'} | {statistics.median(samples):.2f} |")
    small, large = (statistics.median(times[(p.name, True)]) for p in pairs)
    print(f"\nIndex on: the 1,500-file repository costs {large / small:.2f}x the 20-file one (target: at most 1.3x).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
