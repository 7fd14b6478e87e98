"""Tensors that carry autograd history, stored in state that outlives the step.

A tensor that requires grad holds its ``grad_fn``, and through it the graph of the step
that made it. Kept in ``self.losses`` or ``self.total_loss += loss``, every step's graph
stays reachable: memory grows with each step (PyTorch FAQ, "Don't accumulate history
across your training loop"). ``.cpu()``, ``.to()`` and ``.clone()`` keep the history;
``.detach()``, ``.item()``, ``.tolist()`` and ``float()`` drop it.

Grad is known to be live only where the function shows it: a tensor it calls
``.backward()`` on (or hands to ``accelerator.backward(loss)``,
``torch.autograd.backward``/``grad``), what such a tensor was read from alone (``loss = out.loss`` makes ``out`` carry history
too), and every local name assigned from a value that carries history. Functions
decorated with ``torch.no_grad()``/``inference_mode()`` and the bodies of such
``with`` blocks record no history and are left alone.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, child_nodes, own_nodes
from ..context import bound_names, unpacked
from ..options import Option

_NO_GRAD = frozenset({"no_grad", "inference_mode"})
_AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.backward", "torch.autograd.grad"})
# Methods whose result has no history: a number, a list, an array or a detached tensor.
_DETACHING_METHODS = frozenset({"detach", "item", "tolist", "numpy", "size", "dim", "numel", "data_ptr", "any", "all"})
_DETACHING_CALLS = frozenset({"float", "int", "bool", "str", "len", "repr", "format", "round", "isinstance", "type", "id"})
# Attributes that are metadata or history-free tensors (``.grad`` of a leaf, ``.data``).
_HISTORY_FREE_ATTRIBUTES = frozenset({"data", "shape", "dtype", "device", "grad", "requires_grad", "is_leaf", "ndim", "grad_fn"})
# The object a method runs on: never a value the step computed.
_RECEIVERS = frozenset({"self", "cls"})
_STORING_METHODS = frozenset({"append", "extend", "add", "insert", "appendleft", "update", "setdefault"})


class AutogradHistoryKeptInState:
    """``self.losses.append(loss)`` after ``loss.backward()``: every step's graph stays alive."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = ("backward", "autograd")

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for function in ctx.nodes(cst.FunctionDef):
            if any(_is_no_grad(d.decorator, ctx) for d in function.decorators):
                continue
            nodes = list(own_nodes(function.body))
            local = bound_names(function) - _RECEIVERS
            carrying = _carrying_names(nodes, local, ctx)
            if not carrying:
                continue
            for node in nodes:
                stored = _stored_value(node, local)
                if stored is None or _under_no_grad(node, function, ctx):
                    continue
                target, value = stored
                source = _carried(value, carrying)
                if source is not None:
                    yield Match(node, {"STATE": ctx.code(target), "VALUE": ctx.code(value), "SOURCE": source})


def _is_no_grad(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    func = expr.func if isinstance(expr, cst.Call) else expr
    name = ctx.qualified_name(func) or ""
    return name.startswith("torch") and name.rpartition(".")[2] in _NO_GRAD


def _under_no_grad(node: cst.CSTNode, function: cst.FunctionDef, ctx: FileContext) -> bool:
    for ancestor in ctx.ancestors(node):
        if ancestor is function:
            return False
        if isinstance(ancestor, cst.With) and any(_is_no_grad(item.item, ctx) for item in ancestor.items):
            return True
    return False


def _carrying_names(nodes: list[cst.CSTNode], local: set[str], ctx: FileContext) -> dict[str, str]:
    """Local names whose value carries history, each with the tensor that shows it."""
    carrying = {name: name for name in _seeds(nodes, local, ctx)}
    if not carrying:
        return carrying
    bindings: list[tuple[str, cst.BaseExpression]] = []
    for node in nodes:
        if isinstance(node, cst.Assign):
            bindings += [(t.value, node.value) for target in node.targets for t in unpacked(target.target) if isinstance(t, cst.Name)]
        elif isinstance(node, (cst.For, cst.CompFor)):  # an element of a carrying container
            bindings += [(t.value, node.iter) for t in unpacked(node.target) if isinstance(t, cst.Name)]
    changed = True
    while changed:
        changed = False
        for name, value in bindings:
            source = _carried(value, carrying)
            if source is not None and name not in carrying:
                carrying[name] = source
                changed = True
            read_from = _sole_source(value)
            if name in carrying and read_from is not None and read_from in local and read_from not in carrying:
                carrying[read_from] = carrying[name]
                changed = True
    return carrying


def _seeds(nodes: list[cst.CSTNode], local: set[str], ctx: FileContext) -> set[str]:
    """Local names the function back-propagates from: they carry history."""
    computed = {t.value for node in nodes if isinstance(node, cst.Assign)
                for target in node.targets for t in unpacked(target.target) if isinstance(t, cst.Name)}
    seeds: set[str] = set()
    for node in nodes:
        if not isinstance(node, cst.Call):
            continue
        func = node.func
        positional = [a.value for a in node.args if a.keyword is None and a.star == ""]
        if ctx.qualified_name(func) in _AUTOGRAD_FUNCTIONS and positional:
            seeds |= _tensor_names(positional[0])
        elif isinstance(func, cst.Attribute) and func.attr.value == "backward":
            receiver = _tensor_names(func.value)
            # ``loss.backward()``, ``scaler.scale(loss).backward()``, ``out.backward(grad)``
            # on a value the function computed; otherwise an owner handed the tensor
            # (``accelerator.backward(loss)``, ``engine.backward(loss)``).
            if positional and not receiver & computed:
                seeds |= _tensor_names(positional[0])
            else:
                seeds |= receiver
    return seeds & local


def _tensor_names(expr: cst.BaseExpression) -> set[str]:
    """``loss`` of ``loss``, ``out.loss``, ``losses[0]`` or ``scaler.scale(loss)``."""
    if isinstance(expr, cst.Name):
        return {expr.value}
    if isinstance(expr, (cst.Attribute, cst.Subscript)):
        return _tensor_names(expr.value)
    if isinstance(expr, cst.Call):
        given = {n for a in expr.args if a.keyword is None for n in _tensor_names(a.value)}
        if given or not isinstance(expr.func, cst.Attribute):
            return given
        return _tensor_names(expr.func.value)  # ``out.sum()``: a method of the tensor itself
    return set()


def _sole_source(value: cst.BaseExpression) -> str | None:
    """``out`` of ``out.loss``, ``out[0]`` or ``out.logits.float()``: read from one name alone."""
    current = value
    while True:
        if isinstance(current, (cst.Attribute, cst.Subscript)):
            current = current.value
        elif isinstance(current, cst.Call) and isinstance(current.func, cst.Attribute) and not current.args:
            current = current.func.value
        else:
            break
    return current.value if isinstance(current, cst.Name) and current is not value else None


def _carried(value: cst.CSTNode, carrying: dict[str, str]) -> str | None:
    """The history-carrying tensor that reaches ``value`` with its history, if any."""
    if isinstance(value, cst.Name):
        return carrying.get(value.value)
    if isinstance(value, cst.Attribute):
        return None if value.attr.value in _HISTORY_FREE_ATTRIBUTES else _carried(value.value, carrying)
    if isinstance(value, (cst.BaseString, cst.Comparison, cst.Lambda)):
        return None
    if isinstance(value, cst.Arg):
        return _carried(value.value, carrying)  # not its keyword
    parts = child_nodes(value)
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in _DETACHING_METHODS:
            return None
        if isinstance(func, cst.Name) and func.value in _DETACHING_CALLS:
            return None
        parts = [*value.args, func.value] if isinstance(func, cst.Attribute) else list(value.args)
    for part in parts:
        found = _carried(part, carrying)
        if found is not None:
            return found
    return None


def _stored_value(node: cst.CSTNode, local: set[str]) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """``(state, value)`` where ``node`` keeps ``value`` in state that outlives the call:
    an attribute of ``self`` (or an item of one), or a container not bound in the function."""
    if isinstance(node, cst.Assign):
        for target in node.targets:
            if _is_state(target.target, local):
                return target.target, node.value
    if isinstance(node, cst.AugAssign) and _is_state(node.target, local):
        return node.target, node.value
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _STORING_METHODS:
        if node.args and _is_state(node.func.value, local, container=True):
            return node.func.value, node.args[-1].value
    return None


def _is_state(target: cst.BaseExpression, local: set[str], *, container: bool = False) -> bool:
    while isinstance(target, cst.Subscript):
        target, container = target.value, True
    if isinstance(target, cst.Attribute):
        root = target.value
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        return isinstance(root, cst.Name) and root.value == "self"
    # A container the function reads but never binds lives at module level (or in a closure).
    return container and isinstance(target, cst.Name) and target.value not in local
