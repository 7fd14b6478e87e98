"""Lifecycle matchers for what a coroutine does while it holds the event loop.

Code in an ``async def`` runs on the loop's one thread until its next ``await``: a
call that blocks there stops every other task (health checks, cancellation, the
consumers of other requests). And ``except Exception`` in a coroutine does not see a
cancellation: ``asyncio.CancelledError`` derives from ``BaseException``, so a handler
that rolls back there is skipped exactly when a client disconnects or a launch is
cancelled.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, child_nodes
from ..context import caught_types, subtree
from ..imports import dotted_name
from ..options import Option
from .teardown import name_words

# Calls that hold the calling thread until something else finishes, by qualified name.
BLOCKING_CALLS = (
    "time.sleep", "gc.collect", "ray.get", "ray.wait", "subprocess.run", "subprocess.call",
    "subprocess.check_call", "subprocess.check_output", "requests.get", "requests.post",
    "requests.put", "requests.delete", "requests.request", "urllib.request.urlopen",
)  # fmt: skip
# Methods that block when called with no argument: ``future.get()`` / ``future.result()``
# on a future a call just returned, ``thread.join()``. (``dict.get`` needs a key, a string's
# ``join`` an iterable.) ``.result()`` and ``.get()`` are read on a call's return value only:
# a finished ``asyncio`` task's ``result()`` and a ``ContextVar.get()`` return at once.
_ON_CALL_RESULT = frozenset({"get", "result"})
_ANY_RECEIVER = frozenset({"join"})


class BlockingCallInCoroutine:
    """A call that blocks the thread (a future's ``get()``, ``time.sleep``, a full GC) inside ``async def``."""

    reach = MatcherReach(reads="function")  # the ``async`` of the enclosing ``def`` decides
    OPTIONS: ClassVar[dict[str, Option]] = {
        "calls": Option("strings", BLOCKING_CALLS, "qualified names of calls that block the calling thread"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.calls = frozenset(options["calls"])
        # A call's own name where it is distinctive (``sleep(``, ``collect(``), else its
        # module (``ray.get(``, ``requests.post(``): ``get(``/``run(`` alone are everywhere.
        tails = {name.rpartition(".")[2] for name in self.calls}
        common = {"get", "post", "put", "delete", "request", "run", "call", "wait"}
        modules = {name.partition(".")[0] for name in self.calls if name.rpartition(".")[2] in common}
        self.prefilter: Prefilter = (
            re.compile(r"\.(?:get|result|join)\(\s*\)"),
            re.compile(r"\b(?:" + "|".join(sorted(tails - common)) + r")\s*\("),
            re.compile(r"\b(?:" + "|".join(sorted(modules)) + r")\s*\."),
        )

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            blocking = self._blocking(call, ctx)
            if blocking is None or isinstance(ctx.parent(call), cst.Await):
                continue
            function = _innermost_function(call, ctx)
            if function is not None and function.asynchronous is not None:
                yield Match(call, {"CALL": blocking, "FUNCTION": function.name.value})

    def _blocking(self, call: cst.Call, ctx: FileContext) -> str | None:
        func = call.func
        if isinstance(func, cst.Attribute) and not call.args:
            method = func.attr.value
            if method in _ON_CALL_RESULT and isinstance(func.value, cst.Call):
                if _asked_not_to_block(func.value, ctx):
                    return None  # ``sock.recv(flags=zmq.NOBLOCK).result()``: done when it returns
                return f"{dotted_name(func.value.func) or '...'}(...).{method}()"
            if method in _ANY_RECEIVER and not isinstance(func.value, (cst.BaseString, cst.FormattedString)):
                return ctx.code(func) + "()"
        qualified = ctx.qualified_name(func)
        return ctx.code(func) + "()" if qualified in self.calls else None


def _asked_not_to_block(call: cst.Call, ctx: FileContext) -> bool:
    """The call is told not to wait (``flags=zmq.NOBLOCK``, ``zmq.DONTWAIT``, ``block=False``,
    ``blocking=False``, ``timeout=0``): it returns what is ready or raises, so the future or
    result it hands back is already settled."""
    for argument in call.args:
        keyword = argument.keyword.value if argument.keyword is not None else ""
        value = ctx.code(argument.value).strip()
        if keyword in ("block", "blocking") and value == "False":
            return True
        if keyword == "timeout" and value in ("0", "0.0"):
            return True
        if re.search(r"\b(NOBLOCK|DONTWAIT)\b", value):
            return True
    return False


def _innermost_function(node: cst.CSTNode, ctx: FileContext) -> cst.FunctionDef | None:
    """The ``def`` whose body runs ``node``; None inside a lambda (it runs later, elsewhere)."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Lambda):
            return None
        if isinstance(ancestor, cst.FunctionDef):
            return ancestor
    return None


# Words of a called method's name that release or roll back what the ``try`` set up.
ROLLBACK_WORDS = (
    "release", "free", "remove", "close", "cleanup", "clean", "unregister", "destroy", "terminate",
    "rollback", "deallocate", "kill", "unload", "delete", "discard", "undo", "stop", "abort", "cancel",
)  # fmt: skip
_CANCELLATION = frozenset({"BaseException", "CancelledError", "asyncio.CancelledError", "asyncio.exceptions.CancelledError"})


class RollbackSkippedOnCancellation:
    """``except Exception:`` that rolls back and re-raises around awaits: a cancellation skips the rollback."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {
        "rollback-words": Option("strings", ROLLBACK_WORDS, "words of called names that release or roll back"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.words = frozenset(options["rollback-words"])
        # ``Exception`` itself: a handler's tuple may be wrapped over lines.
        self.prefilter: Prefilter = (re.compile(r"\bException\b"),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for statement in ctx.nodes(cst.Try):
            if statement.finalbody is not None or any(_sees_cancellation(h) for h in statement.handlers):
                continue
            function = _innermost_function(statement, ctx)
            if function is None or function.asynchronous is None or not _awaits(statement.body):
                continue
            for handler in statement.handlers:
                rollback = self._rollback(handler, ctx) if _catches_exception(handler) and _reraises(handler) else None
                if rollback is not None:
                    yield Match(handler, {"CALL": rollback, "FUNCTION": function.name.value})

    def _rollback(self, handler: cst.ExceptHandler, ctx: FileContext) -> str | None:
        for node in subtree(handler.body):
            if isinstance(node, cst.Call) and not _cancels_a_future(node, ctx):
                name = dotted_name(node.func) or ""
                if name_words(name.rpartition(".")[2]) & self.words:
                    return name
        return None


# An asyncio future as the type engine prints it (``_asyncio.Future[Unknown]``); a Task
# (``_asyncio.Task[None]``) runs work, and an executor's future may hold a queued call.
_ASYNCIO_FUTURE = re.compile(r"(?:_asyncio|asyncio(?:\.futures)?)\.Future\b")


def _cancels_a_future(call: cst.Call, ctx: FileContext) -> bool:
    """``fut.cancel()`` of what the type engine proves an asyncio future (``loop.create_future()``):
    nothing runs for it and it holds nothing, so cancelling it releases nothing; only its
    awaiters are told."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "cancel"):
        return False
    return _ASYNCIO_FUTURE.match(ctx.value_type(func.value) or "") is not None


def _caught(handler: cst.ExceptHandler) -> list[str]:
    if handler.type is None:
        return ["BaseException"]
    return [dotted_name(t) or "" for t in caught_types(handler)]


def _sees_cancellation(handler: cst.ExceptHandler) -> bool:
    return any(name in _CANCELLATION or name.endswith(".CancelledError") for name in _caught(handler))


def _catches_exception(handler: cst.ExceptHandler) -> bool:
    return "Exception" in _caught(handler)


def _reraises(handler: cst.ExceptHandler) -> bool:
    """The handler ends by raising: it rolls back for the caller, who sees the failure."""
    body = handler.body.body if isinstance(handler.body, cst.IndentedBlock) else ()
    last = body[-1] if body else None
    return isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Raise) for s in last.body)


def _awaits(body: cst.BaseSuite) -> bool:
    """An ``await`` (or ``async for``/``async with``) the ``try`` body itself runs."""
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Await) or isinstance(node, (cst.For, cst.With)) and node.asynchronous is not None:
            return True
        if not isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            stack.extend(child_nodes(node))
    return False



class ConsumerLoopEndsOnProducerFlag:
    """``while not self.done: await self.queue.get()`` where the producer sets ``done`` as it enqueues the end."""

    reach = MatcherReach(whole_class=True)  # the producer is another method of the class
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (re.compile(r"while\s+not\s+self\s*\.\s*\w+\s*:"),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for loop in ctx.nodes(cst.While):
            test = loop.test
            if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
                continue
            flag = _self_attribute(test.expression)
            cls = ctx.enclosing_class(loop)
            if flag is None or cls is None:
                continue
            for queue in _queues_read(loop.body):
                if _set_with_final_item(cls, flag, queue):
                    yield Match(loop, {"FLAG": flag, "QUEUE": queue})
                    break


def _self_attribute(node: cst.CSTNode) -> str | None:
    return node.attr.value if isinstance(node, cst.Attribute) and dotted_name(node.value) == "self" else None


def _queues_read(body: cst.CSTNode) -> Iterator[str]:
    """``q`` of each ``self.q.get()`` / ``self.q.get_nowait()`` the loop body calls."""
    for node in subtree(body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("get", "get_nowait"):
            name = _self_attribute(node.func.value)
            if name is not None and not node.args:
                yield name


def _set_with_final_item(cls: cst.ClassDef, flag: str, queue: str) -> bool:
    """A method of ``cls`` both sets ``self.<flag> = True`` and puts into ``self.<queue>``."""
    for method in cls.body.body:
        if not isinstance(method, cst.FunctionDef):
            continue
        sets = puts = False
        for node in subtree(method.body):
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == "True":
                sets = sets or any(_self_attribute(t.target) == flag for t in node.targets)
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("put", "put_nowait"):
                puts = puts or _self_attribute(node.func.value) == queue
        if sets and puts:
            return True
    return False
