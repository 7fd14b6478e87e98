"""The one owner of tree-sitter: the Python grammar, the parser and the compiled queries.

Every other module parses and queries through here. tree-sitter is imported on the
first call, so a process that never parses never loads it. Queries are compiled once
per query text and kept for the life of the process: their texts are constants.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tree_sitter


@cache
def language() -> tree_sitter.Language:
    import tree_sitter
    import tree_sitter_python

    return tree_sitter.Language(tree_sitter_python.language())


@cache
def _parser() -> tree_sitter.Parser:
    import tree_sitter

    return tree_sitter.Parser(language())


def parse(text: str) -> tree_sitter.Tree:
    """The syntax tree of ``text``; error-tolerant, rows are ``\\n``-separated lines."""
    return _parser().parse(text.encode("utf-8", "surrogatepass"))


def parse_bytes(data: bytes) -> tree_sitter.Tree:
    """``parse`` of a file's bytes as read: byte offsets are those of ``data``."""
    return _parser().parse(data)


@cache
def query(source: str) -> tree_sitter.Query:
    """``source`` compiled against the Python grammar."""
    import tree_sitter

    return tree_sitter.Query(language(), source)


def captures(source: str, node: tree_sitter.Node) -> dict[str, list[tree_sitter.Node]]:
    """The nodes under ``node`` that the query ``source`` captures, by capture name, each
    list in source order (an enclosing node before the nodes it holds). The cursor's own
    order varies from run to run where patterns nest; what is read from it must not."""
    import tree_sitter

    found = tree_sitter.QueryCursor(query(source)).captures(node)
    return {name: sorted(nodes, key=_source_order) for name, nodes in found.items()}


def matches(source: str, node: tree_sitter.Node) -> list[tuple[int, dict[str, list[tree_sitter.Node]]]]:
    """Each match of the query ``source`` under ``node``: its pattern index and captures,
    in source order of their first captured node (see ``captures``)."""
    import tree_sitter

    found = [(pattern, {name: sorted(nodes, key=_source_order) for name, nodes in captured.items()})
             for pattern, captured in tree_sitter.QueryCursor(query(source)).matches(node)]
    return sorted(found, key=lambda match: (min((_source_order(n) for ns in match[1].values() for n in ns),
                                                default=(0, 0)), match[0]))


def _source_order(node: tree_sitter.Node) -> tuple[int, int]:
    return node.start_byte, -node.end_byte
