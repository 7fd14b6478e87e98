"""Tasks and futures whose outcome nobody reads.

The event loop keeps only a weak reference to a task (asyncio docs, ``create_task``:
"save a reference to the result of this function, to avoid a task disappearing
mid-execution"), and an exception inside a task or a future surfaces only when its
result is read. A task started and dropped may be garbage-collected half-way, and its
failure is at best a log line at exit; a future from ``executor.submit`` that nobody
reads swallows its exception. A task cancelled and then dropped from its owner's
bookkeeping runs its cleanup later, unobserved: nothing waits for it or sees what it
raises while cancelling.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, own_nodes
from ..context import bound_before, subtree, unpacked
from ..options import Option
from .teardown import del_targets, is_name

_TASK_FUNCTIONS = frozenset({"asyncio.create_task", "asyncio.ensure_future", "asyncio.run_coroutine_threadsafe"})
# Methods that start a task or a future on whatever runs them (a loop, an executor).
_TASK_METHODS = frozenset({"create_task", "run_in_executor"})
_EXECUTORS = re.compile(r"(?:^|\.)(?:ThreadPoolExecutor|ProcessPoolExecutor)$")
# What observes a task: its result, exception or cancellation, a callback, or a wait.
_OBSERVERS = frozenset({"result", "exception", "cancelled", "add_done_callback", "join"})
_WAITS = frozenset({"asyncio.gather", "asyncio.wait", "asyncio.wait_for", "asyncio.shield", "concurrent.futures.wait",
                    "concurrent.futures.as_completed", "asyncio.as_completed"})


class TaskResultDiscarded:
    """``asyncio.create_task(...)`` or ``executor.submit(...)`` as a statement: no reference, no error."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = ("create_task", "ensure_future", "run_coroutine_threadsafe", "run_in_executor",
                                     re.compile(r"\.submit\s*\("))

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            started = _starts_task(call, ctx)
            if started is None:
                continue
            function = ctx.enclosing_function(call)
            if function is not None and function.name.value == "__del__":
                continue  # a finalizer has nowhere to keep the task
            parent = ctx.parent(call)
            if isinstance(parent, cst.Expr):
                yield Match(call, {"CALL": started, "HOW": "is a statement of its own"})
            elif isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1:
                target = parent.targets[0].target
                if isinstance(target, cst.Name) and function is not None and not _read_later(target, function):
                    yield Match(call, {"CALL": started, "HOW": f"is bound to `{target.value}`, which is never read"})


def _starts_task(call: cst.Call, ctx: FileContext) -> str | None:
    """The callee's text when ``call`` starts a task or a future."""
    func = call.func
    if ctx.qualified_name(func) in _TASK_FUNCTIONS:
        return ctx.code(func)
    if not isinstance(func, cst.Attribute):
        return None
    if func.attr.value in _TASK_METHODS and not _task_group(func.value, ctx):
        return ctx.code(func)
    if func.attr.value == "submit" and _executor(func.value, ctx):
        return ctx.code(func)
    return None


def _task_group(owner: cst.BaseExpression, ctx: FileContext) -> bool:
    """``async with asyncio.TaskGroup() as tg``: the group holds and awaits its tasks."""
    if not isinstance(owner, cst.Name):
        return False
    for ancestor in ctx.ancestors(owner):
        if isinstance(ancestor, cst.With):
            for item in ancestor.items:
                if item.asname is not None and is_name(item.asname.name, owner.value):
                    return True
    return False


def _executor(owner: cst.BaseExpression, ctx: FileContext) -> bool:
    """``owner`` is a ``concurrent.futures`` executor: built here (or in ``with ... as``),
    or an attribute the file assigns one to."""
    if isinstance(owner, cst.Name):
        for ancestor in ctx.ancestors(owner):
            if isinstance(ancestor, cst.With):
                for item in ancestor.items:
                    if item.asname is not None and is_name(item.asname.name, owner.value) and _builds_executor(item.item, ctx):
                        return True
        bound = bound_before(owner, ctx)
        return bound is not None and _builds_executor(bound, ctx)
    if isinstance(owner, cst.Attribute):
        attribute = re.escape(owner.attr.value)
        built = re.compile(rf"\.{attribute}\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?(?:ThreadPoolExecutor|ProcessPoolExecutor)\s*\(")
        return built.search(ctx.model.text) is not None
    return False


def _builds_executor(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    return isinstance(expr, cst.Call) and bool(_EXECUTORS.search(ctx.qualified_name(expr.func) or ""))


def _read_later(target: cst.Name, function: cst.FunctionDef) -> bool:
    """Whether the function reads ``target`` anywhere other than where it binds it."""
    binding_targets: set[int] = set()  # names bound, not those read inside a target (``tasks[name] = ...``)
    for node in own_nodes(function.body):
        if isinstance(node, cst.AssignTarget):
            binding_targets.update(id(n) for n in unpacked(node.target) if isinstance(n, cst.Name))
    for node in subtree(function.body):
        if isinstance(node, cst.Name) and node.value == target.value and id(node) not in binding_targets:
            return True
    return False


class TaskCancelledWithoutAwait:
    """``task.cancel()`` then its bookkeeping removed, with no await: the cancellation is never observed."""

    reach = MatcherReach(reads="function", whole_class=True)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (re.compile(r"\.cancel\(\s*\)"),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "cancel" and not call.args):
                continue
            function = ctx.enclosing_function(call)
            if function is None or not isinstance(ctx.parent(call), cst.Expr):
                continue
            task = func.value
            owner = _bookkeeping(task, ctx)
            if owner is None or not _holds_tasks(owner, ctx) or _observed(task, function, ctx):
                continue
            removal = _removal(owner, task, function, ctx)
            if removal is not None:
                yield Match(call, {"TASK": ctx.code(task), "OWNER": owner, "REMOVAL": ctx.code(removal).strip()})


def _bookkeeping(task: cst.BaseExpression, ctx: FileContext) -> str | None:
    """Where the task is kept: ``self._task``, or the ``self.tasks`` of ``self.tasks[rid]``
    (directly, or through a name bound from it: a lookup, a ``pop`` or a loop over it)."""
    if isinstance(task, cst.Attribute) and is_name(task.value, "self"):
        return ctx.code(task)
    if isinstance(task, cst.Subscript) and _on_self(task.value):
        return ctx.code(task.value)
    if isinstance(task, cst.Name):
        bound = bound_before(task, ctx)
        if isinstance(bound, cst.Subscript) and _on_self(bound.value):
            return ctx.code(bound.value)
        if isinstance(bound, cst.Call) and isinstance(bound.func, cst.Attribute) and bound.func.attr.value in ("get", "pop"):
            return ctx.code(bound.func.value) if _on_self(bound.func.value) else None
        for ancestor in ctx.ancestors(task):
            if isinstance(ancestor, cst.For) and is_name(ancestor.target, task.value):
                container = ancestor.iter.func.value if isinstance(ancestor.iter, cst.Call) and isinstance(ancestor.iter.func, cst.Attribute) else ancestor.iter
                return ctx.code(container) if _on_self(container) else None
    return None


def _on_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and is_name(expr.value, "self")


def _holds_tasks(owner: str, ctx: FileContext) -> bool:
    """The file puts tasks there: ``self._task = asyncio.create_task(...)``, ``self.tasks[k]
    = loop.create_task(...)``, ``self.tasks.add(asyncio.ensure_future(...))``."""
    attribute = re.escape(owner.rpartition(".")[2])
    started = r"(?:[\w.]*\.)?(?:create_task|ensure_future)\s*\("
    stored = re.compile(rf"\.{attribute}(?:\[[^\]\n]*\])?\s*(?::[^=\n]*)?=\s*{started}|\.{attribute}\.(?:add|append)\(\s*{started}")
    return stored.search(ctx.model.text) is not None


def _observed(task: cst.BaseExpression, function: cst.FunctionDef, ctx: FileContext) -> bool:
    """The function awaits the task, waits for it, or reads its outcome."""
    text = ctx.code(task)
    names = {text} | ({task.value} if isinstance(task, cst.Name) else set())
    for node in subtree(function.body):
        if isinstance(node, cst.Await) and _mentions_any(node.expression, names, ctx):
            return True
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _OBSERVERS and ctx.code(func.value) in names:
                return True
            if ctx.qualified_name(func) in _WAITS:
                return True
    return False


def _mentions_any(expr: cst.CSTNode, texts: set[str], ctx: FileContext) -> bool:
    return any(isinstance(n, (cst.Name, cst.Attribute, cst.Subscript)) and ctx.code(n) in texts for n in subtree(expr))


def _removal(owner: str, task: cst.BaseExpression, function: cst.FunctionDef, ctx: FileContext) -> cst.CSTNode | None:
    """The statement that drops the task from its bookkeeping: ``del self.tasks[rid]``,
    ``self.tasks.pop(rid)``, ``self.tasks.clear()``, ``self._task = None``."""
    for node in own_nodes(function.body):
        if isinstance(node, cst.Del) and any(_drops(t, owner, ctx) for t in del_targets(node.target)):
            return node
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("pop", "clear", "remove", "discard"):
            if ctx.code(node.func.value) == owner:
                return node
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == "None":
            if any(ctx.code(t.target) == owner for t in node.targets):
                return node
    return None


def _drops(target: cst.BaseExpression, owner: str, ctx: FileContext) -> bool:
    if isinstance(target, cst.Subscript):
        return ctx.code(target.value) == owner
    return ctx.code(target) == owner
