"""Lifecycle matcher for a key a coroutine refuses twice and leaves registered when it fails.

A coroutine first refuses a key that is already registered (``assert uid not in
self.models``, or ``if uid in self.models: raise``), then registers it
(``self.models[uid] = ref``), then awaits more work (report the state, wait for the
load). When one of those awaits raises or the task is cancelled and nothing removes the
entry, the key stays registered, and the coroutine's own test refuses every retry with
the same key until the process restarts. Another method of the class removes entries of
that container, so they are meant to go.
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import AllOf, Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, child_nodes, own_nodes
from ..options import Option

_REMOVERS = frozenset({"pop", "remove", "discard"})
_BROAD = frozenset({"Exception", "BaseException"})
# Calls that only report: a key passed to them is not a rollback.
_REPORTERS = frozenset({
    "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "print", "format",
})
_NESTED = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


@dataclass(frozen=True)
class RefusedKey:
    """``container[key]`` a coroutine refuses when present and then registers."""

    container: str  # source text, ``self.models``
    key: str  # source text, ``model_uid``


class RefusedKeyLeftOnFailure:
    """``assert k not in self.d``; ``self.d[k] = v``; ``await ...`` with no rollback of ``self.d[k]``."""

    reach = MatcherReach(whole_class=True)  # the removal lives in another method
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        # The refusing test (``assert k not in self.d``, or ``if k in self.d: raise``) and the
        # await (or ``async with``/``async for``) after it share the class, the top-level statement.
        awaits = re.compile(r"\bawait\b|\basync\s+(?:with|for)\b")
        self.prefilter: Prefilter = (AllOf((" in self.", awaits, re.compile(r"\b(?:assert|raise)\b"))),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for function in ctx.nodes(cst.FunctionDef):
            cls = _class_of_method(function, ctx)
            if function.asynchronous is None or cls is None:
                continue  # only methods, only coroutines: every await there is a cancellation point
            own = list(own_nodes(function.body))
            for index, refused in _refusals(own, ctx):
                registration = _registration(own[index + 1 :], refused, ctx)
                if registration is None or not _removed_by_sibling(cls, function, refused.container, ctx):
                    continue
                if any(_removes(n, refused, ctx) for n in own[own.index(registration) :]):
                    continue  # removed here too: ``registration-not-undone-on-failure`` reads that
                exposed = _first_exposed_await(registration, function, refused, ctx)
                if exposed is not None:
                    yield Match(exposed, {"CONTAINER": refused.container, "KEY": refused.key})
                    break  # one report per coroutine


def _class_of_method(function: cst.FunctionDef, ctx: FileContext) -> cst.ClassDef | None:
    """The class ``function`` is defined in directly; None for functions and nested ones."""
    block = ctx.parent(function)
    owner = ctx.parent(block) if block is not None else None
    return owner if isinstance(owner, cst.ClassDef) else None



def _refusals(own: list[cst.CSTNode], ctx: FileContext) -> Iterator[tuple[int, RefusedKey]]:
    """``assert k not in self.d`` and ``if k in self.d: raise ...``, with their place in ``own``."""
    for index, node in enumerate(own):
        if isinstance(node, cst.Assert):
            refused = _membership(node.test, cst.NotIn, ctx)
        elif isinstance(node, cst.If) and _raises(node.body):
            refused = _membership(node.test, cst.In, ctx)
        else:
            continue
        if refused is not None:
            yield index, refused


def _membership(test: cst.BaseExpression, operator: type, ctx: FileContext) -> RefusedKey | None:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    container = ctx.code(target.comparator)
    if not isinstance(target.operator, operator) or not container.startswith("self."):
        return None
    if isinstance(test.left, (cst.BaseString, cst.Integer)):
        return None  # a literal key is a flag, not an id a caller retries with
    return RefusedKey(container, ctx.code(test.left))


def _raises(body: cst.BaseSuite) -> bool:
    statements = body.body
    return any(isinstance(s, cst.SimpleStatementLine) and any(isinstance(x, cst.Raise) for x in s.body) for s in statements)


def _registration(after: list[cst.CSTNode], refused: RefusedKey, ctx: FileContext) -> cst.SimpleStatementLine | None:
    """The statement line holding ``container[key] = value``, after the refusal."""
    for node in after:
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and _is_entry(node.targets[0].target, refused, ctx):
            line = ctx.parent(node)
            return line if isinstance(line, cst.SimpleStatementLine) else None
    return None


def _is_entry(node: cst.BaseExpression, refused: RefusedKey, ctx: FileContext) -> bool:
    return (
        isinstance(node, cst.Subscript) and len(node.slice) == 1 and ctx.code(node.value) == refused.container
        and ctx.code(node.slice[0]) == refused.key
    )


def _first_exposed_await(
    registration: cst.SimpleStatementLine, function: cst.FunctionDef, refused: RefusedKey, ctx: FileContext,
) -> cst.CSTNode | None:
    """The first await that runs after the registration with nothing to remove the entry
    when it raises: None when a ``try`` around it rolls back, swallows the failure, or
    the entry is removed first."""
    child: cst.CSTNode = registration
    for ancestor in ctx.ancestors(registration):
        if ancestor is function:
            return None
        if isinstance(ancestor, cst.Try) and child is ancestor.body and (_rolls_back(ancestor, refused, ctx) or _swallows(ancestor)):
            return None
        if isinstance(ancestor, cst.IndentedBlock):
            body: list[cst.CSTNode] = list(ancestor.body)
            for statement in body[body.index(child) + 1 :]:
                found = _scan(statement, refused, ctx)
                if found is _DECIDED:
                    return None
                if found is not None:
                    return found
        child = ancestor
    return None


_DECIDED = cst.Pass()  # the region decides what happens to the entry


def _scan(statement: cst.CSTNode, refused: RefusedKey, ctx: FileContext) -> cst.CSTNode | None:
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, _NESTED):
            continue  # defined here, run elsewhere
        if isinstance(node, cst.Try):
            if _rolls_back(node, refused, ctx):
                return _DECIDED
            # Its handlers run only on a failure; a body whose failures are swallowed cannot fail.
            parts: list[cst.CSTNode] = [] if _swallows(node) else [node.body]
            parts += [p for p in (node.orelse, node.finalbody) if p is not None]
            stack.extend(reversed(parts))
            continue
        if _removes(node, refused, ctx):
            return _DECIDED
        if isinstance(node, cst.Await) or isinstance(node, (cst.For, cst.With)) and node.asynchronous is not None:
            return node
        stack.extend(reversed([c for c in child_nodes(node) if not isinstance(c, _NESTED)]))
    return None


def _removes(node: cst.CSTNode, refused: RefusedKey, ctx: FileContext) -> bool:
    if isinstance(node, cst.Del) and isinstance(node.target, cst.Subscript):
        return ctx.code(node.target.value) == refused.container
    return (
        isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _REMOVERS
        and ctx.code(node.func.value) == refused.container
    )


def _rolls_back(node: cst.Try, refused: RefusedKey, ctx: FileContext) -> bool:
    """A handler or the ``finally`` touches the container, or hands the key to a call that
    does more than report it (``await self._clean_up(uid)``)."""
    for part in (*node.handlers, node.finalbody):
        if part is None:
            continue
        for inner in own_nodes(part):
            if isinstance(inner, (cst.Attribute, cst.Subscript)) and ctx.code(inner) == refused.container:
                return True
            if isinstance(inner, cst.Call) and _callee(inner.func) not in _REPORTERS:
                if any(ctx.code(arg.value) == refused.key for arg in inner.args):
                    return True
    return False


def _callee(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _swallows(node: cst.Try) -> bool:
    """A bare or broad handler that does not raise again: failures in the body end there."""
    for handler in node.handlers:
        kind = handler.type
        broad = kind is None or isinstance(kind, cst.Name) and kind.value in _BROAD
        if broad and not any(isinstance(n, cst.Raise) for n in own_nodes(handler.body)):
            return True
    return False


def _removed_by_sibling(cls: cst.ClassDef, function: cst.FunctionDef, container: str, ctx: FileContext) -> bool:
    methods = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s is not function]
    refused = RefusedKey(container, "")
    return any(_removes(n, refused, ctx) for m in methods for n in own_nodes(m.body))
