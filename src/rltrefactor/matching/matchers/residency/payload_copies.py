"""One tensor copied twice in the same function, and ``.contiguous()`` of a tensor contiguous by construction.

Two shapes, read in functions that are not cold (construction, loading):

- a **payload copied twice**: the same tensor (a name or an attribute chain:
  ``pixel_values``, ``mb.input_ids``) ``.clone()``-d twice, or the same ``torch.cat``
  (same operands, same arguments) made twice, in one function, both under the same
  conditions (not the two sides of an ``if``, nor one inside an ``if`` the other is
  outside), at most ``_NEAR`` lines apart, with nothing rebinding an operand between
  them. Each copy allocates and moves the whole payload; the second could reuse the
  first (or a view of it).
- a **contiguous copy that copies nothing**: ``.contiguous()`` of a tensor just made by
  ``torch.cat``/``torch.stack``, a ``torch`` factory (``empty``, ``zeros``, ``arange``)
  or a previous ``.contiguous()`` at most ``_JUST_MADE`` lines above, directly or
  through a name bound only to such a result. Such a tensor is already contiguous, so
  the call returns it unchanged: it neither copies (as a reader expects when a buffer
  must be owned) nor helps.

A slice of the tensor (``x[:n]``) is not the tensor: two copies of different slices are
not reported; nor are concatenations of a tensor with different partners (two results
holding different data), copies of a fresh filler (``pad = torch.zeros(...)``, needed in
each structure it pads) or of a comprehension's variable. ``.clone()`` keeps its input's
strides (``preserve_format``), so its result is not contiguous by construction; neither
is a ``*_like`` factory's, a parameter's (unless rebound unconditionally), nor anything
given a ``memory_format``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import GuardedRegex, Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import in_cold_function, parameter_names, plain_assignments, subtree
from ..options import Option

_CATS = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})
_CONTIGUOUS_MAKERS = frozenset(
    f"torch.{name}" for name in "cat concat concatenate stack empty zeros ones full arange randn rand randint tensor".split()
)
# In-place methods that change a tensor's strides.
_RESTRIDING = frozenset("transpose_ t_ as_strided_ resize_ swapdims_ swapaxes_ squeeze_ unsqueeze_ set_".split())
_FILLER = re.compile(r"(?:^|\.)(?:new_)?(?:zeros|ones|full|empty)(?:_like)?$")  # ``torch.zeros``, ``x.new_zeros``
# Copies this many lines apart or closer are "one after the other"; a tensor made this many
# lines before its ``.contiguous()`` or closer was "just made". The prefilter's windows agree;
# its matches look ahead for the second occurrence without consuming it (a match that ran on
# to it would hide the token that starts there).
_NEAR = 20
_JUST_MADE = 8
_MAKER_CALL = r"(?:cat|concat|concatenate|stack|empty|zeros|ones|full|arange|tensor|rand|randn|randint)\("
_TOKENS: Prefilter = (
    GuardedRegex(re.compile(r"\.clone\(\)(?=[\s\S]*?\.clone\(\))"), (".clone()",), context=_NEAR),
    GuardedRegex(re.compile(r"cat\(\s*[\[(](?=[\s\S]*?cat\(\s*[\[(])"), ("cat(",), context=_NEAR),
    GuardedRegex(re.compile(_MAKER_CALL + r"|\.contiguous\(\)(?=[\s\S]*?\.contiguous\(\))"), (".contiguous()",),
                 context=_JUST_MADE),
)


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _reference(expr: cst.BaseExpression) -> bool:
    """A plain name or attribute chain: ``x``, ``mb.pixel_values``, ``self.kv_block``."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name)


def _root(expr: cst.BaseExpression) -> str:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else ""


class PayloadCopiedTwice:
    """The same tensor cloned, or the same concatenation made, twice in one function; or a no-op ``.contiguous()``."""

    # Never reports in construction or other cold code: tokens there select nothing.
    reach = MatcherReach(reads="function", never_in_setup=True, never_in_cold=True)
    prefilter: Prefilter = _TOKENS
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        sites: dict[int, list[_Copy]] = {}
        functions: dict[int, cst.FunctionDef] = {}
        for call in ctx.nodes(cst.Call):
            function = ctx.enclosing_function(call)
            if function is None or in_cold_function(call, ctx):
                continue
            if _is_method(call, "contiguous") and not call.args:
                maker = _contiguous_source(call, function, ctx)
                if maker is not None:
                    why = f"was just made by `{maker}` and is already contiguous: `.contiguous()` returns it unchanged"
                    yield Match(call, {"X": _code(_receiver(call)), "WHY": why})
                continue
            copy = _copy(call, function, ctx)
            if copy is not None:
                functions[id(function)] = function
                sites.setdefault(id(function), []).append(copy)
        for key, found in sites.items():
            yield from _second_copies(found, functions[key], ctx)


@dataclass(frozen=True)
class _Copy:
    """A whole-tensor copy: ``x.clone()`` (key ``x``) or ``torch.cat([...])`` (key: the call's text)."""

    key: str
    shown: str  # how the impact names the payload
    roots: tuple[str, ...]  # the names whose rebinding makes a later copy another value
    call: cst.Call


def _is_method(call: cst.Call, name: str) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == name


def _receiver(call: cst.Call) -> cst.BaseExpression:
    assert isinstance(call.func, cst.Attribute)
    return call.func.value


def _copy(call: cst.Call, function: cst.FunctionDef, ctx: FileContext) -> _Copy | None:
    """The payload ``call`` copies whole: the receiver of ``.clone()``, or a ``torch.cat`` of a list
    literal holding at least one plain tensor reference; None for copies of fillers, slices, loop variables."""
    if _is_method(call, "clone") and not call.args and _reference(_receiver(call)):
        references = [_receiver(call)]
        key = shown = _code(_receiver(call))
    elif ctx.qualified_name(call.func) in _CATS and call.args and isinstance(call.args[0].value, (cst.List, cst.Tuple)):
        elements = call.args[0].value.elements
        references = [e.value for e in elements if isinstance(e, cst.Element) and _reference(e.value)]
        key = re.sub(r"#[^\n]*|\s+", "", _code(call))  # the same call, however it is laid out
        shown = _code(call) if len(_code(call)) <= 60 and "\n" not in _code(call) else f"torch.cat([{_code(references[0])}, ...])" if references else ""
    else:
        return None
    roots = tuple(_root(r) for r in references)
    if not roots or any(_filler_or_comprehension(root, call, function, ctx) for root in roots):
        return None
    return _Copy(key, shown, roots, call)


def _filler_or_comprehension(name: str, call: cst.Call, function: cst.FunctionDef, ctx: FileContext) -> bool:
    """``name`` is bound by an enclosing comprehension (another value per element), or to a fresh
    factory tensor (``pad = torch.zeros(...)``: a filler, needed in each structure it pads)."""
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return True
        if isinstance(ancestor, cst.FunctionDef):
            break
    for node in subtree(function.body):
        if isinstance(node, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
            value: cst.BaseExpression = node.value
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to":
                value = value.func.value  # ``torch.zeros(...).to(dtype)``
            if isinstance(value, cst.Call) and _FILLER.search(_code(value.func)):
                return True
    return False


def _second_copies(found: list[_Copy], function: cst.FunctionDef, ctx: FileContext) -> Iterator[Match]:
    """The second copy of each payload copied twice on one path, under the same conditions, with no rebinding between."""
    reported: set[str] = set()
    for index, copy in enumerate(found):
        if copy.key in reported:
            continue
        for first in (site for site in found[:index] if site.key == copy.key):
            if ctx.span(copy.call).line - ctx.span(first.call).line > _NEAR:
                continue
            if _inside(copy.call, first.call, ctx) or _inside(first.call, copy.call, ctx):
                continue  # one copy nested in the other
            if _exclusive(first.call, copy.call, ctx) or _loop_of(first.call, ctx) is not _loop_of(copy.call, ctx):
                continue
            if any(_rebound_between(root, first.call, copy.call, function, ctx) for root in copy.roots):
                continue
            reported.add(copy.key)
            what = "cloned" if _is_method(copy.call, "clone") else "concatenated the same way"
            why = (f"is {what} here after line {ctx.span(first.call).line} already made this copy in this function:"
                   " the whole payload is allocated and copied twice")
            yield Match(copy.call, {"X": copy.shown, "WHY": why})
            break


def _inside(node: cst.CSTNode, outer: cst.CSTNode, ctx: FileContext) -> bool:
    return any(ancestor is outer for ancestor in ctx.ancestors(node))


def _branches(node: cst.CSTNode, ctx: FileContext) -> dict[int, str]:
    """For every ``if`` (statement or expression) above ``node``: which side holds it."""
    sides: dict[int, str] = {}
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.IfExp)):
            if child is ancestor.body:
                sides[id(ancestor)] = "body"
            elif child is ancestor.orelse:
                sides[id(ancestor)] = "orelse"
        elif isinstance(ancestor, cst.Try):
            sides[id(ancestor)] = "handler" if isinstance(child, cst.ExceptHandler) else "try"
        if isinstance(ancestor, cst.FunctionDef):
            break
        child = ancestor
    return sides


def _exclusive(first: cst.CSTNode, second: cst.CSTNode, ctx: FileContext) -> bool:
    """The two may not both run: they lie under different conditions (two sides of an ``if``, or
    one ``if`` the other is outside; a ``try`` and its handler), or the first in a block that ends
    by leaving (``return``, ``raise``) and the second outside it."""
    a, b = _branches(first, ctx), _branches(second, ctx)
    if a != b:
        return True  # opposite sides of one ``if``, or one of them under a condition the other is not
    for ancestor in ctx.ancestors(first):
        if isinstance(ancestor, cst.FunctionDef):
            return False
        if isinstance(ancestor, cst.IndentedBlock) and _leaves_block(ancestor) and not _inside(second, ancestor, ctx):
            return True
    return False


def _leaves_block(block: cst.IndentedBlock) -> bool:
    last = block.body[-1] if block.body else None
    small = last.body[-1] if isinstance(last, cst.SimpleStatementLine) and last.body else None
    return isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break))


def _loop_of(node: cst.CSTNode, ctx: FileContext) -> cst.CSTNode | None:
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.For, cst.While, cst.CompFor, cst.FunctionDef)):
            return None if isinstance(ancestor, cst.FunctionDef) else ancestor
    return None


def _rebound_between(name: str, first: cst.CSTNode, second: cst.CSTNode, function: cst.FunctionDef,
                     ctx: FileContext) -> bool:
    """Something binds ``name`` (or writes the attribute chain) between the two copies, by line."""
    low, high = ctx.span(first).line, ctx.span(second).line
    for node in subtree(function.body):
        targets: list[cst.CSTNode] = []
        if isinstance(node, cst.Assign) and _inside(first, node, ctx):
            if any(isinstance(n, cst.Name) and n.value == name for t in node.targets for n in subtree(t.target)):
                return True  # ``x = torch.cat([x, y])``: the first copy rebinds the name
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            targets = [node.asname.name]
        for target in targets:
            if low <= ctx.span(target).line <= high and any(
                isinstance(n, cst.Name) and n.value == name for n in subtree(target)
            ):
                return True
    return False


def _contiguous_source(call: cst.Call, function: cst.FunctionDef, ctx: FileContext) -> str | None:
    """What made ``call``'s receiver contiguous: a maker called right there, or the one binding of its name."""
    receiver = _receiver(call)
    if isinstance(receiver, cst.Call):
        return _maker(receiver, ctx) if ctx.span(call).line - ctx.span(receiver).line <= _JUST_MADE else None
    if not isinstance(receiver, cst.Name):
        return None
    name = receiver.value
    values = plain_assignments(function, name)
    if values is None or any(
        isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _RESTRIDING
        and isinstance(node.func.value, cst.Name) and node.func.value.value == name
        for node in subtree(function.body)
    ):
        return None
    if len(values) != 1 or not isinstance(values[0], cst.Call):
        return None
    if name in parameter_names(function) and not _unconditional(values[0], function, ctx):
        return None  # the caller's tensor on the paths that do not rebind it
    if not 0 < ctx.span(call).line - ctx.span(values[0]).line <= _JUST_MADE:
        return None
    return _maker(values[0], ctx)


def _maker(call: cst.Call, ctx: FileContext) -> str | None:
    """``torch.cat``, ``torch.empty``, ``.contiguous()``...: a call whose result is contiguous; None otherwise."""
    if any(a.keyword is not None and a.keyword.value in ("memory_format", "out") for a in call.args):
        return None
    if _is_method(call, "contiguous") and not call.args:
        return ".contiguous()"
    qualified = ctx.qualified_name(call.func) or ""
    return qualified if qualified in _CONTIGUOUS_MAKERS else None


def _unconditional(value: cst.BaseExpression, function: cst.FunctionDef, ctx: FileContext) -> bool:
    """``value`` is assigned by a statement of the function's own body, outside any ``if`` or loop."""
    line = ctx.parent(ctx.parent(value) or value)
    return isinstance(line, cst.SimpleStatementLine) and ctx.parent(line) is function.body
