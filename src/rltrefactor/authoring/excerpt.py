"""The statements a fix changed, cut from a file with just enough around them to read
and to parse on their own.

A statement touching a changed line is shown whole when it is simple or short; a long
definition or block is shown by its header, with the statements inside it that touch
the change and ``...`` for the rest, so a fix in a 240-line function gives its ``def``
line, the changed statements and a few lines around them. Neighbouring statements are
shown as context only inside functions, where they run in sequence with the change;
at module and class level they are independent definitions and are left out. Imports
of the file that the excerpt uses come first, cut to the names it uses.

The excerpt keeps the file's own lines and indentation (its outermost statements are
top-level ones); only folded statements and imports are written anew. It is cut with
the standard ``ast`` module, the file read once to write a skeleton.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Collection

from ..errors import ChangeInputError

SHORT = 10  # a touched function or block of up to this many lines is shown whole (a class never is)
CONTEXT = 3  # lines of neighbouring statements shown before and after the changed ones
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def cut_excerpt(text: str, lines: Collection[int], where: str) -> str:
    """The statements of ``text`` touching ``lines`` (1-based), with their context.

    Raises ``ChangeInputError`` when the lines touch no statement, or when the file does
    not parse and the lines alone do not either."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        code = textwrap.dedent("\n".join(text.splitlines()[min(lines) - 1 : max(lines)])).rstrip() + "\n"
        return _parsed(code, lines, where)
    cutter = _Cutter(text.splitlines(), frozenset(lines))
    cutter.body(tree.body, in_function=False, top=True)
    if not cutter.out:
        raise ChangeInputError(f"{where}: lines {describe_lines(lines)} hold no statement; pick --lines that cover the fixed code")
    body = _parsed("\n".join(cutter.out).rstrip() + "\n", lines, where)
    imports = _used_imports(tree, body)
    if not imports:
        return body
    gap = "\n\n\n" if body.startswith(("def ", "async def ", "class ", "@")) else "\n"
    return "\n".join(imports) + gap + body


def describe_lines(lines: Collection[int]) -> str:
    """``4-6, 9``: the lines as runs."""
    runs: list[list[int]] = []
    for line in sorted(set(lines)):
        if runs and line == runs[-1][-1] + 1:
            runs[-1].append(line)
        else:
            runs.append([line])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)


def statement_at(text: str, line: int) -> str:
    """The innermost statement of ``text`` holding ``line``, on one line: a simple
    statement whole, a compound one by its first line (``for part in parts:``)."""
    source = text.splitlines()
    fallback = source[line - 1].strip() if 0 < line <= len(source) else ""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return fallback
    holding = [node for node in ast.walk(tree) if isinstance(node, ast.stmt) and node.lineno <= line <= last_line(node)]
    if not holding:
        return fallback
    innermost = max(holding, key=lambda node: (node.lineno, -last_line(node)))
    if _blocks(innermost):
        return source[innermost.lineno - 1].strip()
    return " ".join(part.strip() for part in source[innermost.lineno - 1 : last_line(innermost)])


def first_line(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def last_line(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


class _Cutter:
    """Writes the kept lines of a tree into ``out``, in source order."""

    def __init__(self, source: list[str], lines: frozenset[int]) -> None:
        self.source = source
        self.lines = lines
        self.out: list[str] = []

    def body(self, stmts: list[ast.stmt], *, in_function: bool, top: bool = False) -> None:
        """``stmts`` of one block: kept ones as written, each run of the others as one ``...``
        (at module level, left out)."""
        if not stmts:
            return
        kept = self._kept(stmts, in_function)
        indent = _indent(self.source[first_line(stmts[0]) - 1])
        shown = -2  # index of the statement written last; -1: a fold was
        for index, stmt in enumerate(stmts):
            how = kept.get(index)
            if how is None:
                if shown != -1 and not top:
                    if shown >= 0 and self._blank_before(stmt):
                        self.out.append("")
                    self.out.append(indent + "...")
                shown = -1
                continue
            if shown == index - 1:  # what stood between two shown statements: blank lines, comments
                self.out += self.source[last_line(stmts[index - 1]) : first_line(stmt) - 1]
            elif top and self.out:
                self.out += ["", ""]
            elif shown == -1 and not top and self._blank_before(stmt):
                self.out.append("")
            if how == "whole":
                self.out += self.source[first_line(stmt) - 1 : last_line(stmt)]
            else:
                self._expand(stmt, in_function)
            shown = index

    def _kept(self, stmts: list[ast.stmt], in_function: bool) -> dict[int, str]:
        """Index -> ``whole`` or ``expand`` for the statements of a block that are shown."""
        touched = [i for i, stmt in enumerate(stmts) if self._touches(stmt)]
        if not touched:
            return {}
        kept = {i: "expand" if _expands(stmts[i]) else "whole" for i in touched}
        for i in range(touched[0], touched[-1]):
            if i not in kept and _span(stmts[i]) <= CONTEXT:
                kept[i] = "whole"
        if in_function:  # context beside a changed statement shown whole, not beside a cut block
            edges = ((-1, touched[0]), (1, touched[-1]))
            for step, start in ((step, edge + step) for step, edge in edges if kept[edge] == "whole"):
                budget, i = CONTEXT, start
                while 0 <= i < len(stmts) and _span(stmts[i]) <= budget:
                    kept[i] = "whole"
                    budget -= _span(stmts[i])
                    i += step
        return kept

    def _expand(self, stmt: ast.stmt, in_function: bool) -> None:
        """A compound statement's headers as written, each of its blocks cut in turn."""
        inner = in_function or isinstance(stmt, _FUNCTIONS)
        cursor = first_line(stmt)
        for block in _blocks(stmt):
            self.out += self.source[cursor - 1 : first_line(block[0]) - 1]  # `else:`, `except E:`, comments
            if _is_elif(block[0], self.source):  # its header is its own first line: never folded
                self._expand(block[0], inner)
            else:
                self.body(block, in_function=inner)
            cursor = last_line(block[-1]) + 1

    def _blank_before(self, stmt: ast.stmt) -> bool:
        line = first_line(stmt)
        return line > 1 and not self.source[line - 2].strip()

    def _touches(self, stmt: ast.stmt) -> bool:
        low, high = first_line(stmt), last_line(stmt)
        return any(low <= line <= high for line in self.lines)


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of a compound statement, in source order."""
    if isinstance(stmt, (ast.Try, ast.TryStar)):
        blocks = [stmt.body, *(handler.body for handler in stmt.handlers), stmt.orelse, stmt.finalbody]
    elif isinstance(stmt, ast.Match):
        blocks = [case.body for case in stmt.cases]
    else:
        blocks = [getattr(stmt, "body", []), getattr(stmt, "orelse", [])]
    return [block for block in blocks if block]


def _expands(stmt: ast.stmt) -> bool:
    """Shown by its header and cut blocks: a class, or a long definition or block
    whose blocks each start on a line of their own."""
    blocks = _blocks(stmt)
    if not blocks or not (isinstance(stmt, ast.ClassDef) or _span(stmt) > SHORT):
        return False
    return all(block[0].lineno > _header_line(stmt, index) for index, block in enumerate(blocks))


def _header_line(stmt: ast.stmt, index: int) -> int:
    """A line its block ``index`` must start after: the statement's first line for the
    first block, the end of the block before for the others."""
    if index == 0:
        return stmt.lineno
    return last_line(_blocks(stmt)[index - 1][-1])


def _is_elif(stmt: ast.stmt, source: list[str]) -> bool:
    return isinstance(stmt, ast.If) and source[stmt.lineno - 1].lstrip().startswith("elif")


def _span(stmt: ast.stmt) -> int:
    return last_line(stmt) - first_line(stmt) + 1


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _used_imports(tree: ast.Module, code: str) -> list[str]:
    """The file's top-level imports that bind a name ``code`` uses, cut to those names."""
    used = {node.id for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Name)}
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [a for a in node.names if (a.asname or a.name.split(".")[0]) in used]
            cut: ast.stmt = ast.Import(names=names)
        elif isinstance(node, ast.ImportFrom):
            names = [a for a in node.names if (a.asname or a.name) in used]
            cut = ast.ImportFrom(module=node.module, names=names, level=node.level)
        else:
            continue
        if names and ast.unparse(cut) not in code.splitlines():
            found.append(ast.unparse(cut))
    return found


def _parsed(code: str, lines: Collection[int], where: str) -> str:
    try:
        ast.parse(code)
    except SyntaxError as exc:
        raise ChangeInputError(
            f"{where}: lines {describe_lines(lines)} do not parse as Python on their own ({exc.msg}); "
            "pick --lines that cover whole statements"
        ) from None
    return code
