"""Lifecycle matcher for per-request registry entries a coroutine removes after awaiting.

A request's entry (its output queue, its stream, its bookkeeping) is registered by one
method and removed by another that awaits the request's work first. Every ``await`` is a
point where the task can be cancelled (a client disconnects, a timeout fires) or the
awaited call can raise; a removal placed after it as a plain statement is skipped then,
and the entry stays for ever.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator, Sequence

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import subtree
from ..imports import dotted_name
from ..options import Option
from .failure_paths import removal_from_self_registry
from .teardown import name_words

_REMOVERS = frozenset({"pop", "remove", "discard"})
_MUTATORS = frozenset({"append", "add", "extend", "update", "put", "put_nowait"})
# Words of a coroutine's name that make it a teardown: it awaits the release (terminate a
# model, abort a request) and drops the entry only when that succeeded, on purpose.
_TEARDOWN_WORDS = frozenset({
    "terminate", "abort", "cancel", "stop", "remove", "delete", "unregister", "close", "shutdown",
    "destroy", "free", "release", "kill", "cleanup", "evict", "unload", "finish",
})


class RemovalAfterAwaitNotInFinally:
    """``await ...`` then ``self.entries.pop(request_id)`` as a plain statement, the entry registered elsewhere."""

    reach = MatcherReach(whole_class=True)  # the registration lives in another method
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = removal_from_self_registry()

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for line in ctx.nodes(cst.SimpleStatementLine):
            function = ctx.enclosing_function(line)
            block = ctx.parent(line)
            if function is None or function.asynchronous is None or not isinstance(block, cst.IndentedBlock):
                continue
            removal = _removal(line, _parameters(function), ctx)
            if removal is None or _guarded(line, function, ctx):
                continue
            container, key, node = removal
            before = list(block.body)[: list(block.body).index(line)]
            cls = ctx.enclosing_class(function)
            if cls is None or not any(_awaits(s) for s in before) or _writes(function, container, ctx):
                continue
            if name_words(function.name.value) & _TEARDOWN_WORDS:
                continue  # removing only once the awaited teardown succeeded is the intent there  # a registration in this function is ``registration-not-undone-on-failure``'s
            if _registered_elsewhere(cls, function, container, ctx):
                yield Match(node, {"CONTAINER": container, "KEY": key, "FUNCTION": function.name.value})


def _parameters(function: cst.FunctionDef) -> set[str]:
    params = function.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)} - {"self"}


def _caller_key(key: cst.BaseExpression, parameters: set[str]) -> bool:
    """A key the caller hands in: a parameter, or an attribute of one (``request.request_id``)."""
    root = dotted_name(key)
    return root is not None and root.partition(".")[0] in parameters


def _removal(line: cst.SimpleStatementLine, parameters: set[str], ctx: FileContext) -> tuple[str, str, cst.CSTNode] | None:
    for small in line.body:
        if isinstance(small, cst.Del) and isinstance(small.target, cst.Subscript) and len(small.target.slice) == 1:
            target, index = small.target, small.target.slice[0].slice
            if isinstance(index, cst.Index) and _on_self(target.value) and _caller_key(index.value, parameters):
                return ctx.code(target.value), ctx.code(index.value), small
        for node in subtree(small):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _REMOVERS:
                if _on_self(node.func.value) and node.args and _caller_key(node.args[0].value, parameters):
                    return ctx.code(node.func.value), ctx.code(node.args[0].value), node
    return None


def _on_self(node: cst.BaseExpression) -> bool:
    name = dotted_name(node)
    return name is not None and name.startswith("self.")


def _guarded(node: cst.CSTNode, function: cst.FunctionDef, ctx: FileContext) -> bool:
    """Inside a ``try`` (its handlers or ``finally`` decide) or a ``with`` block."""
    for ancestor in ctx.ancestors(node):
        if ancestor is function:
            return False
        if isinstance(ancestor, (cst.Try, cst.TryStar, cst.With, cst.ExceptHandler, cst.Finally)):
            return True
    return False


def _awaits(statement: cst.CSTNode) -> bool:
    return any(
        isinstance(n, cst.Await) or isinstance(n, (cst.For, cst.With)) and n.asynchronous is not None
        for n in subtree(statement)
    )


def _writes(function: cst.FunctionDef, container: str, ctx: FileContext) -> bool:
    """``container[k] = v``, ``container.setdefault(...)``, or ``container[k].append(...)`` (a defaultdict read)."""
    for node in subtree(function.body):
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript):
            if ctx.code(node.target.value) == container:
                return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            owner = node.func.value
            if node.func.attr.value in ("setdefault", "add", "append") and ctx.code(owner) == container:
                return True
            if node.func.attr.value in _MUTATORS and isinstance(owner, cst.Subscript) and ctx.code(owner.value) == container:
                return True
    return False


def _registered_elsewhere(cls: cst.ClassDef, function: cst.FunctionDef, container: str, ctx: FileContext) -> bool:
    methods: Sequence[cst.FunctionDef] = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s is not function]
    return any(_writes(m, container, ctx) for m in methods if m.name.value != "__init__")
