"""Lifecycle matchers for shutting down: process groups, ``__del__``, teardown run twice.

Teardown runs in the states nobody tests: after a failed start (nothing was ever
initialised), a second time (an explicit ``close()`` and then ``__del__``), on an
exception path while peers still wait in a collective, and during interpreter shutdown
when module globals are being torn down.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, child_nodes
from ..context import comparison_sides, subtree, truth_conditions
from ..imports import dotted_name
from ..options import MatcherSpecError, Option
from .teardown import name_words

# Teardown of process-wide distributed state -> the query that says it exists.
GROUP_TEARDOWN = {"torch.distributed.destroy_process_group": "torch.distributed.is_initialized"}
# Calls that create the default group (``init_device_mesh`` does when none exists).
GROUP_SETUP = (
    "torch.distributed.init_process_group", "torch.distributed.init_device_mesh",
    "torch.distributed.device_mesh.init_device_mesh",
)


class ProcessGroupTeardown:
    """``destroy_process_group()`` where it can run with no group, or on a rank's failure path."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {
        "shape": Option("str", "unguarded", "unguarded: no is-initialised test; failure-path: inside a finally block"),
        "teardown": Option("mapping", GROUP_TEARDOWN, "qualified teardown call -> the query that says the state exists"),
        "setup": Option("strings", GROUP_SETUP, "qualified calls that create the state in the same function"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.shape = options["shape"]
        if self.shape not in ("unguarded", "failure-path"):
            raise MatcherSpecError(f"option 'shape': expected 'unguarded' or 'failure-path' (got {self.shape!r}); pick one")
        self.teardown = dict(options["teardown"])
        self.setup = frozenset(options["setup"])
        tails = sorted({name.rpartition(".")[2] for name in self.teardown})
        self.prefilter: Prefilter = tuple(f"{tail}(" for tail in tails)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            qualified = ctx.qualified_name(call.func)
            if qualified not in self.teardown:
                continue
            scope = _scope(call, ctx)
            names = {ctx.qualified_name(c.func) for c in subtree(scope) if isinstance(c, cst.Call)}
            if names & self.setup:
                continue  # the function creates the group it destroys: its own lifetime
            if self.shape == "unguarded" and self.teardown[qualified] not in names:
                yield Match(call, {"CALL": ctx.code(call.func), "GUARD": self.teardown[qualified]})
            elif self.shape == "failure-path" and _in_finally(call, ctx):
                yield Match(call, {"CALL": ctx.code(call.func), "GUARD": self.teardown[qualified]})


def _scope(node: cst.CSTNode, ctx: FileContext) -> cst.CSTNode:
    """The function around ``node``, or the top-level statement holding it."""
    top: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef):
            return ancestor
        if isinstance(ancestor, cst.Module):
            return top
        top = ancestor
    return top


def _in_finally(node: cst.CSTNode, ctx: FileContext) -> bool:
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Finally):
            return True
        if isinstance(ancestor, cst.FunctionDef):
            return False
    return False


# Builtins ``__del__`` may call safely: they neither print nor depend on module globals.
_SAFE_BUILTINS = frozenset({"getattr", "hasattr", "isinstance", "len", "id", "super", "callable", "setattr", "delattr"})


class DelCallsIntoModules:
    """``__del__`` calling module-level functions or ``print`` outside a ``try``: it may raise at interpreter exit."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (re.compile(r"def\s+__del__\s*\("),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        imported = set(ctx.imports.aliases)
        for function in ctx.nodes(cst.FunctionDef):
            if function.name.value != "__del__" or ctx.enclosing_class(function) is None:
                continue
            for call in _unprotected_calls(function.body):
                root = (dotted_name(call.func) or "").partition(".")[0]
                if root == "print" or root in imported and root not in _SAFE_BUILTINS:
                    yield Match(call, {"CALL": ctx.code(call.func)})
                    break  # the first one is what can stop the rest


def _unprotected_calls(body: cst.CSTNode) -> Iterator[cst.Call]:
    """Calls ``body`` runs outside ``try`` blocks, ``with contextlib.suppress(...)`` blocks
    and nested definitions, in source order; not the shutdown guard ``sys.is_finalizing()``
    itself, nor what runs only while the interpreter is not shutting down (the body of
    ``if not sys.is_finalizing():``, what follows ``if sys.is_finalizing(): return``)."""
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Try, cst.TryStar, cst.FunctionDef, cst.Lambda, cst.ClassDef)) or _suppressing(node):
            continue
        if isinstance(node, cst.If) and _finalizing_test(node.test) is False:
            stack.extend(reversed([node.orelse] if node.orelse is not None else []))
            continue
        if isinstance(node, cst.Call):
            if (dotted_name(node.func) or "").rpartition(".")[2] == "is_finalizing":
                continue
            yield node
        children = list(child_nodes(node))
        if isinstance(node, cst.IndentedBlock):
            children = _until_finalizing_return(children)
        stack.extend(reversed(children))


def _finalizing_test(test: cst.BaseExpression) -> bool | None:
    """True for ``sys.is_finalizing()``, False for ``not sys.is_finalizing()``, None otherwise."""
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    called = test.expression if isinstance(test, cst.UnaryOperation) and negated else test
    if isinstance(called, cst.Call) and (dotted_name(called.func) or "").rpartition(".")[2] == "is_finalizing":
        return not negated
    return None


def _until_finalizing_return(statements: list[cst.CSTNode]) -> list[cst.CSTNode]:
    """The statements of a block up to ``if sys.is_finalizing(): return`` (itself left out):
    what follows runs only while the interpreter is not shutting down."""
    for index, statement in enumerate(statements):
        if isinstance(statement, cst.If) and statement.orelse is None and _finalizing_test(statement.test) is True \
                and any(isinstance(s, cst.SimpleStatementLine) and any(isinstance(part, cst.Return) for part in s.body)
                        for s in statement.body.body):
            return statements[:index]
    return statements


def _suppressing(node: cst.CSTNode) -> bool:
    """``with suppress(...)`` (``contextlib``'s, by any import): a ``try``/``except`` in one line."""
    return isinstance(node, cst.With) and any(
        isinstance(item.item, cst.Call) and (dotted_name(item.item.func) or "").rpartition(".")[2] == "suppress"
        for item in node.items
    )


TEARDOWN_WORDS = ("stop", "close", "shutdown", "cleanup", "destroy", "teardown", "terminate", "release", "dispose", "unload", "free")


class TeardownNotIdempotent:
    """A teardown that sets ``self.x = None`` but first dereferences ``self.x`` unguarded: a second call raises."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {
        "teardown-words": Option("strings", TEARDOWN_WORDS, "words of method names that tear an object down"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.words = frozenset(options["teardown-words"])
        self.prefilter: Prefilter = (re.compile(r"self\s*\.\s*\w+\s*=\s*None\b"),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for function in ctx.nodes(cst.FunctionDef):
            if ctx.enclosing_class(function) is None or not name_words(function.name.value) & self.words:
                continue
            for name, cleared in _cleared_attributes(function):
                use = _first_unguarded_use(function, name, cleared, ctx)
                if use is not None:
                    yield Match(use, {"NAME": name, "FUNCTION": function.name.value})


def _cleared_attributes(function: cst.FunctionDef) -> Iterator[tuple[str, cst.CSTNode]]:
    """``x`` and the statement of each ``self.x = None`` in ``function``."""
    seen: set[str] = set()
    for node in subtree(function.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == "None":
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and dotted_name(t.value) == "self" and t.attr.value not in seen:
                    seen.add(t.attr.value)
                    yield t.attr.value, node


def _first_unguarded_use(function: cst.FunctionDef, name: str, cleared: cst.CSTNode, ctx: FileContext) -> cst.CSTNode | None:
    """The first ``self.<name>.attr`` before ``cleared`` that no test of ``self.<name>`` guards."""
    for node in subtree(function.body):
        if node is cleared:
            return None
        if _tests(node, name):
            return None  # an early ``if self.x is None: return`` or a guard around what follows
        if isinstance(node, cst.Attribute) and _is_self_attr(node.value, name):
            if not _guarded(node, name, function, ctx):
                return node
    return None


def _is_self_attr(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == name and dotted_name(node.value) == "self"


def _tests(node: cst.CSTNode, name: str) -> bool:
    """A branch, loop or assertion whose condition tests ``self.<name>`` itself."""
    if isinstance(node, (cst.If, cst.While)):
        test = node.test
    elif isinstance(node, cst.Assert):
        test = node.test
    else:
        return False
    return _condition_reads(test, name)


def _condition_reads(test: cst.BaseExpression, name: str) -> bool:
    """``test`` decides on ``self.<name>`` itself (its truth, a comparison, ``hasattr``),
    not on something read through it."""
    for condition in truth_conditions(test):
        if isinstance(condition, cst.NamedExpr):
            condition = condition.value
        sides = comparison_sides(condition) if isinstance(condition, cst.Comparison) else [condition]
        if any(_is_self_attr(side, name) for side in sides):
            return True
        if isinstance(condition, cst.Call) and dotted_name(condition.func) in ("hasattr", "getattr") and len(condition.args) >= 2:
            owner, attr = condition.args[0].value, condition.args[1].value
            if dotted_name(owner) == "self" and isinstance(attr, cst.SimpleString) and attr.evaluated_value == name:
                return True
    return False


def _guarded(node: cst.CSTNode, name: str, function: cst.FunctionDef, ctx: FileContext) -> bool:
    """Inside a ``try``, a conditional expression or boolean operand testing ``self.<name>``."""
    child = node
    for ancestor in ctx.ancestors(node):
        if ancestor is function:
            return False
        if isinstance(ancestor, cst.Try) and child is ancestor.body:
            return True
        if isinstance(ancestor, cst.IfExp) and child is not ancestor.test and _condition_reads(ancestor.test, name):
            return True
        if isinstance(ancestor, cst.BooleanOperation) and child is ancestor.right and _condition_reads(ancestor.left, name):
            return True
        child = ancestor
    return False


# Calls that start a child process.
CHILD_STARTS = ("subprocess.Popen", "multiprocessing.Process", "multiprocessing.get_context")


class ChildCleanupOnlyAtExit:
    """Child processes whose only teardown is an ``atexit`` hook, with no signal handler."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {
        "child-starts": Option("strings", CHILD_STARTS, "qualified calls that start (or make the means to start) child processes"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.starts = frozenset(options["child-starts"])
        self.prefilter: Prefilter = ("atexit.register(", "register(")

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            if ctx.qualified_name(call.func) != "atexit.register" or not call.args:
                continue
            function = ctx.enclosing_function(call)
            if function is None:
                continue
            names = {ctx.qualified_name(c.func) or "" for c in subtree(function) if isinstance(c, cst.Call)}
            starts_child = any(n in self.starts or n.endswith(".Process") or n.endswith(".Popen") for n in names)
            if starts_child and "signal.signal" not in names:
                yield Match(call, {"HOOK": ctx.code(call.args[0].value), "FUNCTION": function.name.value})

