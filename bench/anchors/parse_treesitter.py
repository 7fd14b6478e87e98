"""Anchor: tree-sitter parse of every Python file under the given paths (no rules).

Runs in the anchors venv. Prints the file count and how many trees hold error nodes.
"""

from __future__ import annotations

import sys

import tree_sitter_python
from tree_sitter import Language, Parser

from parse_libcst import python_files


def main(roots: list[str]) -> int:
    parser = Parser(Language(tree_sitter_python.language()))
    files = python_files(roots)
    with_errors = 0
    for path in files:
        with open(path, "rb") as handle:
            tree = parser.parse(handle.read())
        with_errors += tree.root_node.has_error
    print(f"tree-sitter: {len(files)} files, {with_errors} with error nodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
