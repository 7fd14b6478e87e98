"""Lifecycle matchers for the paths that end a request or job: cancel, abort, finish.

These paths run for ids that may already be gone (a late cancel, a request that was
never scheduled, a second abort), and past the components that keep their own
registry of the id. The matchers read the evidence a reviewer reads: the function's
name, the loop it is in, the operations.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterable, Iterator

import libcst as cst

from ...prefilter import Prefilter, GuardedRegex
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import caught_types, subtree
from ..imports import dotted_name
from ..options import Option

# Words of a function name that make it a path ending a request or job for an id a
# client hands in, at any time and possibly twice (a disconnect, a retried abort).
# The engine's own finish/free/release/remove calls follow its own bookkeeping, where a
# KeyError or an assertion against a double finish defends an invariant, so they are
# read only through a loop over ids another component reports as ended.
RELEASE_WORDS = ("cancel", "abort")
# A loop over ids that have just ended: ``for req_id in finished_req_ids:``.
_ENDED_ITERABLE = re.compile(r"finish|abort|cancel|stopped", re.IGNORECASE)
_INT = re.compile(r"^-?\d+$")
_KEY_ERRORS = frozenset({"KeyError", "LookupError", "ValueError", "Exception", "BaseException"})


def cased(words: Iterable[str]) -> str:
    """``cancel|Cancel|CANCEL|...``: each word as snake_case, CamelCase and UPPER_CASE
    code spells it. Prefilter regexes then start with a literal and need no IGNORECASE,
    so ``re`` skips ahead instead of trying every position."""
    return "|".join(sorted({v for w in words for v in (w, w.capitalize(), w.upper())}))


def name_words(name: str) -> set[str]:
    """``_free_finished_requests`` -> {"free", "finished", "finish", "requests", ...}:
    the words and their stems, so "finished", "cancelled" and "freed" match."""
    words = {w for w in name.lower().split("_") if w}
    stems = {w[: -len(end)] for w in words for end in ("led", "ed", "d", "es", "s") if w.endswith(end)}
    return words | stems


class UncheckedRemovalOnReleasePath:
    """``del d[k]``, ``d.pop(k)`` or ``assert k in d`` for an id on a cancel/abort/finish path."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {"release-words": Option("strings", RELEASE_WORDS, "words of function names that end a request, job or resource")}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.words = frozenset(options["release-words"])
        # The evidence sits in headers: the function's name or the loop over ended ids
        # (whole functions are read around them). Removals alone are everywhere.
        names, ended = cased(self.words), cased(_ENDED_ITERABLE.pattern.split("|"))
        self.prefilter: Prefilter = (re.compile(rf"def\s+\w*(?:{names})"), re.compile(rf"for\b[^:]*?(?:{ended})"))

    def find(self, ctx: FileContext) -> Iterator[Match]:
        candidates: list[tuple[cst.CSTNode, str, str | None, str]] = []
        for deletion in ctx.nodes(cst.Del):
            for target in del_targets(deletion.target):
                if isinstance(target, cst.Subscript) and len(target.slice) == 1:
                    index = target.slice[0].slice
                    if isinstance(index, cst.Index) and not isinstance(index.value, (cst.SimpleString, cst.Integer)):
                        candidates.append((deletion, ctx.code(target.value), ctx.code(index.value), f"del {ctx.code(target)}"))
        for call in ctx.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "pop" and len(call.args) == 1 and not call.args[0].keyword:
                popped = ctx.code(call.args[0].value)
                if not _INT.match(popped) and not isinstance(call.args[0].value, cst.SimpleString):
                    candidates.append((call, ctx.code(func.value), popped, ctx.code(call)))
        for assertion in ctx.nodes(cst.Assert):
            membership = _membership(assertion.test)
            if membership is not None:
                candidates.append((assertion, ctx.code(membership[1]), ctx.code(membership[0]), ctx.code(assertion)))
            elif isinstance(assertion.test, cst.Name) and assertion.test.value == "False":
                candidates.append((assertion, "", None, "assert False"))
        for node, container, key, what in candidates:
            where = self._release_path(node, ctx)
            if where is None or _checked(node, container, key, ctx):
                continue
            if key is not None and not _from_caller(node, key, ctx):
                continue  # a key the function derived itself follows its own bookkeeping
            registry = f"`{container}`" if container else "any of the containers tested before it"
            yield Match(node, {"OP": what, "WHERE": where, "CONTAINER": registry})

    def _release_path(self, node: cst.CSTNode, ctx: FileContext) -> str | None:
        for ancestor in ctx.ancestors(node):
            if isinstance(ancestor, cst.For) and _ENDED_ITERABLE.search(ctx.code(ancestor.iter)):
                return f"the loop over {ctx.code(ancestor.iter)}"
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                if isinstance(ancestor, cst.FunctionDef) and name_words(ancestor.name.value) & self.words:
                    return f"{ancestor.name.value}()"
                return None
        return None


def del_targets(target: cst.BaseDelTargetExpression) -> Iterator[cst.BaseExpression]:
    """The single targets of ``del a, b[k]``."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield element.value
    else:
        yield target


def _membership(test: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """``(key, container)`` of ``key in container``."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, cst.In):
            return test.left, target.comparator
    return None


def _from_caller(node: cst.CSTNode, key: str, ctx: FileContext) -> bool:
    """Whether ``key`` is rooted in a parameter, or in the target of a loop over a
    parameter or over ended ids: an id the caller (or the scheduler) hands in."""
    function = ctx.enclosing_function(node)
    root = re.match(r"\w+", key)
    if function is None or root is None:
        return False
    outside = {p.name.value for p in [*function.params.params, *function.params.posonly_params, *function.params.kwonly_params]}
    for loop in (n for n in subtree(function.body) if isinstance(n, cst.For)):
        source = re.match(r"\w+", ctx.code(loop.iter))
        if source and source.group() in outside and source.group() != "self" or _ENDED_ITERABLE.search(ctx.code(loop.iter)):
            outside.update(n.value for n in subtree(loop.target) if isinstance(n, cst.Name))
    outside.discard("self")
    return root.group() in outside


def _checked(node: cst.CSTNode, container: str, key: str | None, ctx: FileContext) -> bool:
    """Whether the function tests ``container`` for the key before removing, or
    handles the ``KeyError``: then a missing id is an expected case."""
    if not container:
        return False
    child = node
    function = None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Try) and child is ancestor.body and any(_catches_lookup(h) for h in ancestor.handlers):
            return True
        if isinstance(ancestor, cst.With) and any("suppress" in ctx.code(item.item) for item in ancestor.items):
            return True
        if isinstance(ancestor, cst.For) and container in ctx.code(ancestor.iter):
            return True  # ``for k in list(d): ... del d[k]``: the key came from the container
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            function = ancestor
            break
        child = ancestor
    if function is None:
        return False
    position = ctx.span(node).line
    for test in _tests_before(function, position, ctx):
        for part in subtree(test):
            if isinstance(part, cst.Comparison) and any(isinstance(c.operator, (cst.In, cst.NotIn)) for c in part.comparisons):
                if any(ctx.code(c.comparator) == container for c in part.comparisons):
                    return True
            if isinstance(part, cst.Call) and isinstance(part.func, cst.Attribute) and part.func.attr.value == "get":
                if ctx.code(part.func.value) == container:
                    return True
    return _read_before(function, container, key, position, ctx)


def _read_before(function: cst.CSTNode, container: str, key: str | None, line: int, ctx: FileContext) -> bool:
    """``container[key]`` read on an earlier line: it raised already if the key were missing."""
    for node in subtree(function):
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 and ctx.code(node.value) == container:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and ctx.code(index.value) == key and ctx.span(node).line < line:
                return True
    return False


def _tests_before(function: cst.CSTNode, line: int, ctx: FileContext) -> Iterator[cst.BaseExpression]:
    """Conditions in ``function`` that start on or before ``line`` (guards and early returns)."""
    for node in subtree(function):
        if isinstance(node, (cst.If, cst.While, cst.IfExp)) and ctx.span(node.test).line <= line:
            yield node.test
        elif isinstance(node, cst.Assert) and ctx.span(node).line < line:
            yield node.test
        elif isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) and ctx.span(node).line < line:
            yield node.value  # ``x = d.get(k)`` before ``del d[k]``


def _catches_lookup(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    return any((dotted_name(t) or "").rpartition(".")[2] in _KEY_ERRORS for t in caught_types(handler))


_CANCEL_WORDS = frozenset({"cancel", "abort"})


class CancelPastItsOwner:
    """``self.wrapper.inner.cancel(x)`` inside ``cancel()``: the wrapper's own
    bookkeeping for ``x`` is skipped."""

    OPTIONS: ClassVar[dict[str, Option]] = {}
    reach = MatcherReach(reads="statement")

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        words = cased(_CANCEL_WORDS)
        chain = re.compile(rf"self(?:\s*\.\s*\w+){{2,}}\s*\.\s*\w*(?:{words})")
        self.prefilter: Prefilter = (GuardedRegex(chain, tuple(words.split("|"))),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            chain = dotted_name(call.func) or ""
            parts = chain.split(".")
            if len(parts) < 4 or parts[0] != "self" or not name_words(parts[-1]) & _CANCEL_WORDS:
                continue
            function = ctx.enclosing_function(call)
            if function is None or not name_words(function.name.value) & _CANCEL_WORDS:
                continue
            owner = ".".join(parts[:2])
            yield Match(call, {"CALL": chain, "OWNER": owner, "FUNCTION": function.name.value})


def is_name(node: cst.CSTNode, name: str) -> bool:
    """Whether ``node`` is the plain name ``name``."""
    return isinstance(node, cst.Name) and node.value == name


class DelAssumesFullConstruction:
    """``__del__`` that uses ``self.x`` which a failed ``__init__`` may never have set."""

    OPTIONS: ClassVar[dict[str, Option]] = {}
    reach = MatcherReach(whole_class=True)  # reads ``__init__`` and the class body besides ``__del__``

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (re.compile(r"def\s+__del__\s*\("),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for function in ctx.nodes(cst.FunctionDef):
            cls = ctx.enclosing_class(function)
            if function.name.value != "__del__" or cls is None or not isinstance(function.body, cst.IndentedBlock):
                continue
            init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
            if init is None:
                continue  # constructed elsewhere: nothing to compare with
            safe = _set_before_any_call(cls, init)
            for statement in function.body.body:
                read = statement.iter if isinstance(statement, cst.For) else statement
                if not isinstance(statement, (cst.For, cst.SimpleStatementLine)):
                    continue  # ``try``/``if``/``with`` around the cleanup decide for themselves
                attribute = _unsafe_use(read, safe)
                if attribute is not None:
                    yield Match(statement, {"NAME": attribute, "CLASS": cls.name.value})
                    break


def _set_before_any_call(cls: cst.ClassDef, init: cst.FunctionDef) -> set[str]:
    """Class-level names, and what ``__init__`` assigns before anything it calls can raise."""
    names = {t.target.value for s in cls.body.body if isinstance(s, cst.SimpleStatementLine) for small in s.body
             if isinstance(small, (cst.Assign, cst.AnnAssign)) for t in _assign_targets(small) if isinstance(t.target, cst.Name)}
    for statement in init.body.body if isinstance(init.body, cst.IndentedBlock) else ():
        if any(isinstance(n, cst.Call) for n in subtree(statement)) or not isinstance(statement, cst.SimpleStatementLine):
            break
        for small in statement.body:
            if isinstance(small, (cst.Assign, cst.AnnAssign)):
                names.update(t.target.attr.value for t in _assign_targets(small) if isinstance(t.target, cst.Attribute))
    return names


def _assign_targets(small: cst.Assign | cst.AnnAssign) -> list[cst.AssignTarget]:
    return list(small.targets) if isinstance(small, cst.Assign) else [cst.AssignTarget(small.target)]


def _unsafe_use(node: cst.CSTNode, safe: set[str]) -> str | None:
    """``x`` of ``self.x.close()`` or ``for p in self.x`` read here, with ``x`` not safe."""
    iterated = node if not isinstance(node, cst.SimpleStatementLine) else None
    for part in subtree(node):
        owner = part.value if isinstance(part, cst.Attribute) else None
        used = isinstance(owner, cst.Attribute) or part is iterated and isinstance(part, cst.Attribute)
        target = owner if isinstance(owner, cst.Attribute) else part
        if used and isinstance(target, cst.Attribute) and dotted_name(target.value) == "self" and target.attr.value not in safe:
            return target.attr.value
    return None
