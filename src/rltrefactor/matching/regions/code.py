"""A file's text as matchers read it: comments and docstrings blanked."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...source import treesitter
if TYPE_CHECKING:
    from tree_sitter import Node, Tree

_BLANKED = re.compile(r"[^\n\r]")


def code_text(text: str, tree: Tree) -> str:
    """``text`` with comments and bare string statements (docstrings) blanked: what a
    matcher can match. Same length and line breaks, so offsets and lines carry over."""
    data = text.encode("utf-8", "surrogatepass")
    spans = []
    for name, nodes in _code_free_nodes(tree).items():
        for node in nodes:
            if name == "string" and any(child.type == "interpolation" for child in node.children):
                continue  # an f-string's fields are code
            spans.append((node.start_byte, node.end_byte))
    if not spans:
        return text
    ascii_only = text.isascii()  # byte offsets are then character offsets

    def cut(start: int, end: int | None) -> str:
        return text[start:end] if ascii_only else data[start:end].decode("utf-8", "surrogatepass")

    pieces = []
    position = 0
    for start, end in sorted(spans):
        if start < position:
            continue
        pieces.append(cut(position, start))
        hidden = cut(start, end)
        one_line = "\n" not in hidden and "\r" not in hidden  # every comment, most docstrings
        pieces.append(" " * len(hidden) if one_line else _BLANKED.sub(" ", hidden))
        position = end
    pieces.append(cut(position, None))
    return "".join(pieces)


_CODE_FREE_QUERY = "(comment) @comment (expression_statement . (string) @string .)"


def _code_free_nodes(tree: Tree) -> dict[str, list[Node]]:
    return treesitter.captures(_CODE_FREE_QUERY, tree.root_node)
