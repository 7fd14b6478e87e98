"""Why a value is on the device, in words a finding can carry: what placed it there, as
the type engine or the class's own assignments show it, or which fact is missing for
its place to be known."""

from __future__ import annotations

import libcst as cst

from ....source.tensor_places import HOST_METHODS
from ..base import FileContext
from .attributes import attribute_values
from .locations import on_device, typed_as_parameter
from .type_names import PARAMETER_TENSORS


def residency_reason(expr: cst.CSTNode, ctx: FileContext, placed: bool) -> str:
    """Why ``expr`` is on the device (``placed``), as the type engine saw it, or which fact
    is missing for it to be known; "" where the function's own code says it."""
    code = " ".join(ctx.code(expr).split())
    if placed and (assigned := _assigned_on_device(_typed_root(expr), ctx)):
        return assigned
    if ctx.model.type_engine is None:
        return "" if placed else "no type engine was asked"
    if ctx.model.type_engine.unavailable is not None:
        return "" if placed else "the type engine was off"
    answer = ctx.value_type(_typed_root(expr))
    if placed:
        return f"`{code}` comes from a `{answer}`, a module's parameter" if answer and typed_as_parameter(
            _typed_root(expr), ctx) else ""
    if answer is None:
        return "the type engine has no type for it"
    return f"the type engine says `{answer}`, which does not name a device"


def _assigned_on_device(expr: cst.CSTNode, ctx: FileContext) -> str:
    """"`self.scale` is assigned `torch.ones(..., device=dev)` in `__init__`", where every
    value the class gives the attribute is on the device; "" otherwise."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    values = attribute_values(expr, ctx)
    if not values or not all(on_device(v.value, ctx, 1) for v in values):
        return ""
    first = values[0]
    value = " ".join(ctx.code(first.value).split())
    value = value if len(value) <= 60 else value[:57] + "..."
    more = f" (and {len(values) - 1} more such assignments)" if len(values) > 1 else ""
    return f"`{ctx.code(expr)}` is assigned `{value}` in `{first.method}`{more}"


def _typed_root(expr: cst.CSTNode) -> cst.CSTNode:
    """The value a method chain or a parameter's tensor starts from: ``param`` of
    ``param.grad.norm()``; the expression itself otherwise."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value not in HOST_METHODS:
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value in PARAMETER_TENSORS:
            expr = expr.value
        else:
            return expr
