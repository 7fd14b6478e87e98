"""Host tensors built from shapes and Python numbers inside a function run once per layer.

``torch.tensor([0, q.shape[1] + k.shape[1]], dtype=torch.int32)`` in a helper that a
loop over a stack of blocks calls with its carried state (``layer_loops``) builds the
same tensor in every iteration: its values come only from literals, tensor shapes and
names bound to those, and the shapes of a state threaded through a stack of layers stay
the same from one layer to the next. It belongs before the loop, built once per step
and passed in.

Values that could change per iteration are left alone: a parameter's value (a layer
index), an attribute (``self.scale``: the layer itself in a module's method), anything
read from a tensor's contents, a call other than a shape query. Tensors given a device
that is not the host are left to the host-to-device rules, which report them per call.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator

import libcst as cst

from ....context.execution import COLD_KINDS
from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import subtree
from ..options import Option
from .layer_loops import per_iteration_functions
from .locations import names_host
from .threading_loops import LayerLoop

_BUILDERS = frozenset({"torch.tensor", "torch.as_tensor"})
_SHAPE_CALLS = frozenset({"size", "numel", "dim"})  # ``x.size(1)``: a shape, never the contents
_NUMBER_CALLS = frozenset({"len", "int", "max", "min", "sum"})
_DEPTH = 4  # names bound to names bound to ...: followed this far


class TensorRebuiltPerLayer:
    """A host tensor built from shapes and Python numbers in a function run once per layer of a loop."""

    reach = MatcherReach(reads="function")  # a name's bindings lie in the function
    prefilter: Prefilter = ("tensor(",)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        loops: dict[str, LayerLoop] | None = None
        for call in ctx.nodes(cst.Call):
            if not _host_tensor_of_values(call, ctx):
                continue
            function = ctx.enclosing_function(call)
            if function is None or not _invariant(call.args[0].value, function, ctx, 0):
                continue
            where = ctx.function_at(call)
            if where is None:
                continue
            if loops is None:
                loops = dict(per_iteration_functions(ctx.model))
            loop = loops.get(where.qualname)
            if loop is not None and not _cold(loop.caller, ctx):
                yield Match(call, _bindings(loop))


def _cold(qualname: str, ctx: FileContext) -> bool:
    """The function holding the loop runs once or offline (loading weights layer by layer, say)."""
    return any(f.qualname == qualname and f.kind in COLD_KINDS for f in ctx.execution.functions)


def _bindings(loop: LayerLoop) -> dict[str, str]:
    through = f" (through `{'` and `'.join(name.rpartition('.')[2] for name in loop.through)}`)" if loop.through else ""
    return {
        "CALLER": loop.caller,
        "ITERABLE": loop.iterable,
        "CARRIED": ", ".join(loop.carried),
        "THROUGH": through,
    }


def _host_tensor_of_values(call: cst.Call, ctx: FileContext) -> bool:
    """``torch.tensor(values, ...)`` left on the host: no device, or a host one, and no ``.to``/``.cuda`` chained."""
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return False
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in ("tensor", "as_tensor"):
        return False
    if ctx.qualified_name(call.func) not in _BUILDERS:
        return False
    device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    if device is not None and not names_host(device, ctx):
        return False
    return not isinstance(ctx.parent(call), cst.Attribute)  # ``.to(dev)``, ``.cuda()``: the copy rules' case


def _invariant(expr: cst.BaseExpression, function: cst.FunctionDef, ctx: FileContext, depth: int) -> bool:
    """``expr``'s value comes only from literals, tensor shapes and local names bound to those."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, (cst.List, cst.Tuple)):
        return bool(expr.elements) and all(
            isinstance(e, cst.Element) and _invariant(e.value, function, ctx, depth) for e in expr.elements
        )
    if isinstance(expr, cst.UnaryOperation):
        return _invariant(expr.expression, function, ctx, depth)
    if isinstance(expr, cst.BinaryOperation):
        return _invariant(expr.left, function, ctx, depth) and _invariant(expr.right, function, ctx, depth)
    if isinstance(expr, cst.Subscript):
        return _is_shape(expr.value) and all(_literal_index(element) for element in expr.slice)
    if isinstance(expr, cst.Call):
        return _shape_call(expr, function, ctx, depth)
    if isinstance(expr, cst.Name):
        return depth < _DEPTH and _bound_invariant(expr.value, function, ctx, depth + 1)
    return False


def _is_shape(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "shape"


def _literal_index(element: cst.SubscriptElement) -> bool:
    index = element.slice
    if not isinstance(index, cst.Index):
        return False
    value = index.value
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    return isinstance(value, cst.Integer)


def _shape_call(call: cst.Call, function: cst.FunctionDef, ctx: FileContext, depth: int) -> bool:
    """``x.size(1)``, ``x.numel()``, ``len(x)``, or ``max``/``min``/``int`` of invariant values."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _SHAPE_CALLS:
        return all(isinstance(a.value, (cst.Integer, cst.UnaryOperation)) for a in call.args)
    if isinstance(func, cst.Name) and func.value == "len" and len(call.args) == 1:
        return True
    if isinstance(func, cst.Name) and func.value in _NUMBER_CALLS and call.args:
        return all(not a.keyword and not a.star and _invariant(a.value, function, ctx, depth) for a in call.args)
    return False


def _bound_invariant(name: str, function: cst.FunctionDef, ctx: FileContext, depth: int) -> bool:
    """Every binding of local ``name`` gives it an invariant value; a parameter (a layer index, say) never does."""
    params = function.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    if any(p.name.value == name for p in every):
        return False
    values: list[cst.BaseExpression] = []
    unpacked = False
    # Bindings in nested functions count too: another binding only makes the verdict stricter.
    for node in subtree(function.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                position = _position_in(target.target, name)
                if position is None:
                    continue
                if position == -1:
                    values.append(node.value)
                elif _is_shape(node.value):  # ``b, s, _ = x.shape``: a shape per position
                    unpacked = True
                else:
                    return False
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.WithItem, cst.NamedExpr)):
            if _binds(node, name):
                return False
    return (unpacked or bool(values)) and all(_invariant(value, function, ctx, depth) for value in values)


def _position_in(target: cst.BaseExpression, name: str) -> int | None:
    """-1 when ``target`` is ``name``; its position when ``target`` unpacks into it; None when it does not bind it."""
    if isinstance(target, cst.Name):
        return -1 if target.value == name else None
    if isinstance(target, (cst.Tuple, cst.List)):
        for position, element in enumerate(target.elements):
            if isinstance(element.value, cst.Name) and element.value.value == name:
                return position
    return None


def _binds(node: cst.CSTNode, name: str) -> bool:
    target = getattr(node, "target", None) or getattr(node, "asname", None)
    if isinstance(target, cst.AsName):
        target = target.name
    return target is not None and any(isinstance(n, cst.Name) and n.value == name for n in subtree(target))
