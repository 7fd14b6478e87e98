"""Lifecycle matcher for an operation called without its undo, fetched with it and discarded.

A class keeps operations in records by kind (``self.handlers[kind] = (spec_cls,
register, unregister)``). One method unpacks the record, keeps the operation and
discards its inverse (``spec_cls, register, _ = self.handlers[kind]``); a sibling method
unpacks the same record and calls the inverse. The record pairs them, so the undo of a
half-done call is at hand, yet the call runs outside any ``try``: when it fails part-way
(or after the method already changed other state), what it did stays.

Which element undoes which is read from the code (complementary elements of one record,
each called by one of two methods of the class); the inverse pair itself is recognised
by the names the two methods bind (``add``/``remove``, ``register``/``unregister``),
the last resort, checked only once the structure holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, own_nodes
from ..options import Option

# (operation, inverse) word pairs; a word and the same word with an un/de/dis prefix
# (``register``/``unregister``) count too. Ordered: only the operation is reported.
_INVERSES = frozenset({
    ("add", "remove"), ("add", "delete"), ("attach", "detach"), ("acquire", "release"),
    ("alloc", "free"), ("allocate", "free"), ("open", "close"), ("start", "stop"),
    ("create", "destroy"), ("create", "delete"), ("load", "unload"), ("insert", "remove"),
    ("push", "pop"), ("connect", "disconnect"), ("setup", "teardown"), ("enter", "exit"),
    ("lock", "unlock"), ("enable", "disable"), ("apply", "revert"), ("do", "undo"),
    ("install", "uninstall"), ("subscribe", "unsubscribe"), ("pin", "unpin"),
})  # fmt: skip
_PREFIXES = ("un", "de", "dis")
# ``(a, b, _,) = self.records[kind]`` wrapped over lines: the last target discarded.
_DISCARDED_IN_PARENTHESES = re.compile(r"_,?\s*[)\]]\s*=\s*self\.")


@dataclass(frozen=True)
class Unpacking:
    """``a, b, _ = self.records[kind]`` in one method: the record and what it binds."""

    method: cst.FunctionDef
    record: str  # source text of the container, ``self.records``
    names: tuple[str | None, ...]  # bound name per position; None for anything else


class UndoDiscardedFromPairedRecord:
    """``spec, register, _ = self.records[kind]``; ``register(spec)`` outside a ``try``,
    while a sibling method unpacks ``_, _, unregister`` from the same records and calls it."""

    reach = MatcherReach(whole_class=True)  # the inverse is called in another method
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = ("_ = self.", _DISCARDED_IN_PARENTHESES)  # an element discarded

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for cls in ctx.nodes(cst.ClassDef):
            methods = [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]
            unpackings = [u for m in methods for u in _unpackings(m, ctx)]
            for here in unpackings:
                for position, name in enumerate(here.names):
                    if name is None or name == "_":
                        continue
                    call = _first_call(here.method, name)
                    if call is None or _inside_try(call, here.method, ctx):
                        continue
                    inverse = _inverse_elsewhere(here, position, unpackings)
                    if inverse is not None:
                        yield Match(call, {"OPERATION": name, "INVERSE": inverse, "RECORD": here.record})
                        break



def _unpackings(method: cst.FunctionDef, ctx: FileContext) -> Iterator[Unpacking]:
    for node in own_nodes(method.body):
        if not isinstance(node, cst.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0].target, node.value
        if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(value, cst.Subscript):
            continue
        record = ctx.code(value.value)
        if not record.startswith("self."):
            continue
        names = tuple(e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements)
        yield Unpacking(method, record, names)


def _first_call(method: cst.FunctionDef, name: str) -> cst.Call | None:
    for node in own_nodes(method.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == name:
            return node
    return None


def _inside_try(node: cst.CSTNode, method: cst.FunctionDef, ctx: FileContext) -> bool:
    """In the body of a ``try`` with a handler or a ``finally``: that region decides what a failure undoes."""
    child = node
    for ancestor in ctx.ancestors(node):
        if ancestor is method:
            return False
        if isinstance(ancestor, (cst.Try, cst.TryStar)) and child is ancestor.body:
            return True
        child = ancestor
    return False


def _inverse_elsewhere(here: Unpacking, position: int, unpackings: list[Unpacking]) -> str | None:
    """The name a sibling method binds and calls at a position ``here`` discards, when it
    names the inverse of ``here``'s operation and the sibling does not call that operation."""
    operation = here.names[position]
    assert operation is not None
    for other in unpackings:
        if other.method is here.method or other.record != here.record or len(other.names) != len(here.names):
            continue
        if other.names[position] not in (None, "_") and _first_call(other.method, other.names[position] or "") is not None:
            continue  # the sibling performs the same operation: not its inverse
        for index, (mine, theirs) in enumerate(zip(here.names, other.names)):
            if mine == "_" and theirs not in (None, "_") and index != position:
                if _first_call(other.method, theirs) is not None and _inverse_names(operation, theirs):
                    return theirs
    return None


def _inverse_names(operation: str, inverse: str) -> bool:
    """``register_fn``/``unregister_fn``, ``add``/``remove``: the same words but one, and
    that one names an operation and its inverse, in that order."""
    a, b = operation.lower().strip("_").split("_"), inverse.lower().strip("_").split("_")
    if len(a) != len(b):
        return False
    differing = [(x, y) for x, y in zip(a, b) if x != y]
    if len(differing) != 1:
        return False
    x, y = differing[0]
    return any(y == p + x for p in _PREFIXES) or (x, y) in _INVERSES
