"""What a fix removed, as candidate patterns for the rule drafted from it.

The code on the changed lines before the fix is compared with the code on them after
it. What the lines hold less of afterwards is a candidate, most telling first: a call
whose callee is gone (``$X.item()``, ``torch.cuda.synchronize()``), then a call whose
form changed (``$X.to($A)`` became ``$X.to($A, non_blocking=$NON_BLOCKING)``), then an
attribute read (``$X.data``). A method's receiver and a call's arguments become
metavariables; a callee reached through the file's imports is written by its qualified
name, which the pattern compiler resolves through any import spelling.

Which candidate fits is decided by running the drafted rule on its own examples
(``entry.py``), not here.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass
from typing import Collection, Iterator, Literal

ChangeKind = Literal["code", "literals", "layout"]
_LAYOUT = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                     tokenize.ENCODING, tokenize.ENDMARKER})  # fmt: skip
_LITERALS = frozenset({tokenize.STRING, tokenize.NUMBER, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)})
_MOST_TRIED = 6  # candidates tried per draft: each is one run of the examples


@dataclass(frozen=True)
class Shape:
    """How a node is recognised on both sides of the fix and in the examples.

    ``callee`` is ``.name`` for a method or attribute of some value, else the name
    or qualified dotted name; ``form`` (form shapes only) is the positional argument
    count and the keyword names."""

    kind: Literal["call", "form", "attribute"]
    callee: str
    form: tuple[int, tuple[str, ...]] | None = None


@dataclass(frozen=True)
class Candidate:
    shape: Shape
    pattern: str  # pattern syntax of docs/writing-rules.md, e.g. "$X.item()"
    name: str  # the last name of the callee or attribute, e.g. "item"
    shown: str  # how a title names it, e.g. "`.item()`"
    lines: tuple[int, ...] = ()  # where its nodes start in the file before the fix


def change_kind(old_text: str, old_lines: Collection[int], new_text: str, new_lines: Collection[int]) -> ChangeKind:
    """``layout`` when the changed lines hold the same tokens but for comments and line
    breaks, ``literals`` when only string and number values differ, else ``code``."""
    old, new = _tokens(old_text, old_lines), _tokens(new_text, new_lines)
    if old is None or new is None:
        return "code"
    if old == new:
        return "layout"
    masked = [[(kind, "" if kind in _LITERALS else text) for kind, text in side] for side in (old, new)]
    return "literals" if masked[0] == masked[1] else "code"


def removed_candidates(old_text: str, old_lines: Collection[int], new_text: str, new_lines: Collection[int]) -> list[Candidate]:
    """Patterns for what the changed lines hold fewer of after the fix, most telling first."""
    try:
        old_tree, new_tree = ast.parse(old_text), ast.parse(new_text)
    except SyntaxError:
        return []
    before = list(_shaped(old_tree, old_lines))
    after = Counter(shape for shape, _ in _shaped(new_tree, new_lines))
    counts = Counter(shape for shape, _ in before)
    gone = [shape for shape in dict.fromkeys(shape for shape, _ in before) if counts[shape] > after[shape]]
    order = {"call": 0, "form": 1, "attribute": 2}
    gone.sort(key=lambda shape: order[shape.kind])
    nodes = {shape: [node for s, node in before if s == shape] for shape in gone}
    return [_candidate(shape, nodes[shape]) for shape in gone][:_MOST_TRIED]


def shape_lines(code: str, shape: Shape) -> tuple[int, ...]:
    """Lines of ``code`` where a node of ``shape`` starts: where its rule reports."""
    tree = ast.parse(code)
    every = frozenset(range(1, len(code.splitlines()) + 1))
    return tuple(sorted({node.lineno for s, node in _shaped(tree, every) if s == shape}))


def _shaped(tree: ast.Module, lines: Collection[int]) -> Iterator[tuple[Shape, ast.expr]]:
    """Shapes of the calls and attribute reads that touch ``lines``, in source order."""
    imports = _imports(tree)
    wanted = frozenset(lines)
    calls = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Call, ast.Attribute)):
            continue
        if not any(line in wanted for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)):
            continue
        if isinstance(node, ast.Call):
            callee = _callee(node.func, imports)
            if callee is None:
                continue
            yield Shape("call", callee), node
            keywords = tuple(kw.arg for kw in node.keywords if kw.arg is not None)
            if len(keywords) == len(node.keywords) and not any(isinstance(a, ast.Starred) for a in node.args):
                yield Shape("form", callee, (len(node.args), keywords)), node
        elif id(node) not in calls and isinstance(node.ctx, ast.Load):
            callee = _callee(node, imports)
            if callee is not None:
                yield Shape("attribute", callee), node


def _callee(func: ast.expr, imports: dict[str, str]) -> str | None:
    """``.name`` for a method or attribute of a value, the qualified name of something
    imported, a plain name as written; None for anything else (``f()()``, ``x[0]()``)."""
    parts: list[str] = []
    node = func
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        if node.id in imports:
            return ".".join([imports[node.id], *parts])
        if not parts:
            return node.id
    return f".{func.attr}" if isinstance(func, ast.Attribute) else None


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified name, for the module's top-level imports."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    names[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _candidate(shape: Shape, nodes: list[ast.expr]) -> Candidate:
    method = shape.callee.startswith(".")
    head = "$X" + shape.callee if method else shape.callee
    name = shape.callee.rsplit(".", 1)[-1]
    lines = tuple(sorted({node.lineno for node in nodes}))
    if shape.kind == "attribute":
        return Candidate(shape, head, name, f"`{shape.callee}`", lines)
    shown = f"`{shape.callee}()`"
    if shape.kind == "form" and shape.form is not None:
        return Candidate(shape, f"{head}({_arguments(*shape.form)})", name, shown, lines)
    bare = all(isinstance(node, ast.Call) and not node.args and not node.keywords for node in nodes)
    return Candidate(shape, f"{head}()" if bare else f"{head}(...)", name, shown, lines)


def _arguments(positional: int, keywords: tuple[str, ...]) -> str:
    """Metavariables for a call's arguments: ``$A, $B, key=$KEY``; never ``$X``, the receiver's."""
    letters = list("ABCDEFGHIJKLMNOPQRSTUVWYZ")[:positional]
    taken = {"X", *letters}
    named = []
    for keyword in keywords:
        var = re.sub(r"[^A-Z0-9_]", "_", keyword.upper()).lstrip("_") or "KEY"
        var = var if var[0].isalpha() else f"K{var}"
        while var in taken:
            var += "_"
        taken.add(var)
        named.append(f"{keyword}=${var}")
    return ", ".join([f"${letter}" for letter in letters] + named)


def changed_literal(old_text: str, old_lines: Collection[int], new_text: str, new_lines: Collection[int]) -> tuple[str, str, int] | None:
    """The first string or number value the fix replaced, as (before, after, line before);
    None when the lines hold no replaced value or do not tokenize."""
    old, new = _literals(old_text, old_lines), _literals(new_text, new_lines)
    if old is None or new is None:
        return None
    for (before, line), (after, _) in zip(old, new):
        if before != after:
            return before, after, line
    return None


def _literals(text: str, lines: Collection[int]) -> list[tuple[str, int]] | None:
    wanted = frozenset(lines)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return [(token.string, token.start[0]) for token in tokens
            if token.type in _LITERALS and any(line in wanted for line in range(token.start[0], token.end[0] + 1))]


def _tokens(text: str, lines: Collection[int]) -> list[tuple[int, str]] | None:
    """The tokens on ``lines`` but layout and comments; None when the file does not tokenize."""
    wanted = frozenset(lines)
    try:
        return [
            (token.type, token.string)
            for token in tokenize.generate_tokens(io.StringIO(text).readline)
            if token.type not in _LAYOUT and any(line in wanted for line in range(token.start[0], token.end[0] + 1))
        ]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
