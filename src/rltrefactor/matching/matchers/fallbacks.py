"""Branches on an optional parameter that no per-step caller takes: code that runs only
when the parameter is left ``None`` (``if cu_seqlens_host is None: cu_seqlens_host =
cu_seqlens.tolist()``) in a function every caller of which passes it a value (the call
index's ``execution.passed_params``), and code that runs only when it differs from its
default (``if param_padding is not None:``, ``if norm_type == inf:`` of ``norm_type=2``) in
a function only one-time or per-request code passes it to (``execution.withheld_params``).
``context.runs_cold`` asks this; a finding of a per-step rule there is dropped."""

from __future__ import annotations

import libcst as cst

from .base import FileContext
from .once import tested_against_none
from .walk import binds, bound_in_body, subtree


def in_unused_fallback(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` lies where a parameter of its function is ``None`` (the body of ``if p is
    None:``, the ``else`` of ``if p is not None:``, or the matching branch of a conditional
    expression) and every caller passes ``p`` (``execution.passed_params``); or where the
    parameter differs from its default and no per-step caller passes it
    (``execution.withheld_params``), the function never rebinding it (``bound_in_body``).
    A branch in a nested function on a parameter of the function around it that the nested
    one does not bind (a closure's ``if for_capture:``) is that function's branch."""
    passed, withheld = ctx.execution.passed_params, ctx.execution.withheld_params
    if not passed and not withheld:
        return False
    # Each test on the way up, with the branch taken and how many functions lie inside it.
    branches: list[tuple[cst.If | cst.IfExp, cst.CSTNode, int]] = []
    functions: list[cst.FunctionDef] = []  # the enclosing functions, innermost first
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Lambda):
            break
        if isinstance(ancestor, cst.FunctionDef):
            functions.append(ancestor)
        elif isinstance(ancestor, (cst.If, cst.IfExp)) and child in (ancestor.body, ancestor.orelse):
            branches.append((ancestor, child, len(functions)))
        child = ancestor
    for branch, taken, level in branches:
        for function in functions[level:]:
            defaults = {p.name.value: p.default for p in (*function.params.params, *function.params.kwonly_params)}
            if _decides(branch, taken, function, defaults, ctx):
                return True
            if any(binds(function, name) for name in _names_tested(branch.test)):
                break  # the function binds what the test reads: an outer one's parameter is not it
    return False


def _decides(branch: cst.If | cst.IfExp, taken: cst.CSTNode, function: cst.FunctionDef,
             defaults: dict[str, cst.BaseExpression | None], ctx: FileContext) -> bool:
    """``taken`` runs only on a value of ``function``'s parameter that no per-step call gives."""
    where = ctx.execution.at(ctx.span(function.name).line)
    if where is None:
        return False
    tested = _none_test(branch.test)
    if tested is not None and (where.qualname, tested[0]) in ctx.execution.passed_params and tested[0] in defaults \
            and (taken is branch.body) is tested[1]:
        return True
    differs = _differs_from_default(branch, taken, defaults, ctx)
    return differs is not None and (where.qualname, differs) in ctx.execution.withheld_params \
        and not bound_in_body(function, differs, casts_keep=True)


def _names_tested(test: cst.BaseExpression) -> set[str]:
    return {n.value for n in subtree(test) if isinstance(n, cst.Name)}


def _none_test(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """(``p``, True) for ``p is None``, (``p``, False) for ``p is not None``."""
    for operator, is_none in ((cst.Is, True), (cst.IsNot, False)):
        tested = tested_against_none(test, operator)
        if isinstance(tested, cst.Name):
            return tested.value, is_none
    return None


def _differs_from_default(branch: cst.If | cst.IfExp, taken: cst.CSTNode,
                          defaults: dict[str, cst.BaseExpression | None], ctx: FileContext) -> str | None:
    """``p`` where ``branch`` compares the parameter with a value (``p == X``, ``p is not
    None``, either side) or tests its truth (``if p:``, ``if p and ...:``, the ``else`` of
    ``if not p:``; a default that is false: ``None``, ``False``, ``0``, ``""``) and
    ``taken`` runs only when ``p`` is not its default."""
    test = branch.test
    for truthy in _truthy_names(test, body=taken is branch.body):
        default = defaults.get(truthy)
        value = literal_value(default) if default is not None else UNKNOWN
        if value is not UNKNOWN and not value:  # ``None``, ``False``, ``0``, ``""``
            return truthy
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        # ``if p is not None and p.numel() > 0:``: the body needs every operand, this one too;
        # the ``else`` runs where any operand fails.
        return _conjunct_differs(test, defaults) if taken is branch.body else None
    return _compared_differs(test, taken is branch.body, defaults)


def _conjunct_differs(test: cst.BaseExpression, defaults: dict[str, cst.BaseExpression | None]) -> str | None:
    """``p`` where an operand of an ``and`` holds only when ``p`` is not its default."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjunct_differs(test.left, defaults) or _conjunct_differs(test.right, defaults)
    return _compared_differs(test, True, defaults)


def _compared_differs(test: cst.BaseExpression, body: bool, defaults: dict[str, cst.BaseExpression | None]) -> str | None:
    """``p`` where ``test`` compares the parameter with a value and the branch (its body:
    ``body``, else the ``else``) runs only when ``p`` is not its default."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    equal = isinstance(target.operator, (cst.Equal, cst.Is))
    if not equal and not isinstance(target.operator, (cst.NotEqual, cst.IsNot)):
        return None
    for name, other in ((test.left, target.comparator), (target.comparator, test.left)):
        if not isinstance(name, cst.Name):
            continue
        default = defaults.get(name.value)
        if default is None:
            continue
        compared, kept = literal_value(other), literal_value(default)
        if compared is UNKNOWN or kept is UNKNOWN:
            return None
        # ``p == X`` with X not the default, or ``p != default``: true only when p differs.
        holds_when_differs = equal is not (compared == kept)
        return name.value if body is holds_when_differs else None
    return None


def _truthy_names(test: cst.BaseExpression, *, body: bool) -> list[str]:
    """Names that are true whenever the branch runs: ``p`` and the operands of ``p and q``
    for the body, ``p`` of ``not p`` for the ``else``."""
    if body and isinstance(test, cst.Name):
        return [test.value]
    if body and isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _truthy_names(test.left, body=True) + _truthy_names(test.right, body=True)
    if not body and isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
            and isinstance(test.expression, cst.Name):
        return [test.expression.value]
    return []


UNKNOWN = object()  # what ``literal_value`` gives for anything but a literal
_INFINITY = frozenset({"inf", "math.inf", "np.inf", "numpy.inf", "torch.inf"})


def literal_value(expr: cst.BaseExpression) -> object:
    """The value a literal writes (``"probs"`` and ``'probs'`` alike, ``2``, ``-1``,
    ``None``, ``inf``/``math.inf``/``float("inf")``); ``UNKNOWN`` for anything else."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
        written = expr.evaluated_value
        return UNKNOWN if written is None else written
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        negated = literal_value(expr.expression)
        return -negated if isinstance(negated, (int, float)) else UNKNOWN
    if isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[expr.value]
    name = expr.value if isinstance(expr, cst.Name) else (
        f"{expr.value.value}.{expr.attr.value}" if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) else "")
    if name in _INFINITY:
        return float("inf")
    if (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "float" and len(expr.args) == 1
            and isinstance(expr.args[0].value, cst.SimpleString) and expr.args[0].value.evaluated_value in ("inf", "+inf")):
        return float("inf")
    return UNKNOWN
