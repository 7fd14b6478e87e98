"""Lifecycle and error-handling matchers."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...mined_pairs import mined_pairs
from ...prefilter import DEL_KEYWORD, GuardedRegex, Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..companions import guarded_names
from ..context import caught_types, is_setup_name, statement_and_block, subtree
from ..imports import dotted_name
from ..options import Option
from .paired_calls import builds_lock

BROAD = frozenset({"Exception", "BaseException"})
CLEANUP_WORDS = (
    "close", "cleanup", "clean", "release", "free", "shutdown", "teardown", "destroy",
    "abort", "cancel", "finalize", "exit", "stop", "dispose", "evict", "unregister",
)  # fmt: skip
_GUARD = re.compile(r"(?:has|get)attr\s*\(\s*self\s*,")
_DIAGNOSTIC = frozenset({"warn", "warning", "warning_once", "info", "error", "exception", "debug", "critical", "log", "print", "print_exc"})


class GuardForConstructedAttribute:
    """hasattr(self, "x") / getattr(self, "x", None) for an attribute __init__ always sets."""

    OPTIONS: ClassVar[dict[str, Option]] = {}
    reach = MatcherReach(reads="header", companions=guarded_names)

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (_GUARD,)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        guaranteed: dict[int, set[str]] = {}
        for call in ctx.nodes(cst.Call):
            name = _guarded_name(call, ctx)
            if name is None:
                continue
            cls = ctx.enclosing_class(call)
            function = ctx.enclosing_function(call)
            if cls is None or function is None or _may_run_before_init(function):
                continue
            if id(cls) not in guaranteed:
                guaranteed[id(cls)] = _set_by_construction(cls)
            if name in guaranteed[id(cls)]:
                yield Match(call, {"NAME": name, "CLASS": cls.name.value, "GUARD": ctx.code(call.func)})


def _may_run_before_init(function: cst.FunctionDef) -> bool:
    """Dunders (``__setattr__``, ``__del__``, ...) and setup helpers that ``__init__``
    calls can run before the attribute exists."""
    name = function.name.value
    if name.startswith("__") and name.endswith("__") or is_setup_name(name):
        return True
    # Cleanup may run on a half-constructed object or twice (after ``del self.x``).
    return bool(set(name.lower().strip("_").split("_")) & set(CLEANUP_WORDS))


def _guarded_name(call: cst.Call, ctx: FileContext) -> str | None:
    func = ctx.qualified_name(call.func)
    args = call.args
    if func == "hasattr" and len(args) == 2 or func == "getattr" and len(args) == 3:
        owner, attr = args[0].value, args[1].value
        if isinstance(owner, cst.Name) and owner.value == "self" and isinstance(attr, cst.SimpleString):
            value = attr.evaluated_value
            return value if isinstance(value, str) else None
    return None


def _set_by_construction(cls: cst.ClassDef) -> set[str]:
    """Attributes ``__init__`` assigns unconditionally, plus class-level declarations.

    A class that restores itself from pickles (``__setstate__``) may see old objects
    without them, so nothing is guaranteed there.
    """
    names: set[str] = set()
    if any(isinstance(s, cst.FunctionDef) and s.name.value in ("__setstate__", "__reduce__", "__reduce_ex__") for s in cls.body.body):
        return names
    for statement in cls.body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            names.update(_assigned(statement, self_attrs=False))
        elif isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
            for line in statement.body.body:
                if isinstance(line, cst.SimpleStatementLine):  # not inside if/try/for
                    names.update(_assigned(line, self_attrs=True))
    return names


def _assigned(line: cst.SimpleStatementLine, *, self_attrs: bool) -> set[str]:
    names = set()
    for small in line.body:
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
        targets += [small.target] if isinstance(small, cst.AnnAssign) and small.value is not None else []
        for target in targets:
            if self_attrs and isinstance(target, cst.Attribute) and dotted_name(target.value) == "self":
                names.add(target.attr.value)
            elif not self_attrs and isinstance(target, cst.Name):
                names.add(target.value)
    return names


class ReleaseNotOnFailurePath:
    """A release that only runs when nothing between it and its acquire raises."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {
        "pairs": Option(
            "mapping",
            {"acquire": "release", "lock": "unlock", "allocate": "free", "alloc": "free", "pin": "unpin", "reserve": "unreserve"},
            "acquiring method name -> the releasing method on the same object",
        ),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.pairs = dict(options["pairs"])
        self.prefilter: Prefilter = tuple(f".{name}(" for name in sorted(self.pairs))

    def find(self, ctx: FileContext) -> Iterator[Match]:
        # Pairs the file itself shows are ``release-skipped-on-exit-path``'s, which reads
        # every way out and reports at the release: one finding per problem.
        mined = mined_pairs(ctx.model.text)
        for call in ctx.nodes(cst.Call):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value in self.pairs):
                continue
            pair = (func.attr.value, self.pairs[func.attr.value])
            if pair in mined or pair == ("acquire", "release") and builds_lock(ctx.code(func.value), ctx):
                continue
            statement, block = statement_and_block(call, ctx)
            if statement is None:
                continue
            owner = ctx.code(func.value)
            release = self.pairs[func.attr.value]
            following = list(block)[list(block).index(statement) + 1 :]
            for index, later in enumerate(following):
                if isinstance(later, (cst.Try, cst.With)) or _calls(later, owner, func.attr.value, ctx):
                    break  # a guarded region decides for itself; a second acquire starts anew
                if _calls(later, owner, release, ctx):
                    between = following[:index]
                    if any(_may_raise(n) for s in between for n in subtree(s)):
                        yield Match(call, {"OWNER": owner, "ACQUIRE": func.attr.value, "RELEASE": release})
                    break


# Builtins that do not fail on the values engine code passes them.
_SAFE_CALLS = frozenset({"len", "isinstance", "min", "max", "range", "int", "bool", "id", "tuple", "list"})


def _may_raise(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and (dotted_name(node.func) or "") not in _SAFE_CALLS


def _calls(statement: cst.CSTNode, owner: str, method: str, ctx: FileContext) -> bool:
    return any(
        isinstance(n, cst.Call)
        and isinstance(n.func, cst.Attribute)
        and n.func.attr.value == method
        and ctx.code(n.func.value) == owner
        for n in subtree(statement)
    )


class SwallowedErrorInCleanup:
    """A broad except that silently swallows an error while cleaning up or releasing."""

    reach = MatcherReach(reads="statement")  # the handler's body says whether it is silent

    OPTIONS: ClassVar[dict[str, Option]] = {"cleanup-words": Option("strings", CLEANUP_WORDS, "words of function names that release or clean up")}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.words = frozenset(options["cleanup-words"])
        # A bare ``except:``, a tuple of types, or Exception/BaseException named first.
        self.prefilter: Prefilter = (re.compile(r"except\s*(?::|\(|(?:builtins\s*\.\s*)?(?:Base)?Exception\b)"),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for handler in ctx.nodes(cst.ExceptHandler):
            if not (_is_broad(handler) and _is_silent(handler)):
                continue
            where = self._cleanup_context(handler, ctx)
            if where is not None:
                caught = ctx.code(handler.type) if handler.type is not None else "everything"
                yield Match(handler, {"CAUGHT": caught, "WHERE": where})

    def _cleanup_context(self, handler: cst.ExceptHandler, ctx: FileContext) -> str | None:
        child: cst.CSTNode = handler
        for ancestor in ctx.ancestors(handler):
            if isinstance(ancestor, cst.Try) and child is ancestor.finalbody:
                return "a finally block"
            if isinstance(ancestor, cst.FunctionDef):
                name = ancestor.name.value
                if name == "__del__":
                    return None  # interpreter shutdown may have torn down what it needs
                words = set(name.lower().strip("_").split("_"))
                return f"{name}()" if words & self.words else None
            child = ancestor
        return None


def _is_broad(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    return any((dotted_name(t) or "") in BROAD for t in caught_types(handler))


def _is_silent(handler: cst.ExceptHandler) -> bool:
    for node in subtree(handler.body):
        if isinstance(node, cst.Raise):
            return False
        if isinstance(node, cst.Call) and (dotted_name(node.func) or "").rpartition(".")[2] in _DIAGNOSTIC:
            return False
    return handler.name is None or not _uses_name(handler)


def _uses_name(handler: cst.ExceptHandler) -> bool:
    bound = handler.name.name.value if handler.name is not None and isinstance(handler.name.name, cst.Name) else None
    return any(isinstance(n, cst.Name) and n.value == bound for n in subtree(handler.body))


def removal_from_self_registry() -> Prefilter:
    """``del self.x[k]`` or ``self.x.pop(k)`` (``remove``, ``discard``): a removal from a
    registry on ``self``, by key (``pop()`` of a list's end and ``d[k] = v`` alone are
    everywhere). A wrapped call puts its key on the next line, so the regex also searches
    the line after a guard."""
    removal = re.compile(r"self\s*\.[\w.]+\.(?:pop|remove|discard)\(\s*[^\s)]")
    return (re.compile(DEL_KEYWORD + r"\s+self\s*\.[\w.]+\["),
            GuardedRegex(removal, (".pop(", ".remove(", ".discard("), context=1))


class RegistrationNotUndoneOnFailure:
    """``d[k] = v``, a call that can raise, then ``del d[k]``: a failure leaves ``k`` registered."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {}
    _REMOVERS = frozenset({"pop", "remove", "discard"})

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = removal_from_self_registry()  # the whole function is read

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for assign in ctx.nodes(cst.Assign):
            if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Subscript):
                continue
            target = assign.targets[0].target
            container, key = ctx.code(target.value), ctx.code(target.slice[0]) if len(target.slice) == 1 else None
            if not container.startswith("self.") or key is None or _literal_key(target):
                continue  # a local dict dies with the exception; literal keys are flags, not ids
            line, block = statement_and_block(assign, ctx)
            if line is None:
                continue
            following = list(block)[list(block).index(line) + 1 :]
            for index, later in enumerate(following):
                if isinstance(later, (cst.Try, cst.With)):
                    break  # a guarded region decides for itself
                if not isinstance(later, cst.SimpleStatementLine):
                    continue  # a removal in a branch undoes one path; the others keep the entry on purpose
                removal = self._removal(later, container, key, ctx)
                if removal is not None:
                    if any(_may_raise(n) or isinstance(n, cst.Await) for s in following[:index] for n in subtree(s)):
                        yield Match(removal, {"CONTAINER": container, "KEY": key})
                    break

    def _removal(self, statement: cst.CSTNode, container: str, key: str, ctx: FileContext) -> cst.CSTNode | None:
        for node in subtree(statement):
            if isinstance(node, cst.Del) and isinstance(node.target, cst.Subscript):
                if ctx.code(node.target.value) == container and len(node.target.slice) == 1 and ctx.code(node.target.slice[0]) == key:
                    return node
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in self._REMOVERS:
                if ctx.code(node.func.value) == container and node.args and ctx.code(node.args[0].value) == key:
                    return node
        return None


def _literal_key(target: cst.Subscript) -> bool:
    index = target.slice[0].slice
    return isinstance(index, cst.Index) and isinstance(index.value, (cst.BaseString, cst.Integer))
