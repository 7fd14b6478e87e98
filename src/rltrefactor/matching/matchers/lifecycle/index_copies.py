"""Writes into the copy that advanced indexing returns.

Indexing a tensor with a tensor, a list or a boolean mask (advanced indexing) returns a
new tensor, not a view (PyTorch and NumPy indexing semantics). An in-place method on
that result (``x[idx].zero_()``), or an item assignment into it (``x[mask][0] = 1``),
writes into the copy, which is dropped at once: ``x`` never changes. Only
``x[idx] = v`` and ``x[idx] += v`` reach ``x`` (through ``__setitem__``).

An index counts as advanced only where the function shows it: a list literal or
comprehension, a comparison or a bitwise combination of masks, a tensor-returning
``torch`` call or tensor method, or a name whose last assignment is one of those or a
parameter annotated as a tensor or list. Integers, slices, ``None``, ``...`` and names
the function says nothing about are basic (a view) or unknown, and left alone.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import bound_before
from ..options import Option
from ..residency.tensor_values import is_device_tensor

# ``x.fill_()``: PyTorch's in-place convention; a dunder or private name is not one.
_IN_PLACE = re.compile(r"^[a-z][a-z0-9_]*[a-z0-9]_$")
# torch functions whose result is a host tensor that still indexes as an array.
_HOST_TENSOR_CALLS = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.nonzero", "torch.where", "torch.argwhere"})
_MASK_OPERATORS = (cst.BitAnd, cst.BitOr, cst.BitXor)
_ARRAY_ANNOTATION = re.compile(r"\b(?:Tensor|[A-Z][a-z]+Tensor|list|List|Sequence|ndarray|NDArray)\b")
_DEPTH = 4


class InPlaceWriteToIndexCopy:
    """``x[idx].zero_()`` or ``x[mask][0] = v``: the write lands in the copy advanced indexing returns."""

    reach = MatcherReach(reads="function", hits_at_tokens=True)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        # A method with a trailing underscore called on a subscript, or a write through
        # two subscripts in a row.
        self.prefilter: Prefilter = (re.compile(r"\]\s*\.[a-z]\w*_\s*\("), re.compile(r"\]\s*\[[^\n=]*\]\s*[-+*/%&|^@]?=(?!=)"))

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for statement in ctx.nodes(cst.Expr):
            call = statement.value
            if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and _IN_PLACE.match(call.func.attr.value)):
                continue
            copy = call.func.value
            if isinstance(copy, cst.Subscript) and _advanced_index(copy, ctx) and not _mapping(copy.value, ctx):
                yield Match(call, {"COPY": ctx.code(copy), "WRITE": f".{call.func.attr.value}()"})
        for target in _item_targets(ctx):
            copy = target.value
            if isinstance(copy, cst.Subscript) and _advanced_index(copy, ctx) and not _mapping(copy.value, ctx):
                yield Match(target, {"COPY": ctx.code(copy), "WRITE": f"[{ctx.code(target.slice[0])}...] ="})


# Mappings, as the type engine names them: ``cache[tensor]`` looks a key up and returns the
# stored object itself, whatever the key is.
_MAPPINGS = frozenset({"dict", "defaultdict", "OrderedDict", "Counter", "ChainMap", "Mapping", "MutableMapping", "WeakKeyDictionary"})


def _mapping(indexed: cst.BaseExpression, ctx: FileContext) -> bool:
    """The type engine says the indexed value is a mapping (``Allocator.cache =
    defaultdict(dict)``): indexing it is a lookup, not advanced indexing."""
    answer = ctx.value_type(indexed) if isinstance(indexed, (cst.Name, cst.Attribute)) else None
    return answer is not None and answer.partition("[")[0].strip().rpartition(".")[2] in _MAPPINGS


def _item_targets(ctx: FileContext) -> Iterator[cst.Subscript]:
    """Subscripts written to: ``a[i] = v``, ``a[i] += v``."""
    for assign in ctx.nodes(cst.Assign):
        for target in assign.targets:
            if isinstance(target.target, cst.Subscript):
                yield target.target
    for augmented in ctx.nodes(cst.AugAssign):
        if isinstance(augmented.target, cst.Subscript):
            yield augmented.target


def _advanced_index(subscript: cst.Subscript, ctx: FileContext) -> bool:
    return any(
        isinstance(element.slice, cst.Index) and _is_array(element.slice.value, ctx, 0)
        for element in subscript.slice
    )


def _is_array(expr: cst.BaseExpression, ctx: FileContext, depth: int) -> bool:
    """The code shows ``expr`` to be a list, a mask or a tensor (an advanced index)."""
    if depth > _DEPTH:
        return False
    if isinstance(expr, (cst.List, cst.ListComp)):
        return True
    if isinstance(expr, cst.Comparison):
        return not any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return True  # ``~mask``: an inverted integer is no index anyone writes
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _MASK_OPERATORS):
        return _is_array(expr.left, ctx, depth + 1) or _is_array(expr.right, ctx, depth + 1)
    if isinstance(expr, cst.Call):
        return ctx.qualified_name(expr.func) in _HOST_TENSOR_CALLS or is_device_tensor(expr, ctx)
    if isinstance(expr, cst.Name):
        value = bound_before(expr, ctx)
        if value is not None:
            return _is_array(value, ctx, depth + 1)
        return _annotated_array(expr, ctx) or is_device_tensor(expr, ctx)
    return False


def _annotated_array(name: cst.Name, ctx: FileContext) -> bool:
    """A parameter annotated as a tensor, a list or an array (``idx: torch.Tensor``)."""
    function = ctx.enclosing_function(name)
    if function is None:
        return False
    params = function.params
    for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
        if param.name.value == name.value and param.annotation is not None:
            return bool(_ARRAY_ANNOTATION.search(ctx.code(param.annotation.annotation)))
    return False
