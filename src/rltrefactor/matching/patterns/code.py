"""One Python code pattern (``$X.item()``, ``torch.cuda.synchronize(...)``) and its
structural comparison against LibCST nodes.

Pattern text is parsed, never evaluated: ``$NAME`` becomes a placeholder identifier
before parsing, ``...`` is Python's Ellipsis. Comparison ignores whitespace, comments
and parentheses; a dotted name in a pattern matches any spelling of it that the file's
imports resolve to the same qualified name (``import torch as th``, ``from torch.cuda
import synchronize as sync``).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence, TypeGuard

import libcst as cst

from ..matchers.base import FileContext, child_nodes
from ..matchers.imports import dotted_name
from ..matchers.options import MatcherSpecError
from ..prefilter import AllOf

MV_PREFIX = "__rlt_mv_"
_METAVAR = re.compile(r"\$([A-Z][A-Z0-9_]*)")
Bindings = dict[str, cst.CSTNode]
# Fields that carry formatting only; comparing them would make patterns whitespace-sensitive.
_FORMAT_FIELDS = frozenset(
    "lpar rpar comma semicolon leading_lines lines_after_decorators header footer trailing_whitespace "
    "newline indent equal colon dot lbracket rbracket lbrace rbrace".split()
)


@dataclass(frozen=True)
class CodePattern:
    source: str
    root: cst.CSTNode
    anchors: tuple[type[cst.CSTNode], ...]  # node types a match can start at
    metavars: frozenset[str]
    token: "str | re.Pattern[str] | AllOf | None"  # occurs in every match's top-level statement, for the prefilter
    callee: str | None = None  # last name a matching call's callee must have (or be an alias)

    def match(self, node: cst.CSTNode, ctx: FileContext, bindings: Bindings) -> Bindings | None:
        if self.callee is not None and isinstance(node, cst.Call):
            func = node.func
            last = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
            if last != self.callee and not (isinstance(func, cst.Name) and last in ctx.imports.aliases):
                return None  # cheap rejection before the structural comparison
        return match_node(self.root, node, bindings, ctx)


_COMPILED: dict[str, CodePattern] = {}


def compile_code(source: str, line: int | None = None) -> CodePattern:
    """The pattern for ``source``; compiled once per process (loading validates every
    pattern and building the matchers needs them again). Errors are never cached."""
    cached = _COMPILED.get(source)
    if cached is None:
        cached = _COMPILED[source] = _compile_code(source, line)
    return cached


def _compile_code(source: str, line: int | None) -> CodePattern:
    text = _METAVAR.sub(lambda m: MV_PREFIX + m.group(1), source.strip())
    if "$" in text:
        raise MatcherSpecError(f"pattern {source!r}: metavariables are written $UPPERCASE (such as $X); fix the name", line)
    root = _parse(text, source, line)
    if is_metavar(root) or _is_ellipsis(root):
        raise MatcherSpecError(f"pattern {source!r} matches every expression; make it more specific", line)
    if _dotted(root) is not None:
        anchors: tuple[type[cst.CSTNode], ...] = (cst.Name, cst.Attribute)
    else:
        anchors = (type(root),)
    metavars = frozenset(n.value[len(MV_PREFIX):] for n in _walk(root) if is_metavar(n))
    return CodePattern(source, root, anchors, metavars, _token(root), _callee(root))


def _callee(root: cst.CSTNode) -> str | None:
    if not isinstance(root, cst.Call):
        return None
    func = root.func
    if isinstance(func, cst.Attribute) and not is_metavar(func.attr):
        return func.attr.value
    if isinstance(func, cst.Name) and not is_metavar(func):
        return func.value
    return None


def _parse(text: str, source: str, line: int | None) -> cst.CSTNode:
    try:
        return cst.parse_expression(text)
    except cst.ParserSyntaxError:
        pass
    try:
        statement = cst.parse_statement(text)
    except cst.ParserSyntaxError as exc:
        raise MatcherSpecError(
            f"pattern {source!r} does not parse as a Python expression or statement ({exc.message}); fix the pattern",
            line,
        ) from None
    if isinstance(statement, cst.SimpleStatementLine):
        if len(statement.body) != 1:
            raise MatcherSpecError(f"pattern {source!r} holds several statements; write one statement per pattern", line)
        return statement.body[0]
    return statement


def is_metavar(node: cst.CSTNode) -> TypeGuard[cst.Name]:
    return isinstance(node, cst.Name) and node.value.startswith(MV_PREFIX)


def _is_ellipsis(node: object) -> bool:
    return isinstance(node, cst.Ellipsis)


def _dotted(node: cst.CSTNode) -> str | None:
    """The dotted name a Name/Attribute chain spells, if it holds no metavariable."""
    if not isinstance(node, (cst.Name, cst.Attribute)):
        return None
    name = dotted_name(node)
    return None if name is None or MV_PREFIX in name else name


def _walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``root`` and every node below it, formatting nodes left out, in pre-order."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        children = child_nodes(node)
        children.reverse()
        stack.extend(children)


# ``x[a > b]`` / ``x[~m]``: a subscript whose slice is a comparison or an inversion. The
# slice may hold brackets of its own before the operator (``x[lens[i] > 0]``), up to
# three levels deep; deeper nesting is not Python engine code anyone writes.
_NESTED = r"(?:[^\[\]]|\[(?:[^\[\]]|\[(?:[^\[\]]|\[[^\[\]]*\])*\])*\])"
SUBSCRIPT_COMPARISON = re.compile(r"\[" + _NESTED + r"*?(?:[<>]|==|!=)")
SUBSCRIPT_INVERSION = re.compile(r"\[[\s(]*~")


def _subscript_token(root: cst.CSTNode) -> "re.Pattern[str] | None":
    if not (isinstance(root, cst.Subscript) and len(root.slice) == 1 and isinstance(root.slice[0].slice, cst.Index)):
        return None
    value = root.slice[0].slice.value
    if isinstance(value, cst.Comparison):
        return SUBSCRIPT_COMPARISON
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.BitInvert):
        return SUBSCRIPT_INVERSION
    return None


def _token(root: cst.CSTNode) -> "str | re.Pattern[str] | AllOf | None":
    """The most selective substring every match's own statement contains.

    Only names written at the match itself count: of a dotted name, every part but
    the head (``import torch as th`` renames the head; a renaming import such as
    ``from torch.cuda import synchronize as sync`` is covered by the engine, which adds
    the local alias of any imported name containing a token). A method called on a
    metavariable also contributes ``.name(``.
    """
    words: list[str] = []
    if isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute) and _dotted(root.func) is None:
        if not is_metavar(root.func.attr):
            words.append(f".{root.func.attr.value}(")
    _collect_words(root, words, in_chain=False)
    # Keyword names (``device=``) are written at every call of every API: a last resort.
    keywords = {n.keyword.value for n in _walk(root) if isinstance(n, cst.Arg) and n.keyword is not None}
    words = list(dict.fromkeys(w for w in words if w not in keywords)) or words
    if not words:
        return _subscript_token(root)
    return AllOf(tuple(words), frozenset(_called_names(root)) & frozenset(words), frozenset(_dotted_parts(root)) & frozenset(words))


def _called_names(root: cst.CSTNode) -> set[str]:
    """Last names of the dotted callees in ``root``: written just before ``(``."""
    called = set()
    for node in _walk(root):
        if isinstance(node, cst.Call) and _dotted(node.func) is not None:
            func = node.func
            called.add(func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else "")
    return called - {""}


def _collect_words(node: cst.CSTNode, words: list[str], *, in_chain: bool) -> None:
    if isinstance(node, cst.Attribute):
        if not is_metavar(node.attr):
            words.append(node.attr.value)
        _collect_words(node.value, words, in_chain=True)
        return
    if isinstance(node, cst.Name):
        if not in_chain and not is_metavar(node):
            words.append(node.value)
        return
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        if isinstance(value, str) and len(value) >= 3 and not re.search(r"[\\'\"\n]", value):
            words.append(value)
        return
    for child in child_nodes(node):
        _collect_words(child, words, in_chain=False)


def _dotted_parts(root: cst.CSTNode) -> set[str]:
    """Parts of the dotted names in ``root`` that start at a plain name (``torch.cuda``):
    an import may have renamed or dropped them at the match."""
    parts: set[str] = set()
    for node in _walk(root):
        name = _dotted(node) if isinstance(node, cst.Attribute) else None
        if name is not None:
            parts.update(name.split("."))
    return parts


# -- structural comparison --------------------------------------------------------


def match_node(p: cst.CSTNode, t: cst.CSTNode, b: Bindings, ctx: FileContext) -> Bindings | None:
    if is_metavar(p):
        name = p.value[len(MV_PREFIX):]
        if name in b:
            return b if match_node(b[name], t, {}, ctx) is not None else None
        return {**b, name: t}
    if _is_ellipsis(p):
        return b if isinstance(t, cst.BaseExpression) else None
    dotted = _dotted(p)
    if dotted is not None:
        return b if _same_name(dotted, t, ctx) else None
    if type(p) is not type(t):
        return b if is_ellipsis_suite(p) and isinstance(t, cst.BaseSuite) else None
    if isinstance(p, cst.Attribute) and isinstance(t, cst.Attribute):  # t: same type as p
        if not (is_metavar(p.attr) or p.attr.value == t.attr.value):
            return None
        found = match_node(p.attr, t.attr, b, ctx) if is_metavar(p.attr) else b
        return None if found is None else match_node(p.value, t.value, found, ctx)
    if isinstance(p, cst.Call) and isinstance(t, cst.Call):
        found = match_node(p.func, t.func, b, ctx)
        return None if found is None else _match_args(p.args, t.args, found, ctx)
    if isinstance(p, (cst.SimpleString, cst.Integer, cst.Float)):
        return b if _literal(p) == _literal(t) else None
    if is_ellipsis_suite(p):
        return b
    return _match_fields(p, t, b, ctx)


def _same_name(dotted: str, t: cst.CSTNode, ctx: FileContext) -> bool:
    if not isinstance(t, (cst.Name, cst.Attribute)):
        return False
    last = dotted.rpartition(".")[2]
    if isinstance(t, cst.Attribute):
        if t.attr.value != last:
            return False
    elif t.value != last and t.value not in ctx.imports.aliases:
        return False
    return dotted_name(t) == dotted or ctx.qualified_name(t) == dotted


def _literal(node: cst.CSTNode) -> object:
    try:
        return node.evaluated_value  # type: ignore[attr-defined]  # literal nodes have it; others fall to except
    except Exception:  # noqa: BLE001 - odd literals compare by their text instead
        return getattr(node, "value", None)


def is_ellipsis_suite(p: cst.CSTNode) -> bool:
    """``if $C: ...`` written on one line: the body matches any block."""
    return (
        isinstance(p, cst.SimpleStatementSuite)
        and len(p.body) == 1
        and isinstance(p.body[0], cst.Expr)
        and _is_ellipsis(p.body[0].value)
    )


def _match_fields(p: cst.CSTNode, t: cst.CSTNode, b: Bindings, ctx: FileContext) -> Bindings | None:
    current = b
    for name in _compared_fields(type(p)):
        pv, tv = getattr(p, name), getattr(t, name)
        found: Bindings | None = current
        if isinstance(pv, cst.CSTNode):
            found = match_node(pv, tv, current, ctx) if isinstance(tv, cst.CSTNode) else None
        elif isinstance(pv, (tuple, list)):
            found = match_sequence(pv, tv, current, ctx, _is_wild_item) if isinstance(tv, (tuple, list)) else None
        elif pv is None and name == "orelse":
            continue  # a pattern without ``else`` does not care whether the code has one
        elif type(pv) is not type(tv) or pv != tv:
            return None
        if found is None:
            return None
        current = found
    return current


@functools.lru_cache(maxsize=None)
def _compared_fields(kind: type) -> tuple[str, ...]:
    return tuple(
        f.name for f in dataclasses.fields(kind) if f.name not in _FORMAT_FIELDS and not f.name.startswith("whitespace")
    )


def _is_wild_item(node: cst.CSTNode) -> bool:
    if isinstance(node, (cst.Element, cst.SubscriptElement)):
        value = node.value if isinstance(node, cst.Element) else getattr(node.slice, "value", None)
        return _is_ellipsis(value)
    if isinstance(node, cst.SimpleStatementLine):
        return len(node.body) == 1 and isinstance(node.body[0], cst.Expr) and _is_ellipsis(node.body[0].value)
    return False


def match_sequence(
    ps: Sequence[cst.CSTNode],
    ts: Sequence[cst.CSTNode],
    b: Bindings,
    ctx: FileContext,
    is_wild: Callable[[cst.CSTNode], bool],
    compare: Callable[[cst.CSTNode, cst.CSTNode, Bindings, FileContext], Bindings | None] = match_node,
) -> Bindings | None:
    """Items in order; a wild item (``...``) stands for any number of items."""
    if not ps:
        return b if not ts else None
    head, rest = ps[0], ps[1:]
    if is_wild(head):
        for skip in range(len(ts) + 1):
            found = match_sequence(rest, ts[skip:], b, ctx, is_wild, compare)
            if found is not None:
                return found
        return None
    if not ts:
        return None
    found = compare(head, ts[0], b, ctx)
    return None if found is None else match_sequence(rest, ts[1:], found, ctx, is_wild, compare)


def _is_wild_arg(arg: cst.CSTNode) -> bool:
    return isinstance(arg, cst.Arg) and arg.keyword is None and not arg.star and _is_ellipsis(arg.value)


def _compare_arg(p: cst.CSTNode, t: cst.CSTNode, b: Bindings, ctx: FileContext) -> Bindings | None:
    if p.star != t.star:  # type: ignore[attr-defined]  # called on two calls' arguments only
        return None
    return match_node(p.value, t.value, b, ctx)  # type: ignore[attr-defined]  # as above: both are cst.Arg


def _match_args(pargs: Sequence[cst.Arg], targs: Sequence[cst.Arg], b: Bindings, ctx: FileContext) -> Bindings | None:
    """Positional arguments in order (``...`` = any run of them); keywords by name.

    Without a ``...`` the call must have exactly the pattern's arguments; with one,
    keywords the pattern does not name are allowed.
    """
    open_ended = any(_is_wild_arg(a) for a in pargs)
    t_keywords = {a.keyword.value: a for a in targs if a.keyword is not None}
    current = b
    for parg in pargs:
        if parg.keyword is None:
            continue
        targ = t_keywords.get(parg.keyword.value)
        found = None if targ is None else match_node(parg.value, targ.value, current, ctx)
        if found is None:
            return None
        current = found
    p_named = sum(1 for a in pargs if a.keyword is not None)
    t_rest = [a for a in targs if a.keyword is None and a.star != "**"]
    if not open_ended and (len(t_keywords) != p_named or len(t_rest) + len(t_keywords) != len(targs)):
        return None
    p_positional = [a for a in pargs if a.keyword is None]
    return match_sequence(p_positional, t_rest, current, ctx, _is_wild_arg, _compare_arg)
