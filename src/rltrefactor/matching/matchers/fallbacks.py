"""Fallbacks no caller takes: code that runs only when an optional parameter is left
``None`` (``if cu_seqlens_host is None: cu_seqlens_host = cu_seqlens.tolist()``), in a
function every caller of which passes that parameter a value (the call index's
``execution.passed_params``). ``context.runs_cold`` asks this; a finding of a per-step
rule there is dropped."""

from __future__ import annotations

import libcst as cst

from .base import FileContext
from .once import tested_against_none


def in_unused_fallback(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` lies where a parameter of its function is ``None``: the body of ``if p is
    None:``, the ``else`` of ``if p is not None:``, or the matching branch of a conditional
    expression; and every caller passes ``p`` (``execution.passed_params``)."""
    passed = ctx.execution.passed_params
    if not passed:
        return False
    missing: set[str] = set()  # parameters found None on the way up
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            break
        if isinstance(ancestor, (cst.If, cst.IfExp)):
            tested = _none_test(ancestor.test)
            if tested is not None:
                name, is_none = tested
                taken = ancestor.body if is_none else ancestor.orelse
                if child is taken:
                    missing.add(name)
        child = ancestor
    else:
        return False
    if not isinstance(ancestor, cst.FunctionDef) or not missing:
        return False
    where = ctx.execution.at(ctx.span(ancestor.name).line)
    parameters = {p.name.value for p in (*ancestor.params.params, *ancestor.params.kwonly_params)}
    return where is not None and any(name in parameters and (where.qualname, name) in passed for name in missing)


def _none_test(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """(``p``, True) for ``p is None``, (``p``, False) for ``p is not None``."""
    for operator, is_none in ((cst.Is, True), (cst.IsNot, False)):
        tested = tested_against_none(test, operator)
        if isinstance(tested, cst.Name):
            return tested.value, is_none
    return None
