"""Anchor: bare LibCST parse of every Python file under the given paths (no rules).

Runs in the anchors venv. The floor for any LibCST-based reviewer: reading and parsing
the same files, nothing else. Prints the file and failure counts.
"""

from __future__ import annotations

import os
import sys

import libcst


def python_files(roots: list[str]) -> list[str]:
    found = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".py")]
    return found


def main(roots: list[str]) -> int:
    failed = 0
    files = python_files(roots)
    for path in files:
        with open(path, "rb") as handle:
            source = handle.read()
        try:
            libcst.parse_module(source)
        except libcst.ParserSyntaxError:
            failed += 1
    print(f"libcst: {len(files)} files, {failed} failed to parse")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
