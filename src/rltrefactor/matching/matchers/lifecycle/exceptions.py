"""Lifecycle matchers for exceptions that do not end what they were meant to end.

An exception built but never raised lets a failed start carry on; a ``StopIteration``
subclass raised in a generator is turned into ``RuntimeError`` (PEP 479), so the loop
that waits for it to end cleanly crashes instead.
"""

from __future__ import annotations

import builtins
import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import GuardedRegex, Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..imports import dotted_name
from ..options import Option

_BUILTIN_EXCEPTIONS = frozenset(
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
)
# A class name that says it is an exception: ``LaunchError``, ``QueueFullException``.
_EXCEPTION_NAME = re.compile(r"^[A-Z]\w*(?:Error|Exception)$")


class ExceptionNotRaised:
    """``RuntimeError(...)`` as a statement of its own: the exception is built and dropped."""

    reach = MatcherReach(reads="statement")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        statement = re.compile(r"^[ \t]*[\w.]*(?:Error|Exception|Exit|Interrupt|Iteration)\s*\(", re.MULTILINE)
        self.prefilter: Prefilter = (GuardedRegex(statement, ("Error", "Exception", "Exit", "Interrupt", "Iteration")),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for statement in ctx.nodes(cst.Expr):
            call = statement.value
            if not isinstance(call, cst.Call):
                continue
            dotted = dotted_name(call.func) or ""
            if dotted.partition(".")[0] in ("self", "cls"):
                continue  # a method (``self.OnError(x)``), not an exception class
            name = dotted.rpartition(".")[2]
            if name in _BUILTIN_EXCEPTIONS and name not in ("Warning",) or _EXCEPTION_NAME.match(name):
                yield Match(statement, {"EXCEPTION": ctx.code(call.func)})


_STOP = frozenset({"StopIteration", "builtins.StopIteration"})


class StopIterationSubclass:
    """An exception class derived from ``StopIteration``: raised in a generator, it becomes ``RuntimeError``.

    Where the class is raised is usually another module (the data loader raises what
    the training loop catches), so the definition itself is the evidence.
    """

    reach = MatcherReach(reads="header")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (re.compile(r"class\s+\w+\s*\([^)]*\bStopIteration\b"),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for cls in ctx.nodes(cst.ClassDef):
            if any(ctx.qualified_name(base.value) in _STOP for base in cls.bases):
                yield Match(cls.bases[0], {"CLASS": cls.name.value})
