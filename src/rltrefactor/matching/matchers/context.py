"""Where a node sits: shared questions that patterns and Python matchers both ask.

"Cold code" is code that runs once or only when diagnosing, even inside a hot-path
module: construction and setup functions, warm-up and profiling runs, ``__repr__``,
weight loading and processing (``process_weights_after_loading``), sleep/wake-up
offloading, ``if TYPE_CHECKING:`` blocks, debug/logging-guarded branches,
``torch.compiler.is_compiling()`` guards, one-time guards whose body keeps what it
builds (``guard_bodies``), early returns on degenerate inputs (``early_returns``),
``raise`` statements and the messages of assertions and log calls. Device-residency
rules skip it.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Iterator, Sequence

import libcst as cst

from ...context.execution import COLD_KINDS
from ...library.names import Names, bundled_names
from ...context.execution import is_setup_name as is_setup_name  # re-exported: matchers read it here
from .base import TRIVIA_FIELDS, FileContext, own_nodes
from .early_returns import is_degenerate_exit
from .guard_bodies import guard_body


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


def runs_cold(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` runs once, offline or never: in a function the execution stage found so
    (configuration included; never a name alone), in a message, under a cold condition,
    a one-time guard or a condition that is false as written, or in an early return on a
    degenerate input (``early_returns``). The engine drops hits of ``runs: per-step``
    rules there; matchers never ask."""
    if in_message(node, ctx) or in_cold_function(node, ctx) or in_cached_value(node, ctx):
        return True
    return any(
        is_cold_condition(branch.test, ctx.names) or is_never_true(branch.test) or is_one_time_guard(branch, ctx)
        or is_degenerate_exit(branch, ctx)
        for branch in guarded_by(node, ctx)
    )


def in_cold_function(node: cst.CSTNode, ctx: FileContext) -> bool:
    """The execution-context stage found the enclosing function one-time or offline."""
    found = ctx.function_at(node)
    return found is not None and found.kind in COLD_KINDS


def in_per_step_function(node: cst.CSTNode, ctx: FileContext) -> bool:
    """The execution-context stage found the enclosing function per-step."""
    found = ctx.function_at(node)
    return found is not None and found.kind == "per-step"


def configured_per_step(node: cst.CSTNode, ctx: FileContext) -> bool:
    """The configuration makes the enclosing function per step (``hot-functions``,
    ``hot-paths``): a rule's own list of per-step function names adds to these, and
    never leaves one of them out."""
    found = ctx.function_at(node)
    return found is not None and found.configured


def is_never_true(test: cst.BaseExpression) -> bool:
    """``if False:``, ``if 0:``, ``if cond and False:``: the body never runs as written."""
    if isinstance(test, cst.Name):
        return test.value in ("False", "None")
    if isinstance(test, cst.Integer):
        return test.evaluated_value == 0
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return is_never_true(test.left) or is_never_true(test.right)
    if isinstance(test, cst.BooleanOperation):  # ``or``
        return is_never_true(test.left) and is_never_true(test.right)
    return False


def is_one_time_guard(branch: cst.If, ctx: FileContext) -> bool:
    """The body runs once, then never again, because it keeps what it builds
    (``guard_bodies``): ``if self._buf is None: self._buf = ...``, ``if not
    self._initialized:`` or ``if not hasattr(self, "_buf"):`` with a body that writes
    state, ``if key not in self._cache: self._cache[key] = ...`` (once per key), ``if
    _MASK is None: _MASK = ...`` of a declared global. A cache rebuilt only when missing
    or stale (``if self._buf is None or self._buf.shape[0] < n: self._buf = ...``) counts
    too: every other operand of the ``or`` reads the cached attribute, so the body runs
    again only when what it caches changes. A guard whose body fills a local or a
    parameter's default (``if alpha is None: alpha = ...``) runs on every call that needs it."""
    test = branch.test
    if not _may_guard_once(test, ctx.names):
        return False
    body = guard_body(branch, ctx)
    if body is None:
        return False
    if isinstance(test, cst.BooleanOperation):
        operands = list(_or_operands(test))
        for index, operand in enumerate(operands):
            cached = _missing_attribute(operand)
            if cached is None or cached not in body.attributes:
                continue
            others = operands[:index] + operands[index + 1:]
            if all(_reads_attribute(other, cached) for other in others):
                return True
        return False
    if isinstance(test, cst.UnaryOperation):  # ``not self.<flag>``, ``not hasattr(...)``
        return body.keeps_state
    comparison = test.comparisons[0] if isinstance(test, cst.Comparison) else None
    if comparison is not None and isinstance(comparison.operator, cst.NotIn):
        return ctx.code(comparison.comparator).strip() in body.containers
    if isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name):
        return test.left.value in body.globals
    return _missing_attribute(test) in body.attributes


def _may_guard_once(test: cst.BaseExpression, names: Names) -> bool:
    """``test`` has the shape of a one-time guard's (what its body must then keep aside)."""
    if isinstance(test, cst.BooleanOperation):
        return isinstance(test.operator, cst.Or)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = test.expression
        if isinstance(inner, cst.Attribute):
            return names.regex("one-time-flags").search(inner.attr.value) is not None
        return isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "hasattr"
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    operator, comparator = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(operator, cst.NotIn):  # ``key not in cache``: a memoised value
        return True
    missing = isinstance(operator, cst.Is) and isinstance(comparator, cst.Name) and comparator.value == "None"
    return missing and isinstance(test.left, (cst.Attribute, cst.Name))


def in_cached_value(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``self.x = build() if self.x is None else self.x`` (or the ``is not None`` form with
    the branches swapped): ``node`` lies in the branch that builds the cached attribute, which
    runs only while the cache is missing, or stale when every other ``or`` operand of the
    test reads it, as for ``is_one_time_guard``."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.IfExp):
            builds = ancestor.body if child is ancestor.body else ancestor.orelse if child is ancestor.orelse else None
            cached = _cached_attribute(ancestor.test, missing=builds is ancestor.body)
            if builds is not None and cached is not None and cached in _assigned_by_value(ancestor, ctx):
                return True
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return False
        child = ancestor
    return False


def _cached_attribute(test: cst.BaseExpression, *, missing: bool) -> str | None:
    """The attribute ``test`` finds missing (``missing``) or present, where the test reads
    nothing but that attribute in its other ``or`` operands."""
    if not missing:
        comparison = test if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 else None
        if comparison is None or not isinstance(comparison.comparisons[0].operator, cst.IsNot):
            return None
        comparator = comparison.comparisons[0].comparator
        if isinstance(comparator, cst.Name) and comparator.value == "None" and isinstance(comparison.left, cst.Attribute):
            return comparison.left.attr.value
        return None
    operands = list(_or_operands(test))
    for index, operand in enumerate(operands):
        cached = _missing_attribute(operand)
        if cached is not None and all(_reads_attribute(o, cached) for o in operands[:index] + operands[index + 1:]):
            return cached
    return None


def _assigned_by_value(value: cst.BaseExpression, ctx: FileContext) -> set[str]:
    """The attributes an assignment whose whole value is ``value`` writes (``self.x = value``)."""
    parent = ctx.parent(value)
    if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is value:
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        return {t.attr.value for t in targets if isinstance(t, cst.Attribute)}
    return set()


def _or_operands(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        yield from _or_operands(test.left)
        yield from _or_operands(test.right)
    else:
        yield test


def _missing_attribute(test: cst.BaseExpression) -> str | None:
    """``self.x is None``: the attribute found missing."""
    if (
        isinstance(test, cst.Comparison) and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Is)
        and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
        and isinstance(test.left, cst.Attribute)
    ):
        return test.left.attr.value
    return None


def _reads_attribute(test: cst.BaseExpression, name: str) -> bool:
    return any(isinstance(node, cst.Attribute) and node.attr.value == name for node in subtree(test))


def in_message(node: cst.CSTNode, ctx: FileContext) -> bool:
    """In a ``raise`` statement, an ``assert``'s message or an argument of a logging
    call: evaluated only when failing or when the message is emitted. (An ``assert``'s
    test runs on every call and stays hot.)"""
    message_calls = ctx.names.entry("message-calls").values
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Raise) or isinstance(ancestor, cst.Assert) and child is ancestor.msg:
            return True
        if isinstance(ancestor, cst.Call):
            func = ancestor.func
            name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
            if name in message_calls:
                return True
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
        child = ancestor
    return False


def is_cold_condition(test: cst.BaseExpression, names: Names | None = None) -> bool:
    """A condition that only holds when type checking, compiling, debugging or run as a script."""
    cold_name = (names or bundled_names()).regex("cold-conditions")
    attribute_names: set[int] = set()  # ``attr`` of an attribute: read through the attribute
    for node in subtree(test):  # pre-order: an attribute comes before its ``attr``
        if isinstance(node, cst.Attribute):
            attribute_names.add(id(node.attr))
            # ``obj.__class__.__name__`` is the name of a type, not the script's ``__name__``.
            if not _is_dunder(node.attr.value) and cold_name.search(node.attr.value):
                return True
        elif isinstance(node, cst.Name) and id(node) not in attribute_names and cold_name.search(node.value):
            return True
    return False


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


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


def subtree(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and its descendants, for small subtrees (a condition, a handler body);
    whole files are read through ``FileContext.nodes``, never walked again.

    Reads the node fields directly: LibCST's ``children`` runs a visitor per call.
    Formatting-only fields (whitespace, commas, parentheses) are skipped."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for name in _child_fields(type(current)):
            value = getattr(current, name)
            kind = type(value)
            if kind is tuple or kind is list:
                stack.extend(reversed([item for item in value if _is_cst(type(item))]))
            elif _is_cst(kind):
                stack.append(value)


@functools.lru_cache(maxsize=None)
def _child_fields(kind: type) -> tuple[str, ...]:
    """Fields that may hold code, last first (the stack pops the first field first)."""
    return tuple(reversed([f.name for f in dataclasses.fields(kind) if not f.name.startswith(TRIVIA_FIELDS)]))


_IS_CST: dict[type, bool] = {}


def _is_cst(kind: type) -> bool:
    # A dict lookup: CSTNode is an ABC, and isinstance() against an ABC is slow.
    flag = _IS_CST.get(kind)
    if flag is None:
        flag = _IS_CST[kind] = issubclass(kind, cst.CSTNode)
    return flag


def truth_conditions(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The values a branch turns into Python bools: ``and``/``or`` operands, under ``not``."""
    if isinstance(test, cst.BooleanOperation):
        yield from truth_conditions(test.left)
        yield from truth_conditions(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from truth_conditions(test.expression)
    else:
        yield test


def comparison_sides(comparison: cst.Comparison) -> list[cst.BaseExpression]:
    return [comparison.left, *(target.comparator for target in comparison.comparisons)]


def bound_before(name: cst.Name, ctx: FileContext) -> cst.BaseExpression | None:
    """The value of the last plain assignment to ``name`` before this use, in source order
    (``None`` when there is none, or when a loop or unpacking binds it too)."""
    function = ctx.enclosing_function(name)
    if function is None:
        return None
    value: cst.BaseExpression | None = None
    for node in subtree(function.body):  # pre-order: source order
        if node is name:
            return value
        if isinstance(node, cst.Assign) and any(_binds(t.target, name.value) for t in node.targets):
            plain = all(isinstance(t.target, cst.Name) for t in node.targets)
            value = node.value if plain and not any(n is name for n in subtree(node)) else None
        elif isinstance(node, (cst.For, cst.CompFor, cst.AugAssign)) and _binds(node.target, name.value):
            value = None
    return None


def _binds(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds(e.value, name) for e in target.elements)
    return False


def parameter_names(function: cst.FunctionDef) -> set[str]:
    """The names of ``function``'s positional and keyword parameters (not ``*args``/``**kwargs``)."""
    params = function.params
    return {p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]}


def caught_types(handler: cst.ExceptHandler) -> list[cst.BaseExpression]:
    """The exception types an ``except`` names: one, or each of a tuple; none for a bare ``except:``."""
    if handler.type is None:
        return []
    return [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]


def statement_and_block(
    node: cst.CSTNode, ctx: FileContext
) -> tuple[cst.SimpleStatementLine | None, Sequence[cst.BaseStatement]]:
    """The simple statement holding ``node`` and the block it is a statement of; (None,
    ()) when ``node`` sits in a compound statement's header or a lambda."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
            return (child, ancestor.body) if isinstance(child, cst.SimpleStatementLine) else (None, ())
        if isinstance(ancestor, (cst.Lambda, cst.BaseCompoundStatement)):
            return None, ()
        child = ancestor
    return None, ()


def bound_names(function: cst.FunctionDef) -> set[str]:
    """Names ``function`` binds locally: its parameters and the targets of its own
    statements (assignments, loops, ``with ... as``, ``except ... as``), less names it
    declares ``global`` or ``nonlocal``. Nested functions and classes bind their own."""
    params = function.params
    names = parameter_names(function)
    names.update(s.name.value for s in (params.star_arg, params.star_kwarg) if isinstance(s, cst.Param))
    declared: set[str] = set()
    for node in own_nodes(function.body):
        if isinstance(node, cst.Assign):
            names.update(t.value for target in node.targets for t in unpacked(target.target) if isinstance(t, cst.Name))
        elif isinstance(node, (cst.For, cst.CompFor, cst.AugAssign, cst.AnnAssign)):
            names.update(t.value for t in unpacked(node.target) if isinstance(t, cst.Name))
        elif isinstance(node, cst.AsName) and isinstance(node.name, cst.Name):
            names.add(node.name.value)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            declared.update(n.name.value for n in node.names)
    return names - declared


def plain_assignments(function: cst.FunctionDef, name: str) -> list[cst.BaseExpression] | None:
    """The values every plain assignment gives ``name`` in ``function``; None when something else binds it."""
    values: list[cst.BaseExpression] = []
    for node in subtree(function.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    if target.target.value == name:
                        values.append(node.value)
                elif any(isinstance(n, cst.Name) and n.value == name for n in subtree(target.target)):
                    return None
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.WithItem, cst.NamedExpr, cst.CompFor)):
            bound = getattr(node, "target", None) or getattr(node, "asname", None)
            if bound is not None and any(isinstance(n, cst.Name) and n.value == name for n in subtree(bound)):
                return None
    return values
