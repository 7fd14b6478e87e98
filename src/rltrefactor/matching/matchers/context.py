"""Where a node sits: shared questions that patterns and Python matchers both ask.

"Cold code" is code that runs once or only when diagnosing, even inside a hot-path
module: construction and setup functions, warm-up and profiling runs, ``__repr__``,
weight loading and processing (``process_weights_after_loading``), sleep/wake-up
offloading, ``if TYPE_CHECKING:`` blocks, debug/logging-guarded branches,
``torch.compiler.is_compiling()`` guards, one-time guards whose body keeps what it
builds and code after a return on a cache hit (``once``), early returns on degenerate inputs (``early_returns``),
``raise`` statements and the messages of assertions and log calls. Device-residency
rules skip it.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import libcst as cst

from ...context.execution import COLD_KINDS
from ...library.names import Names, bundled_names
from ...context.execution import is_setup_name as is_setup_name  # re-exported: matchers read it here
from ...source.syntax import byte_column
from ...source.waits import waited_before
from .base import FileContext, own_nodes
from .early_returns import is_degenerate_exit
from .fallbacks import in_unused_fallback
from .guard_bodies import guard_body
from .imports import dotted_name, resolve
from .once import after_cache_hit, in_cached_value, is_one_time_guard, statement_of
from .walk import bound_before as bound_before, subtree as subtree  # re-exported: matchers read them here
from .walk import holders_by


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
    (configuration included; never a name alone), in a message, under a cold condition
    (an ``if``'s or a conditional expression's),
    a one-time guard or a condition that is false as written, after a return on a cache
    hit of a cache the function fills (once per key), after a return while a cold
    condition is off (``if not envs.DEBUG_METRICS: return``), in an early return on a
    degenerate input (``early_returns``), or in a fallback for an optional parameter
    every caller passes (``fallbacks``). The engine drops hits of ``runs: per-step``
    rules there; matchers never ask."""
    if in_message(node, ctx) or in_cold_function(node, ctx) or in_cached_value(node, ctx) or after_cache_hit(node, ctx) \
            or in_unused_fallback(node, ctx) or after_cold_exit(node, ctx):
        return True
    return any(
        is_cold_condition(branch.test, ctx.names) or is_never_true(branch.test) or is_one_time_guard(branch, ctx)
        or is_degenerate_exit(branch, ctx)
        for branch in guarded_by(node, ctx)
    ) or any(is_cold_condition(choice.test, ctx.names) for choice in chosen_by(node, ctx))


def after_cold_exit(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` follows, in its function's own body, ``if not <cold condition>: return``
    (no ``else``): it runs only while the diagnostics gate is on."""
    found = statement_of(node, ctx)
    if found is None:
        return False
    _, statements, top = found
    for statement in statements[: statements.index(top)]:
        if (isinstance(statement, cst.If) and statement.orelse is None and isinstance(statement.test, cst.UnaryOperation)
                and isinstance(statement.test.operator, cst.Not) and is_cold_condition(statement.test.expression, ctx.names)):
            body = guard_body(statement, ctx)
            if body is not None and body.exits:
                return True
    return False


def chosen_by(node: cst.CSTNode, ctx: FileContext) -> Iterator[cst.IfExp]:
    """Every conditional expression whose chosen value (``A`` of ``A if c else B``) contains
    ``node``, within its statement."""
    return holders_by(node, ctx, cst.IfExp, "body", (cst.BaseSmallStatement, cst.BaseCompoundStatement))


def in_sync_allowing_block(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` lies in the body of a ``with`` of one of the ``sync-allowing-contexts``
    (``with gpu_sync_allowed():``, or one a conditional expression chooses) in its own
    function, or in a function that runs only inside such blocks (the call index's
    ``acknowledged``: the manager's scope is dynamic): a synchronization there is made on
    purpose and says so."""
    allowing = ctx.names.regex("sync-allowing-contexts")
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            break
        if isinstance(ancestor, cst.With) and child is ancestor.body and any(
                isinstance(call, cst.Call) and allowing.search(dotted_name(call.func) or "")
                for item in ancestor.items for call in subtree(item.item)):
            return True
        child = ancestor
    where = ctx.function_at(node)
    return where is not None and where.qualname in ctx.execution.acknowledged


def after_host_wait(node: cst.CSTNode, ctx: FileContext) -> bool:
    """The host waited for the device earlier in the function, on every path to ``node``
    (``copy_done.synchronize()``), and what ``node`` reads existed before the wait
    (``source.waits``): a read there adds no wait of its own. A read that first computes
    (``seq_lens.max().item()``) launches work after the wait and waits for it; a wait
    itself (``torch.cuda.synchronize()``) is no read."""
    nodes = list(subtree(node))
    if sum(isinstance(sub, cst.Call) for sub in nodes) != 1:
        return False
    if isinstance(node, cst.Call) and (resolve(ctx.imports, node.func) or "").rsplit(".", 1)[-1] == "synchronize":
        return False
    span = ctx.span(node)
    column = byte_column(ctx.model.text.split("\n"), span)
    return waited_before(ctx.model.tree, span.line, column, _read_roots(nodes))


def _read_roots(nodes: list[cst.CSTNode]) -> frozenset[str]:
    """The names the expressions among ``nodes`` (a subtree) start from: ``result`` of
    ``result.next_token_ids.tolist()``; never an attribute's own name."""
    attributes = {id(sub.attr) for sub in nodes if isinstance(sub, cst.Attribute)}
    return frozenset(sub.value for sub in nodes if isinstance(sub, cst.Name) and id(sub) not in attributes)


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
    """A condition that only holds when type checking, compiling, debugging, profiling or
    timing, or run as a script. Its negation (``not debug``, ``profiler is None``) holds
    in ordinary runs: it says nothing, and so does an ``or`` with any such operand."""
    if isinstance(test, cst.BooleanOperation):  # an ``and`` is cold by one operand, an ``or`` by every one
        operands = (test.left, test.right)
        cold = (is_cold_condition(operand, names) for operand in operands)
        return all(cold) if isinstance(test.operator, cst.Or) else any(cold)
    if _negated(test):
        return False
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


def _negated(test: cst.BaseExpression) -> bool:
    """``not x`` or ``x is None``: true when what ``x`` names is off."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return True
    return (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Is)
            and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None")


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
