"""Early returns on degenerate inputs: cold branches of per-step code.

``if x.numel() == 0: return torch.zeros(...)``, ``if not batch: return ...``,
``if std == 0: return torch.zeros_like(x)``, ``if attn_metadata is None: return out``:
a branch whose test finds an input empty, of size zero, of zero variance or missing,
and whose body ends by returning or raising, runs only for that input. What it builds
is no per-call copy or allocation.

The test decides, by its shape: a size (``x.numel()``, ``len(x)``, ``x.shape[i]``,
``x.size(i)``), a standard deviation or variance (``x.std()``, ``std``), or a plain name,
compared equal to (or at most) zero; ``not name``; ``value is None``. An ``or`` is
degenerate when every operand is, an ``and`` when one is. The common path is not
(``x.numel() > 0``, ``batch_size == 1``), nor a flag (``not self.enabled``, ``not
use_cache`` of a ``bool`` parameter), nor a state of the object (``self.x is None``:
a one-time guard's question, see ``once.is_one_time_guard``).
"""

from __future__ import annotations

import re

import libcst as cst

from .base import FileContext
from .guard_bodies import guard_body

_SIZES = frozenset({"numel", "nelement", "size", "len", "std", "var"})
_SPREAD_WORD = re.compile(r"(?:^|_)(?:std|var|variance|stddev)(?:$|_)")


def is_degenerate_exit(branch: cst.If, ctx: FileContext) -> bool:
    """``branch`` tests for a degenerate input and its body (in the whole file) returns or raises."""
    function = ctx.enclosing_function(branch)
    if function is None or not is_degenerate_check(branch.test, function, ctx):
        return False
    body = guard_body(branch, ctx)
    return body is not None and body.exits


def is_degenerate_check(test: cst.BaseExpression, function: cst.FunctionDef, ctx: FileContext) -> bool:
    if isinstance(test, cst.BooleanOperation):
        first = is_degenerate_check(test.left, function, ctx)
        second = is_degenerate_check(test.right, function, ctx)
        return first and second if isinstance(test.operator, cst.Or) else first or second
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return isinstance(test.expression, cst.Name) and _is_input(test.expression, function, ctx) \
            and not _is_flag(test.expression.value, function)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(operator, cst.Is) and isinstance(right, cst.Name) and right.value == "None":
        return _is_input(test.left, function, ctx)
    if _is_zero(right) and isinstance(operator, (cst.Equal, cst.LessThanEqual)):
        return _measures_size(test.left)
    if _is_zero(test.left) and isinstance(operator, (cst.Equal, cst.GreaterThanEqual)):
        return _measures_size(right)
    return False


def _measures_size(expr: cst.BaseExpression) -> bool:
    """A size, a spread, or a plain name (``seq_len``): what a degenerate input has as zero."""
    if isinstance(expr, cst.Name):
        return True
    if isinstance(expr, cst.Attribute):
        return _SPREAD_WORD.search(expr.attr.value) is not None
    if isinstance(expr, cst.Call):
        func = expr.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        return name in _SIZES
    if isinstance(expr, cst.Subscript):  # ``x.shape[0]``, ``x.size()[0]``
        value = expr.value
        if isinstance(value, cst.Attribute):
            return value.attr.value == "shape"
        return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size"
    return False


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and expr.evaluated_value == 0


def _is_input(expr: cst.BaseExpression, function: cst.FunctionDef, ctx: FileContext) -> bool:
    """A name, or an attribute or item of one, that is not the object a method runs on."""
    root = expr
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    return isinstance(root, cst.Name) and root.value != _receiver(function, ctx)


def _receiver(function: cst.FunctionDef, ctx: FileContext) -> str | None:
    """The first parameter of a method defined in a class body, unless it is a ``staticmethod``."""
    block = ctx.parent(function)
    if not isinstance(ctx.parent(block) if block is not None else None, cst.ClassDef):
        return None
    if any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in function.decorators):
        return None
    positional = [*function.params.posonly_params, *function.params.params]
    return positional[0].name.value if positional else None


def _is_flag(name: str, function: cst.FunctionDef) -> bool:
    """A parameter annotated ``bool`` or defaulting to ``True``/``False``: ``not name`` reads a switch."""
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value != name:
            continue
        annotation = param.annotation.annotation if param.annotation is not None else None
        default = param.default
        return (isinstance(annotation, cst.Name) and annotation.value == "bool") or (
            isinstance(default, cst.Name) and default.value in ("True", "False")
        )
    return False
