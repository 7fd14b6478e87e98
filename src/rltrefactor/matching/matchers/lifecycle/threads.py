"""Lifecycle matcher for worker threads that keep the interpreter alive.

The interpreter waits for every non-daemon thread before it exits. A worker that
loops waiting for work (``while True: item = queue.get()``) only ends when someone
sends it a stop item, so a run that ends without calling that teardown (an exception,
a forgotten ``close()``) hangs at exit instead of finishing.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import subtree
from ..imports import dotted_name
from ..options import Option

THREAD_CLASSES = ("threading.Thread",)


class NonDaemonWorkerThread:
    """A non-daemon thread kept on ``self`` whose worker waits on a queue for work."""

    reach = MatcherReach(whole_class=True)  # the worker method is another member of the class
    OPTIONS: ClassVar[dict[str, Option]] = {
        "thread-classes": Option("strings", THREAD_CLASSES, "qualified names of thread classes"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.classes = frozenset(options["thread-classes"])
        self.prefilter: Prefilter = (re.compile(r"\bThread\s*\("),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            if ctx.qualified_name(call.func) not in self.classes or _daemon_given(call):
                continue
            owner = _stored_on_self(call, ctx)
            function = ctx.enclosing_function(call)
            if owner is None or function is None or _daemon_set_later(function, owner):
                continue
            evidence = _queue_argument(call, function) or _worker_waits(call, ctx)
            if evidence is not None:
                yield Match(call, {"THREAD": f"self.{owner}", "WAITS": evidence})


def _daemon_given(call: cst.Call) -> bool:
    """``daemon=`` passed at all: ``daemon=False`` is a decision, not an omission."""
    return any(arg.keyword is not None and arg.keyword.value == "daemon" for arg in call.args)


def _stored_on_self(call: cst.Call, ctx: FileContext) -> str | None:
    parent = ctx.parent(call)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
        if isinstance(target, cst.Attribute) and dotted_name(target.value) == "self":
            return target.attr.value
    return None


def _daemon_set_later(function: cst.FunctionDef, owner: str) -> bool:
    for node in subtree(function.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and t.attr.value == "daemon" and dotted_name(t.value) == f"self.{owner}":
                    return True
    return False


def _queue_argument(call: cst.Call, function: cst.FunctionDef) -> str | None:
    """A queue the function creates and hands to the thread: its worker waits on it."""
    queues: set[str | None] = set()
    for node in subtree(function.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            if (dotted_name(node.value.func) or "").rpartition(".")[2] in ("Queue", "SimpleQueue", "JoinableQueue"):
                queues.update(dotted_name(t.target) for t in node.targets)
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "args":
            for element in arg.value.elements if isinstance(arg.value, (cst.Tuple, cst.List)) else ():
                name = dotted_name(element.value)
                if name is not None and name in queues:
                    return f"{name}.get()"
    return None


def _worker_waits(call: cst.Call, ctx: FileContext) -> str | None:
    """``target=self.m`` where method ``m`` loops calling ``.get()`` with no key."""
    target = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "target"), None)
    method = dotted_name(target) if target is not None else None
    cls = ctx.enclosing_class(call)
    if method is None or not method.startswith("self.") or cls is None:
        return None
    name = method.partition(".")[2]
    worker = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
    for loop in subtree(worker.body) if worker is not None else ():
        if isinstance(loop, cst.While):
            for node in subtree(loop.body):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get":
                    if not any(a.keyword is None for a in node.args):
                        return f"{ctx.code(node.func)}()"
    return None
