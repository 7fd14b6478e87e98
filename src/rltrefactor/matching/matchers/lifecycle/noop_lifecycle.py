"""Lifecycle methods that do nothing in a class that has something to give back.

``reset()``, ``close()``, ``clear()`` and ``shutdown()`` are the calls owners make to
return an object to its first state or release what it holds (Python data model and
``io``/``concurrent.futures`` docs: ``close`` releases, ``shutdown`` frees resources).
A body of ``pass``, ``...``, a docstring or ``return None`` in a class whose
``__init__`` stores state answers the call and keeps everything: caches stay full,
handles stay open, and the caller cannot tell.

A class declares state when its ``__init__`` assigns an attribute of ``self`` a value
other than a constant (a number, a string, a boolean, ``None``). Abstract classes are
left alone: a base deriving from ``ABC``/``Protocol`` (or with ``ABCMeta``), a class with
an ``@abstractmethod`` or a method that raises ``NotImplementedError`` declares hooks
for subclasses to fill.
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

LIFECYCLE_METHODS = ("reset", "close", "clear", "shutdown")
_ABSTRACT_BASES = frozenset({"ABC", "Protocol", "ABCMeta"})


class NoOpLifecycleMethod:
    """``def reset(self): pass`` in a class whose ``__init__`` stores state."""

    reach = MatcherReach(reads="function", whole_class=True)
    OPTIONS: ClassVar[dict[str, Option]] = {"methods": Option("strings", LIFECYCLE_METHODS, "names of methods that reset or release")}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.methods = frozenset(options["methods"])
        names = "|".join(sorted(re.escape(m) for m in self.methods))
        self.prefilter: Prefilter = (re.compile(rf"def\s+(?:{names})\s*\("),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for cls in ctx.nodes(cst.ClassDef):
            methods = [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]
            empty = [m for m in methods if m.name.value in self.methods and _does_nothing(m) and not _explained(m, ctx)]
            if not empty or _abstract(cls, methods, ctx):
                continue
            state = _state_attributes(methods)
            if not state:
                continue
            for method in empty:
                yield Match(method.name, {"METHOD": method.name.value, "CLASS": cls.name.value, "STATE": ", ".join(state[:3])})


def _does_nothing(method: cst.FunctionDef) -> bool:
    body = method.body
    if isinstance(body, cst.SimpleStatementSuite):  # ``def close(self): pass``
        return all(_inert(small) for small in body.body)
    return all(isinstance(s, cst.SimpleStatementLine) and all(_inert(small) for small in s.body) for s in body.body)


def _explained(method: cst.FunctionDef, ctx: FileContext) -> bool:
    """A comment on a line of the body says why nothing needs doing (``# the destructor
    closes it``); one after ``def ...:`` or on a one-line body is not read."""
    body = method.body
    return isinstance(body, cst.IndentedBlock) and any("#" in ctx.code(statement) for statement in body.body)


def _inert(small: cst.BaseSmallStatement) -> bool:
    """``pass``, ``...``, a docstring, ``return`` or ``return None``."""
    if isinstance(small, cst.Pass):
        return True
    if isinstance(small, cst.Expr):
        return isinstance(small.value, (cst.Ellipsis, cst.SimpleString, cst.ConcatenatedString))
    if isinstance(small, cst.Return):
        return small.value is None or isinstance(small.value, cst.Name) and small.value.value == "None"
    return False


def _abstract(cls: cst.ClassDef, methods: list[cst.FunctionDef], ctx: FileContext) -> bool:
    for base in [*cls.bases, *cls.keywords]:
        written = base.value.value if isinstance(base.value, cst.Subscript) else base.value  # ``Protocol[T]``
        name = ctx.qualified_name(written) or dotted_name(written) or ""
        if name.rpartition(".")[2] in _ABSTRACT_BASES or name.rpartition(".")[2].startswith("Protocol"):
            return True
    for method in methods:
        if any((dotted_name(d.decorator) or "").endswith("abstractmethod") for d in method.decorators):
            return True
        for node in subtree(method.body):
            if isinstance(node, cst.Raise) and node.exc is not None and "NotImplementedError" in ctx.code(node.exc):
                return True
    return False


def _state_attributes(methods: list[cst.FunctionDef]) -> list[str]:
    """Attributes ``__init__`` assigns a value other than a constant."""
    init = next((m for m in methods if m.name.value == "__init__"), None)
    if init is None:
        return []
    found: list[str] = []
    for node in subtree(init.body):
        targets: list[cst.BaseExpression] = []
        value: cst.BaseExpression | None = None
        if isinstance(node, cst.Assign):
            targets, value = [t.target for t in node.targets], node.value
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if value is None or _constant(value):
            continue
        for target in targets:
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
                if target.attr.value not in found:
                    found.append(target.attr.value)
    return found


def _constant(value: cst.BaseExpression) -> bool:
    if isinstance(value, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(value, cst.UnaryOperation):
        return _constant(value.expression)
    return isinstance(value, cst.Name) and value.value in ("True", "False", "None")
