"""Where a node sits: shared questions that patterns and Python matchers both ask.

"Cold code" is code that runs once or only when diagnosing, even inside a hot-path
module: construction and setup functions, warm-up and profiling runs, ``__repr__``,
weight loading and processing (``process_weights_after_loading``), sleep/wake-up
offloading, ``if TYPE_CHECKING:`` blocks, debug/logging-guarded branches,
``torch.compiler.is_compiling()`` guards, ``raise`` statements and the messages of
assertions and log calls. Device-residency rules skip it.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Iterator

import libcst as cst

from .base import FileContext

# A function is setup code when one of the words of its name (split at '_') is here.
SETUP_WORDS = frozenset(
    "init initialize setup warmup profile capture dummy register compile benchmark "
    "debug dump repr shutdown close teardown finalize reset weights sleep wake preprocess".split()
)
# Dunder methods that run at construction, teardown or when printing, never per step.
SETUP_DUNDERS = frozenset(
    "init post_init new del repr str format getstate setstate reduce reduce_ex enter exit".split()
)
_NAMED_SETUP = re.compile(
    r"^_*((allocate|alloc|make|create)_\w*(buffer|cache|workspace|tensor)s?"
    r"|load_(model|weights|state_dict|checkpoint)\w*)$"
)
_COLD_NAME = re.compile(r"TYPE_CHECKING|is_compiling|isEnabledFor|debug|^__name__$", re.IGNORECASE)


def is_setup_name(name: str) -> bool:
    if name.startswith("__") and name.endswith("__"):
        return name[2:-2] in SETUP_DUNDERS
    words = [w for w in name.lower().split("_") if w]
    if "warm" in words and "up" in words:
        return True
    return any(w in SETUP_WORDS for w in words) or bool(_NAMED_SETUP.match(name))


def enclosing_functions(node: cst.CSTNode, ctx: FileContext) -> Iterator[cst.FunctionDef]:
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef):
            yield ancestor


def in_setup_function(node: cst.CSTNode, ctx: FileContext) -> bool:
    return any(is_setup_name(f.name.value) for f in enclosing_functions(node, ctx))


def guarded_by(node: cst.CSTNode, ctx: FileContext) -> Iterator[cst.If]:
    """Every ``if`` whose body (not its test or ``else``) contains ``node``."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.If) and child is ancestor.body:
            yield ancestor
        child = ancestor


# Calls whose arguments are only evaluated to be printed.
_MESSAGE_CALLS = frozenset("debug info warning warning_once info_once error exception critical log print warn".split())


def in_cold_code(node: cst.CSTNode, ctx: FileContext) -> bool:
    if in_setup_function(node, ctx) or in_message(node, ctx):
        return True
    return any(is_cold_condition(branch.test) for branch in guarded_by(node, ctx))


def in_message(node: cst.CSTNode, ctx: FileContext) -> bool:
    """In a ``raise`` statement, an ``assert``'s message or an argument of a logging
    call: evaluated only when failing or when the message is emitted. (An ``assert``'s
    test runs on every call and stays hot.)"""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Raise) or isinstance(ancestor, cst.Assert) and child is ancestor.msg:
            return True
        if isinstance(ancestor, cst.Call):
            func = ancestor.func
            name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
            if name in _MESSAGE_CALLS:
                return True
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
        child = ancestor
    return False
    return False


def is_cold_condition(test: cst.BaseExpression) -> bool:
    """A condition that only holds when type checking, compiling, debugging or run as a script."""
    for node in subtree(test):
        name = node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else None
        if name is not None and _COLD_NAME.search(name):
            return True
    return False


def is_target(node: cst.CSTNode, ctx: FileContext) -> bool:
    """Whether ``node`` is (part of) something assigned to or deleted."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.AssignTarget, cst.Del)):
            return True
        if isinstance(ancestor, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
            return child is ancestor.target
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
        child = ancestor
    return False


def unpacked(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The single targets of an assignment target, tuples, lists and ``*rest`` unpacked."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from unpacked(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from unpacked(target.value)
    else:
        yield target


def branch_tests(ctx: FileContext) -> Iterator[cst.BaseExpression]:
    """The condition of every ``if``/``elif``/``while``/conditional expression."""
    for kind in (cst.If, cst.While, cst.IfExp):
        for node in ctx.nodes(kind):
            yield node.test


def subtree(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and its descendants, for small subtrees (a condition, a handler body);
    whole files are read through ``FileContext.nodes``, never walked again.

    Reads the node fields directly: LibCST's ``children`` runs a visitor per call.
    Formatting-only fields (whitespace, commas, parentheses) are skipped."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for name in reversed(_child_fields(type(current))):
            value = getattr(current, name)
            if isinstance(value, cst.CSTNode):
                stack.append(value)
            elif isinstance(value, (tuple, list)):
                stack.extend(reversed([v for v in value if isinstance(v, cst.CSTNode)]))


@functools.lru_cache(maxsize=None)
def _child_fields(kind: type) -> tuple[str, ...]:
    skip = ("whitespace", "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header", "footer", "trailing_whitespace", "newline", "indent")
    return tuple(f.name for f in dataclasses.fields(kind) if not f.name.startswith(skip))
