"""A ``@contextmanager`` generator whose handler around ``yield`` does not raise again.

``contextlib``'s documentation: the exception raised in the ``with`` block is re-raised
inside the generator at the ``yield``; "if an exception is trapped merely in order to
log it or to perform some action (rather than to suppress it entirely), the generator
must reraise that exception". A handler around the ``yield`` that ends without raising
suppresses the exception for every caller: the ``with`` block's out-of-memory error,
cancellation or failed step goes on as if nothing happened.

Read: functions decorated with ``contextlib.contextmanager`` or
``contextlib.asynccontextmanager`` (through the file's imports), a ``try`` whose body
holds the ``yield`` (not inside a nested ``try``, whose handlers decide first), and each
handler of it that has no ``raise`` at all, when nothing before the ``yield`` in that
body can raise (otherwise the handler may be for the generator's own call). Left alone:
handlers that raise (on any path) or yield a fallback, handlers of ``GeneratorExit``,
``KeyboardInterrupt`` or ``SystemExit`` only (stops the author chose to absorb), and
generators whose name says they exist to suppress (``suppress``, ``ignore``,
``swallow``, ``quiet``): a name is the only evidence of that intent, and leaving a
finding out on it is the safe side.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, child_nodes, own_nodes
from ..context import caught_types, subtree
from ..imports import dotted_name
from ..options import Option

_DECORATORS = frozenset({"contextlib.contextmanager", "contextlib.asynccontextmanager"})
# Stops an author may absorb on purpose: closing the generator, the user's interrupt, an exit.
_STOPS = frozenset({"GeneratorExit", "KeyboardInterrupt", "SystemExit"})
_SUPPRESSING_WORDS = frozenset({"suppress", "suppressed", "ignore", "ignored", "ignoring", "swallow", "quiet", "silence"})


class ExceptionSwallowedByContextManager:
    """An ``except`` around a ``@contextmanager``'s ``yield`` that does not raise again."""

    reach = MatcherReach(reads="function")
    prefilter: Prefilter = ("contextmanager",)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for function in ctx.nodes(cst.FunctionDef):
            if not _is_context_manager(function, ctx) or _named_to_suppress(function):
                continue
            for node in own_nodes(function.body):
                if isinstance(node, cst.Try) and _yields_first(node) and _yields_in_body(node):
                    for handler in node.handlers:
                        if not (_reraises(handler) or _yields(handler) or _deliberate(handler)):
                            caught = ctx.code(handler.type) if handler.type is not None else "every exception"
                            yield Match(handler, {"CAUGHT": caught, "FUNCTION": function.name.value})


def _is_context_manager(function: cst.FunctionDef, ctx: FileContext) -> bool:
    return any(ctx.qualified_name(d.decorator) in _DECORATORS for d in function.decorators)


def _named_to_suppress(function: cst.FunctionDef) -> bool:
    return bool(set(function.name.value.lower().strip("_").split("_")) & _SUPPRESSING_WORDS)


def _yields_in_body(statement: cst.Try) -> bool:
    """The ``try`` body holds a ``yield`` of its own: directly or through ``with``/``if``/
    loops, not inside a nested ``try``, whose handlers see the exception first."""
    stack: list[cst.CSTNode] = list(statement.body.body)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Yield):
            return True
        if isinstance(node, (cst.Try, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        stack.extend(child_nodes(node))
    return False


def _reraises(handler: cst.ExceptHandler) -> bool:
    """The handler raises somewhere: on every path, or on the paths its author chose (a
    conditional ``raise`` is a decision about what to suppress)."""
    return any(isinstance(n, cst.Raise) for n in subtree(handler.body))


def _yields_first(statement: cst.Try) -> bool:
    """Nothing before the ``yield`` in the ``try`` body can raise: the handlers are there
    for the caller's block, not for a call of the generator's own (``q.get_nowait()``)."""
    for line in statement.body.body:
        if any(isinstance(n, cst.Yield) for n in subtree(line)):
            return True
        if any(isinstance(n, (cst.Call, cst.Await, cst.Raise)) for n in subtree(line)):
            return False
    return False


def _yields(handler: cst.ExceptHandler) -> bool:
    """A handler that yields a fallback is for the generator's own setup, not the caller's block."""
    return any(isinstance(n, cst.Yield) for n in subtree(handler.body))


def _deliberate(handler: cst.ExceptHandler) -> bool:
    """Closing the generator (``GeneratorExit``), or the user's interrupt ended quietly
    (``KeyboardInterrupt``, ``SystemExit``): stops the author chose to absorb."""
    caught = caught_types(handler)
    return bool(caught) and all((dotted_name(t) or "") in _STOPS for t in caught)
