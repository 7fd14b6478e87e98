"""Which expressions are torch tensors not known to live on the host, as far as one function shows it.

An expression is such a tensor when the code says so: a call of a ``torch`` function
that returns tensors (``torch.cumsum``, ``F.softmax``; not ``torch.is_*``/``get_*``/
``numel``), a method only tensors have (``isfinite``, ``logical_and``, ``new_zeros``),
a tensor method on such a tensor (``offsets.long()``, ``x[i]``, ``x == y``, ``x + 1``), a
parameter annotated as a tensor (``ids: torch.LongTensor``) or a name whose last
assignment before the use is one of these (unpacking a ``torch`` call's tuple included).
A parameter that the function passes as the index of ``index_copy_``/``index_select``/
``gather``-like ops is an index tensor too. Values ``residency.on_host`` knows to be on
the host are never device tensors; attributes (``x.shape``, ``self.buf``), builtins
(``len``, ``int``) and unknown callees (``self.model(x)``) give no evidence.
"""

from __future__ import annotations

import re

import libcst as cst

from ..base import FileContext
from ..context import subtree
from .locations import on_host

# torch namespaces whose functions return tensors (or tuples of them).
_TENSOR_MODULES = frozenset({"torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft"})
# torch functions that return host values: flags, sizes, types, settings, contexts.
_HOST_FUNCTION = re.compile(
    r"^(is_|are_|get_|set_|use_|has_|can_)|^(numel|typename|result_type|promote_types|device|dtype|Size|finfo|iinfo|"
    r"no_grad|enable_grad|inference_mode|compile|load|save|manual_seed|equal|allclose|empty_cache|cuda|Tensor|"
    r"tensor|as_tensor|from_numpy|frombuffer)$"
)
# Methods no Python builtin or numpy array has: evidence on their own.
TENSOR_ONLY_METHODS = frozenset(
    "isfinite isnan isinf isneginf isposinf logical_and logical_or logical_not logical_xor eq ne gt lt ge le "
    "isclose masked_fill count_nonzero new_zeros new_ones new_full new_empty new_tensor index_select "
    "masked_select bool long".split()
)
# Methods whose result is a tensor when their receiver is one.
_TENSOR_METHODS = TENSOR_ONLY_METHODS | frozenset(
    "view view_as reshape reshape_as flatten unflatten contiguous detach clone float half bfloat16 int double "
    "squeeze unsqueeze permute transpose t expand expand_as narrow select to_dense type_as to cuda "
    "sum mean max min amax amin argmax argmin prod any all cumsum cumprod abs neg round floor ceil sign "
    "clamp clamp_min clamp_max sqrt exp log sigmoid softmax log_softmax norm std var pow square remainder "
    "add sub mul div floor_divide matmul mm bmm gather scatter index_copy index_add index_fill where "
    "repeat repeat_interleave flip roll diff nonzero add_ sub_ mul_ div_ fill_ zero_ copy_ clamp_ "
    "index_copy_ index_add_ index_fill_ scatter_ masked_fill_".split()
)
# Results that are tuples of tensors: unpacked, each target is a tensor.
_TUPLE_METHODS = frozenset("topk sort max min split chunk unbind unique nonzero kthvalue mode median aminmax".split())
# ``torch.Tensor``, ``LongTensor``, optional or quoted: not a container of tensors (``dict[str, Tensor]``).
_TENSOR_ANNOTATION = re.compile(
    r"""["']?(?:(?:typing\.)?Optional\[)?(?:torch\.)?(?:Tensor|[A-Z][a-z]+Tensor)\]?(?:\s*\|\s*None)?["']?"""
)
# ``op(dim, index, ...)`` methods and ``torch.op(input, dim, index, ...)`` functions.
_INDEX_METHODS = frozenset("index_copy_ index_copy index_add_ index_add index_fill_ index_fill index_select gather scatter_ scatter".split())
_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
_DEPTH = 5


def is_device_tensor(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """Whether the code shows ``expr`` to be a tensor, and does not show it to be on the host."""
    return _is_tensor(expr, ctx, 0)


def _is_tensor(expr: cst.BaseExpression, ctx: FileContext, depth: int) -> bool:
    """Composites are tensors through their parts, and every part that gives evidence (a
    call, a name) is checked against ``on_host`` last, being the costlier question:
    ``host[0] > 3`` is a host tensor."""
    if depth > _DEPTH:
        return False
    if isinstance(expr, cst.Call):
        return _call_tensor(expr, ctx, depth) and not on_host(expr, ctx)
    if isinstance(expr, cst.Subscript):
        return _is_tensor(expr.value, ctx, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        return _is_tensor(expr.left, ctx, depth + 1) or _is_tensor(expr.right, ctx, depth + 1)
    if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
        return _is_tensor(expr.expression, ctx, depth + 1)
    if isinstance(expr, cst.Comparison):
        if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
            return False
        return any(_is_tensor(side, ctx, depth + 1) for side in [expr.left, *(c.comparator for c in expr.comparisons)])
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in _ATTRIBUTES and _is_tensor(expr.value, ctx, depth + 1)
    if isinstance(expr, cst.Name):
        return _name_tensor(expr, ctx, depth) and not on_host(expr, ctx)
    return False


def _call_tensor(call: cst.Call, ctx: FileContext, depth: int) -> bool:
    func = call.func
    name = ctx.qualified_name(func) or ""
    module, _, leaf = name.rpartition(".")
    if module in _TENSOR_MODULES:
        return not _HOST_FUNCTION.search(leaf) or _built_on_device(call, leaf)
    if not isinstance(func, cst.Attribute) or module in ("np", "numpy", "math") or name.startswith("numpy."):
        return False
    method = func.attr.value
    if method in TENSOR_ONLY_METHODS:
        return not on_host(func.value, ctx)
    return method in _TENSOR_METHODS and _is_tensor(func.value, ctx, depth + 1)


def _built_on_device(call: cst.Call, leaf: str) -> bool:
    """``torch.tensor(..., device=dev)``: a device tensor unless ``residency`` says the device is the CPU."""
    return leaf in ("tensor", "as_tensor") and any(a.keyword is not None and a.keyword.value == "device" for a in call.args)


def _name_tensor(name: cst.Name, ctx: FileContext, depth: int) -> bool:
    function = ctx.enclosing_function(name)
    if function is None:
        return False
    bound = _last_binding(function, name, ctx)
    if bound is not None:
        _, value, _, element = bound
        if element:  # ``values, order = torch.topk(...)``: asked only when read, never while indexing
            return _returns_tensor_tuple(value, ctx, depth + 1)
        return value is not _UNKNOWN and _is_tensor(value, ctx, depth + 1)
    return _annotated_tensor(function, name, ctx) or name.value in index_parameters(function, ctx)


# A binding whose value says nothing (a loop variable, an element of an unknown tuple).
_UNKNOWN = cst.Name("None")
# target, value, statement, and whether the target is one element of the value (a tuple)
_Binding = tuple[cst.Name, cst.BaseExpression, cst.CSTNode, bool]


def _last_binding(function: cst.FunctionDef, name: cst.Name, ctx: FileContext) -> _Binding | None:
    """The binding of ``name`` last before this use, in source order; a binding whose
    statement holds the use (``x = x[0]``) binds after it."""
    order = _name_order(ctx)
    position = order.get(id(name), -1)
    last = None
    for binding in _bindings(function, ctx).get(name.value, ()):
        if order.get(id(binding[0]), position) < position and not any(a is binding[2] for a in ctx.ancestors(name)):
            last = binding
    return last


def _annotated_tensor(function: cst.FunctionDef, name: cst.Name, ctx: FileContext) -> bool:
    for param in _parameters(function):
        if param.name.value == name.value and param.annotation is not None:
            return bool(_TENSOR_ANNOTATION.fullmatch(ctx.code(param.annotation.annotation).strip()))
    return False


def _name_order(ctx: FileContext) -> dict[int, int]:
    """Source position of every name of the file (``nodes`` lists them in source order)."""
    order: dict[int, int] | None = ctx.__dict__.get("_tensor_name_order")
    if order is None:
        order = ctx.__dict__["_tensor_name_order"] = {id(n): i for i, n in enumerate(ctx.nodes(cst.Name))}
    return order


def _bindings(function: cst.FunctionDef, ctx: FileContext) -> dict[str, list[_Binding]]:
    """Per name, each assignment target with the value it binds (a tuple element: the
    call the tuple came from, when that returns tensors); built once per function."""
    cache: dict[int, dict[str, list[_Binding]]] = ctx.__dict__.setdefault("_tensor_bindings", {})
    found = cache.get(id(function))
    if found is None:
        found = {}
        for node in subtree(function.body):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    _bind(target.target, node.value, node, found)
            elif isinstance(node, cst.AnnAssign) and node.value is not None:
                _bind(node.target, node.value, node, found)
            elif isinstance(node, cst.AugAssign):
                # ``x += t`` keeps x a tensor when either side is one
                _bind(node.target, cst.BinaryOperation(node.target, cst.Add(), node.value), node, found)
            elif isinstance(node, (cst.For, cst.CompFor)):
                _bind(node.target, _UNKNOWN, node, found)  # loop variables: unknown
            elif isinstance(node, cst.WithItem) and node.asname is not None:
                _bind(node.asname.name, _UNKNOWN, node, found)
        cache[id(function)] = found
    return found


def _bind(target: cst.BaseExpression, value: cst.BaseExpression, statement: cst.CSTNode,
          found: dict[str, list[_Binding]], element: bool = False) -> None:
    if isinstance(target, cst.Name):
        found.setdefault(target.value, []).append((target, value, statement, element))
    elif isinstance(target, (cst.Tuple, cst.List)):
        for item in target.elements:
            inner = item.value.value if isinstance(item.value, cst.StarredElement) else item.value
            _bind(inner, value, statement, found, element=True)


def _returns_tensor_tuple(value: cst.BaseExpression, ctx: FileContext, depth: int) -> bool:
    if not isinstance(value, cst.Call):
        return False
    module = (ctx.qualified_name(value.func) or "").rpartition(".")[0]
    if module in _TENSOR_MODULES:
        return True
    func = value.func
    return isinstance(func, cst.Attribute) and func.attr.value in _TUPLE_METHODS and _is_tensor(func.value, ctx, depth + 1)


def _parameters(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def index_parameters(function: cst.FunctionDef, ctx: FileContext) -> frozenset[str]:
    """Parameters never reassigned that the function passes (alone or ``± k``) as the
    index of ``x.index_copy_(dim, index, ...)``-like methods: index tensors."""
    cache: dict[int, frozenset[str]] = ctx.__dict__.setdefault("_index_parameters", {})
    found = cache.get(id(function))
    if found is None:
        assigned = _bindings(function, ctx)
        names = {p.name.value for p in _parameters(function)} - assigned.keys()
        used = set()
        for node in subtree(function.body):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _INDEX_METHODS:
                index = _index_argument(node, ctx)
                if index is not None:
                    used.add(index)
        found = cache[id(function)] = frozenset(names & used)
    return found


def _index_argument(call: cst.Call, ctx: FileContext) -> str | None:
    # ``x.op(dim, index, ...)``, but ``torch.op(x, dim, index, ...)``
    wanted = 2 if (ctx.qualified_name(call.func) or "").rpartition(".")[0] in _TENSOR_MODULES else 1
    for position, arg in enumerate(call.args):
        if (arg.keyword is not None and arg.keyword.value == "index") or (arg.keyword is None and position == wanted):
            value = arg.value
            if isinstance(value, cst.BinaryOperation) and isinstance(value.right, (cst.Integer, cst.Name)):
                value = value.left
            return value.value if isinstance(value, cst.Name) else None
    return None
