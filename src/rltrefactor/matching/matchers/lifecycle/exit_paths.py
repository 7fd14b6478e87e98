"""Paired operations whose second half some way out of the function skips.

A pair is two calls on one owner where the second undoes the first
(``pool.allocate``/``pool.free``, ``registry.register``/``registry.unregister``,
``lock.acquire``/``lock.release``). Which names pair is read from the file, not from a
list of words (``mined_pairs``: the file uses the pair correctly somewhere, releasing in
cleanup code after acquiring on the same owner); how a release finds its acquire is
``paired_calls``.

Every way out between the halves is read, after Python's ``try`` statement, PEP 342
(``close()`` raises ``GeneratorExit`` at a ``yield``) and asyncio (a cancellation
raises ``CancelledError`` at an ``await``):
- a ``return``, ``break``, ``continue`` or ``raise`` that leaves without releasing;
- a call that may raise, an ``await`` or a ``yield`` that no ``finally`` and no handler
  around it covers (a handler covers when it releases, or, for a call, when it absorbs
  the error and carries on towards the release);
- a release in a ``try`` body whose handlers do not release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...mined_pairs import ReleaseCalls, mined_pairs
from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, own_nodes
from ..context import caught_types, subtree
from ..imports import dotted_name
from ..options import Option
from .paired_calls import (
    GIVES, Between, Half, acquire_before, calls, dropped, half_of, local_owner, lock_release, released_in_finally,
)

# Builtins and clocks that do not fail on what engine code hands them.
_SAFE_CALLS = frozenset({
    "len", "isinstance", "min", "max", "range", "int", "bool", "id", "tuple", "list", "dict", "set",
    "str", "float", "sorted", "enumerate", "zip", "getattr", "hasattr", "print", "time.time",
    "time.perf_counter", "time.monotonic",
})  # fmt: skip
_DIAGNOSTICS = frozenset({"debug", "info", "warning", "warn", "warning_once", "error", "exception", "critical", "log"})
_CANCELLATION_CATCHERS = frozenset({"BaseException", "CancelledError", "asyncio.CancelledError", "GeneratorExit"})


@dataclass(frozen=True)
class _Exit:
    node: cst.CSTNode
    kind: str  # "return", "raise", "call", "await", "yield", ...


class ReleaseSkippedOnExitPath:
    """The second half of a pair the file uses, skipped by an exception, early exit or cancellation."""

    # Both halves and every way out lie in one function; which names release is mined
    # from the whole file, so the tokens are too.
    reach = MatcherReach(reads="function", file_tokens=True)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (ReleaseCalls(),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        pairs = mined_pairs(ctx.model.text)
        releases = {release for _, release in pairs}
        for call in ctx.nodes(cst.Call):
            release = half_of(call)
            if release is None or release.owner in ("", "self", "cls"):
                continue
            if not (release.name in releases or release.name in GIVES or lock_release(release, ctx)):
                continue
            if not dropped(call, ctx):
                continue
            function = ctx.enclosing_function(call)
            if function is None or local_owner(release.owner, function):
                continue
            if released_in_finally(function, release):
                continue  # a ``finally`` of the function releases: the plain call is a second one
            found = acquire_before(call, release, pairs, ctx)
            if found is None:
                continue
            acquire, path = found
            exit_ = _first_exit(path, release, ctx)
            if exit_ is None:
                continue
            line = ctx.span(exit_.node).line
            bindings = {
                "ACQUIRE": ctx.code(acquire.call.func), "RELEASE": ctx.code(release.call.func),
                "LINE": str(ctx.span(acquire.call).line), "EXIT": _describe(exit_, line, ctx),
            }
            at = exit_.node if exit_.kind in ("return", "raise", "break", "continue") else call
            yield Match(at, bindings)


def _first_exit(path: Between, release: Half, ctx: FileContext) -> _Exit | None:
    """The first way out between the halves that skips the release, early exits first."""
    raising: _Exit | None = None
    for statement in path.between:
        for node in own_nodes(statement):
            if isinstance(node, (cst.Return, cst.Raise, cst.Break, cst.Continue)):
                if _acquire_failed(node, path.handle, statement, ctx):
                    continue
                if _leaves(node, statement, ctx) and not _released_before(node, statement, release, ctx):
                    return _Exit(node, type(node).__name__.lower())
            elif raising is None:
                kind = _raising_kind(node, ctx)
                if kind is not None and not _covered(node, kind, statement, release, ctx):
                    raising = _Exit(node, kind)
    return raising


def _acquire_failed(node: cst.CSTNode, handle: str | None, statement: cst.BaseStatement, ctx: FileContext) -> bool:
    """The exit is taken on a test of the acquire's handle (``if blocks is None: return``):
    it leaves when nothing was acquired."""
    if handle is None:
        return False
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.If) and any(isinstance(n, cst.Name) and n.value == handle
                                                for n in subtree(ancestor.test)):
            return True
        if ancestor is statement:
            return False
    return False


def _raising_kind(node: cst.CSTNode, ctx: FileContext) -> str | None:
    if isinstance(node, cst.Await):
        return "await"
    if isinstance(node, cst.Yield):
        return "yield"
    if isinstance(node, cst.Call):
        if isinstance(ctx.parent(node), cst.Await):
            return None  # the await is the way out
        name = dotted_name(node.func) or ""
        if name in _SAFE_CALLS or name.rpartition(".")[2] in _DIAGNOSTICS:
            return None
        return "call"
    return None


def _leaves(node: cst.CSTNode, statement: cst.BaseStatement, ctx: FileContext) -> bool:
    """A ``break``/``continue`` leaves the region only when its loop lies outside it."""
    if not isinstance(node, (cst.Break, cst.Continue)):
        return True
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.For, cst.While)):
            return False
        if ancestor is statement:
            return True
    return True


def _released_before(node: cst.CSTNode, statement: cst.BaseStatement, release: Half, ctx: FileContext) -> bool:
    """On the way to ``node`` inside ``statement``, a statement before it releases, or a
    ``finally`` around it does (one inside the statement, or one around the release)."""
    child: cst.CSTNode = node
    inside = True
    for ancestor in ctx.ancestors(node):
        if inside and isinstance(ancestor, cst.IndentedBlock):
            for earlier in ancestor.body:
                if earlier is child:
                    break
                if calls(earlier, release):
                    return True
        if isinstance(ancestor, cst.Try) and ancestor.finalbody is not None and calls(ancestor.finalbody, release):
            return True
        if ancestor is statement:
            inside = False
        child = ancestor
    return False


def _covered(node: cst.CSTNode, kind: str, statement: cst.BaseStatement, release: Half, ctx: FileContext) -> bool:
    """A ``finally`` or a handler around ``node`` releases, or a handler inside the region
    absorbs what a call raises and lets the flow go on to the release."""
    inside = True  # still within the statement between the halves
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Try) and _in_body(node, ancestor, ctx):
            if ancestor.finalbody is not None and calls(ancestor.finalbody, release):
                return True
            if any(calls(h.body, release) for h in ancestor.handlers):
                return True
            if inside and any(_absorbs(h, kind) for h in ancestor.handlers):
                return True
        if ancestor is statement:
            inside = False
    return False


def _in_body(node: cst.CSTNode, statement: cst.Try, ctx: FileContext) -> bool:
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if ancestor is statement:
            return child is statement.body
        child = ancestor
    return False


def _absorbs(handler: cst.ExceptHandler, kind: str) -> bool:
    """The handler ends without leaving, so the flow goes on past its ``try``; a
    cancellation or a generator's close is absorbed only by handlers that catch it."""
    last = handler.body.body[-1] if handler.body.body else None
    if isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, (cst.Return, cst.Raise, cst.Break, cst.Continue))
                                                          for s in last.body):
        return False
    if kind == "call":
        return True
    return handler.type is None or any((dotted_name(t) or "") in _CANCELLATION_CATCHERS for t in caught_types(handler))


def _describe(exit_: _Exit, line: int, ctx: FileContext) -> str:
    if exit_.kind in ("return", "break", "continue"):
        return f"the `{exit_.kind}` at line {line} leaves without it"
    if exit_.kind == "raise":
        return f"the `raise` at line {line} leaves without it"
    if exit_.kind == "await":
        return f"a cancellation at the `await` on line {line} skips it"
    if exit_.kind == "yield":
        return f"closing the generator at the `yield` on line {line} skips it"
    text = ctx.code(exit_.node)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"an exception from `{text}` (line {line}) skips it"

