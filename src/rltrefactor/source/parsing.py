"""LibCST parsing that never takes the process down, and syntax errors worth reading.

LibCST is imported on the first parse: a review that parses no region never loads it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .syntax import first_syntax_error
from ..types import FileError

if TYPE_CHECKING:
    import libcst as cst
    import tree_sitter

# LibCST's native parser overflows its stack (a crash, not an exception) somewhere
# above 800 nested brackets; Python itself refuses more than 200.
MAX_BRACKET_DEPTH = 400
_BRACKET = re.compile(r"[\[\](){}]")


class CodeSyntaxError(Exception):
    """LibCST's syntax error: its message and the 1-based line in the parsed text."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def parse_module(text: str) -> cst.Module:
    """``cst.parse_module`` that raises RecursionError instead of crashing the process
    and ``CodeSyntaxError`` for code that does not parse."""
    import libcst as cst

    from .cstprivate import unchecked_nodes

    depth = deepest = 0
    # Nesting cannot be deeper than the number of opening brackets (a cheap count).
    openings = text.count("(") + text.count("[") + text.count("{")
    for match in _BRACKET.finditer(text) if openings > MAX_BRACKET_DEPTH else ():
        depth += 1 if match.group() in "([{" else -1
        deepest = max(deepest, depth)
    if deepest > MAX_BRACKET_DEPTH:
        raise RecursionError(f"{deepest} nested brackets")
    try:
        with unchecked_nodes():  # the native parser builds only what its grammar accepts
            return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise CodeSyntaxError(exc.message, exc.raw_line) from None


def syntax_error(path: str, text: str, tree: tree_sitter.Tree) -> list[FileError]:
    """The parser's own message for a file tree-sitter flags, if LibCST agrees."""
    if first_syntax_error(tree) is None:
        return []
    try:
        parse_module(text)
    except CodeSyntaxError as exc:
        return [python_syntax_error(path, text) or FileError(path, f"syntax error: {exc.message}", exc.line, syntax=True)]
    except RecursionError:
        return [FileError(path, "nesting too deep to parse; not reviewed")]
    return []


def python_syntax_error(path: str, text: str) -> FileError | None:
    """CPython's message and line, which point closer to the mistake than LibCST's."""
    try:
        compile(text, path, "exec", flags=0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
    except SyntaxError as exc:
        return FileError(path, f"syntax error: {exc.msg}", exc.lineno, syntax=True)
    except (ValueError, RecursionError, MemoryError):
        return None
    return None
