"""Walking LibCST trees: a subtree's nodes without LibCST's visitor machinery, and the
value a name was last bound to before a use."""

from __future__ import annotations

import dataclasses
import functools
from typing import Iterator, TypeVar

import libcst as cst

from .base import TRIVIA_FIELDS, FileContext


def subtree(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and its descendants, for small subtrees (a condition, a handler body);
    whole files are read through ``FileContext.nodes``, never walked again.

    Reads the node fields directly: LibCST's ``children`` runs a visitor per call.
    Formatting-only fields (whitespace, commas, parentheses) are skipped."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for name in _child_fields(type(current)):
            value = getattr(current, name)
            kind = type(value)
            if kind is tuple or kind is list:
                stack.extend(reversed([item for item in value if _is_cst(type(item))]))
            elif _is_cst(kind):
                stack.append(value)


Holder = TypeVar("Holder", bound=cst.CSTNode)


def holders_by(node: cst.CSTNode, ctx: FileContext, kind: type[Holder], part: str,
               stop: tuple[type[cst.CSTNode], ...]) -> Iterator[Holder]:
    """Each ancestor of ``node`` of type ``kind`` whose field ``part`` holds it (the ``body``
    of a ``try`` or of a conditional expression), innermost first, up to the first
    ancestor of a ``stop`` type."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, stop):
            return
        if isinstance(ancestor, kind) and child is getattr(ancestor, part):
            yield ancestor
        child = ancestor


@functools.lru_cache(maxsize=None)
def _child_fields(kind: type) -> tuple[str, ...]:
    """Fields that may hold code, last first (the stack pops the first field first)."""
    return tuple(reversed([f.name for f in dataclasses.fields(kind) if not f.name.startswith(TRIVIA_FIELDS)]))


_IS_CST: dict[type, bool] = {}


def _is_cst(kind: type) -> bool:
    # A dict lookup: CSTNode is an ABC, and isinstance() against an ABC is slow.
    flag = _IS_CST.get(kind)
    if flag is None:
        flag = _IS_CST[kind] = issubclass(kind, cst.CSTNode)
    return flag


def bound_before(name: cst.Name, ctx: FileContext) -> cst.BaseExpression | None:
    """The value of the last plain assignment to ``name`` before this use, in source order
    (``None`` when there is none, or when a loop or unpacking binds it too)."""
    function = ctx.enclosing_function(name)
    if function is None:
        return None
    value: cst.BaseExpression | None = None
    for node in subtree(function.body):  # pre-order: source order
        if node is name:
            return value
        if isinstance(node, cst.Assign) and any(_binds(t.target, name.value) for t in node.targets):
            plain = all(isinstance(t.target, cst.Name) for t in node.targets)
            value = node.value if plain and not any(n is name for n in subtree(node)) else None
        elif isinstance(node, (cst.For, cst.CompFor, cst.AugAssign)) and _binds(node.target, name.value):
            value = None
    return None


def _binds(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds(e.value, name) for e in target.elements)
    return False


def binds(function: cst.FunctionDef, name: str) -> bool:
    """``function`` binds ``name`` itself: a parameter, or anything ``bound_in_body`` reads."""
    params = function.params
    every = (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg)
    return any(isinstance(p, cst.Param) and p.name.value == name for p in every) or bound_in_body(function, name)


# Casts that keep a value: ``norm_type = float(norm_type)`` still holds what was passed.
_KEEPING_CASTS = frozenset({"float", "int", "bool", "str"})


def bound_in_body(function: cst.FunctionDef, name: str, *, casts_keep: bool = False) -> bool:
    """``function``'s body binds ``name``: an assignment of any form, a loop, ``with ... as``,
    a walrus, a comprehension, or a ``global``/``nonlocal`` statement. With ``casts_keep``,
    ``name = float(name)`` (``int``, ``bool``, ``str``) does not count: the value is kept."""
    for node in subtree(function.body):
        targets: list[cst.CSTNode] = []
        if isinstance(node, cst.Assign) and casts_keep and _casts_itself(node, name):
            continue
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, cst.AsName):
            targets = [node.name]
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            targets = [item.name for item in node.names]
        if any(isinstance(n, cst.Name) and n.value == name for target in targets for n in subtree(target)):
            return True
    return False


def _casts_itself(assign: cst.Assign, name: str) -> bool:
    value = assign.value
    return (len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) and assign.targets[0].target.value == name
            and isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in _KEEPING_CASTS
            and len(value.args) == 1 and isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == name)
