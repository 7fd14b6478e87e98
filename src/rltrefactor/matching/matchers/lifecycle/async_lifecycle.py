"""Lifecycle matchers for asyncio code: what other tasks see while a task waits.

Every ``await`` lets other tasks run. A shared loop that awaits one consumer stalls
all of them; a cancel that awaits before announcing itself races its consumers; a
handler that awaits its cleanup can itself be cancelled half-way.
"""

from __future__ import annotations

import re
from typing import ClassVar, Any, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import subtree
from ..imports import dotted_name
from ..options import Option
from .teardown import cased, is_name, name_words


_DELIVERY = re.compile(r"^(?:put|send)(?:_\w+)?$")


class AwaitedDeliveryInFanOutLoop:
    """``await consumer.put(...)`` for each consumer in a loop: one slow consumer stalls all."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (re.compile(r"await\b[^\n]*\.(?:put|send)\w*\s*\("),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for awaited in ctx.nodes(cst.Await):
            call = awaited.expression
            if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and _DELIVERY.match(call.func.attr.value)):
                continue
            receiver = _root_name(call.func.value)
            loop = _enclosing_loop(awaited, ctx)
            if receiver is None or loop is None or not _varies_per_iteration(receiver, loop):
                continue
            yield Match(awaited, {"CALL": ctx.code(call.func), "LOOP": ctx.code(loop.iter)})


def _root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) and node.value != "self" else None


def _enclosing_loop(node: cst.CSTNode, ctx: FileContext) -> cst.For | None:
    """The innermost ``for`` around ``node`` within an ``async def``."""
    loop = None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.For) and loop is None:
            loop = ancestor
        if isinstance(ancestor, (cst.Lambda, cst.FunctionDef)):
            return loop if isinstance(ancestor, cst.FunctionDef) and ancestor.asynchronous is not None else None
    return None


def _varies_per_iteration(name: str, loop: cst.For) -> bool:
    """``name`` is the loop's target or is bound in its body: a different consumer each time."""
    if any(is_name(n, name) for n in subtree(loop.target)):
        return True
    for node in subtree(loop.body):
        if isinstance(node, cst.AssignTarget) and is_name(node.target, name):
            return True
        if isinstance(node, cst.NamedExpr) and is_name(node.target, name):
            return True
    return False


# Cancel and abort announce an intent other tasks must see at once. A close or stop
# often sets its flag last on purpose: "closed" means done, and the awaited flush
# before it still needs the object open.
_ENDING_WORDS = frozenset({"cancel", "abort"})


class StateFlagSetAfterAwait:
    """``await ...`` then ``self.cancelled = True`` in an async cancel/abort: consumers race the flag."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (re.compile(rf"async\s+def\s+\w*(?:{cased(_ENDING_WORDS)})"),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for function in ctx.nodes(cst.FunctionDef):
            if function.asynchronous is None or not name_words(function.name.value) & _ENDING_WORDS:
                continue
            if not isinstance(function.body, cst.IndentedBlock):
                continue
            awaited = None
            for statement in function.body.body:
                flag = _flag_assignment(statement)
                if flag is not None and awaited is not None:
                    yield Match(statement, {"FLAG": flag, "AWAIT": awaited, "FUNCTION": function.name.value})
                elif awaited is None and any(isinstance(n, cst.Await) for n in subtree(statement)):
                    awaited = ctx.code(next(n for n in subtree(statement) if isinstance(n, cst.Await)))


def _flag_assignment(statement: cst.CSTNode) -> str | None:
    """``self.x = True/False`` as a statement of its own."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            if isinstance(target, cst.Attribute) and dotted_name(target.value) == "self":
                if isinstance(small.value, cst.Name) and small.value.value in ("True", "False"):
                    return f"self.{target.attr.value}"
    return None


# Verbs of the calls a failure or cancellation handler awaits to clean up.
CLEANUP_VERBS = (
    "abort", "cancel", "close", "aclose", "release", "free", "cleanup", "shutdown", "stop",
    "teardown", "destroy", "unregister", "disconnect", "terminate", "deallocate", "finish",
)  # fmt: skip


class UnshieldedAwaitInHandler:
    """``except ...: await self.abort(rid)`` unshielded: a further cancel stops the cleanup half-way."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {"cleanup-verbs": Option("strings", CLEANUP_VERBS, "words of awaited calls that clean up")}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.verbs = frozenset(options["cleanup-verbs"])
        # The awaited cleanup call on the ``await`` line (``except`` alone is everywhere);
        # the whole function is read.
        self.prefilter: Prefilter = (re.compile(rf"await\b[^\n]*?(?:{cased(self.verbs)})"),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for handler in ctx.nodes(cst.ExceptHandler):
            function = ctx.enclosing_function(handler)
            if function is None or function.asynchronous is None:
                continue
            for awaited in subtree(handler.body):
                call = awaited.expression if isinstance(awaited, cst.Await) else None
                if not isinstance(call, cst.Call) or ctx.enclosing_function(awaited) is not function:
                    continue  # awaited in a function defined inside the handler
                func = call.func
                verb = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
                if set(verb.lower().split("_")) & self.verbs:  # verbs, not "cancelled_acquire"
                    caught = ctx.code(handler.type) if handler.type is not None else "everything"
                    yield Match(awaited, {"CALL": ctx.code(func), "CAUGHT": caught})
