"""A Python number written into a device tensor through an index: a blocking host-to-device copy.

``x[i] = 1.0`` on a CUDA tensor turns the number into a CPU scalar tensor and writes it
with ``__setitem__``. Which path it takes decides whether the host waits (PyTorch's
``TensorIndexing.h``, measured with ``torch.cuda.set_sync_debug_mode``):

- the index selects one element (an integer per dimension): ``copy_`` from the CPU
  scalar, a blocking copy from pageable memory;
- the index holds an integer index tensor, a list, or two index tensors: ``index_put_``
  copies the scalar (and a host index) to the device, blocking;
- the index selects several elements with ints and slices (``x[:, 0] = 0``): ``fill_``
  with the number as a kernel argument, no wait;
- one boolean mask on the device (``x[mask] = 0``): ``masked_fill_``, no wait.

Only the first two are reported, and only where the code shows the receiver to be a
tensor not on the host (``tensor_values``), the value to be a Python number and, for a
single element, the receiver's number of dimensions (from the factory or view that made it).
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
from .tensor_values import index_parameters, is_device_tensor

_DEPTH = 5
_MATH_CONSTANTS = frozenset({"math.inf", "math.nan", "math.pi", "math.e", "numpy.inf", "numpy.nan"})
# Factories whose positional arguments (or one tuple) are the sizes.
_SIZED_FACTORIES = frozenset("zeros ones empty rand randn".split())
_ONE_DIMENSIONAL = frozenset("arange linspace logspace randperm".split())
# Methods and ``torch`` functions whose result has the shape of their (first) tensor.
_SAME_SHAPE = frozenset(
    "clone contiguous detach float half bfloat16 double int long bool to cumsum cumprod roll flip abs neg "
    "clamp clamp_min clamp_max exp log sigmoid add sub mul div remainder masked_fill "
    "zeros_like ones_like empty_like full_like rand_like randn_like".split()
)
# Calls whose result is a tensor of integers: indices, counts, positions.
_INTEGER_RESULTS = frozenset("arange randint randperm argmax argmin argsort multinomial searchsorted bucketize tril_indices triu_indices".split())
_INTEGER_METHODS = frozenset("long int argmax argmin argsort".split())
# ``uint8`` is left out: PyTorch takes a byte index for a mask (``masked_fill_``).
_INTEGER_DTYPES = re.compile(r"^torch\.(long|int|int64|int32|int16|int8)$")
_INTEGER_ANNOTATION = re.compile(r"""["']?(?:torch\.)?(?:Long|Int)Tensor["']?""")
_SUBSCRIPT_WRITE = re.compile(r"\]\s*=(?!=)")


def python_number(expr: cst.BaseExpression, ctx: FileContext, depth: int = 0) -> bool:
    """``expr`` is a Python number (or bool) as far as the function shows: a literal,
    ``-1e9``, ``float("-inf")``, ``math.inf``, ``len(...)``, ``float()`` of a Python int, a
    parameter annotated ``int``/``float``/``bool``, or a name last bound to one of these."""
    if depth > _DEPTH:
        return False
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return python_number(expr.expression, ctx, depth + 1)
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return True
    name = ctx.qualified_name(expr) if isinstance(expr, (cst.Attribute, cst.Name)) else None
    if name in _MATH_CONSTANTS:
        return True
    if isinstance(expr, cst.Call):
        callee = ctx.qualified_name(expr.func)
        if callee in ("float", "int") and len(expr.args) == 1:
            argument = expr.args[0].value  # ``float(t)`` of a tensor is a number too, but read from the device first
            return isinstance(argument, cst.SimpleString) or python_number(argument, ctx, depth + 1) or python_int(argument, ctx)
        return callee == "len"
    if isinstance(expr, cst.Name):
        value = bound_before(expr, ctx)
        if value is not None:
            return python_number(value, ctx, depth + 1)
        return _annotated(expr, ctx) in ("int", "float", "bool")
    return False


def python_int(expr: cst.BaseExpression, ctx: FileContext, depth: int = 0) -> bool:
    """``expr`` is a Python int: a literal, ``len()``, a size read from a shape, a parameter
    annotated ``int``, a ``range``/``enumerate`` loop counter, or arithmetic of these."""
    if depth > _DEPTH:
        return False
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return python_int(expr.expression, ctx, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide)):
        return python_int(expr.left, ctx, depth + 1) and python_int(expr.right, ctx, depth + 1)
    if isinstance(expr, cst.Call):
        func = expr.func
        if ctx.qualified_name(func) == "len":
            return True
        return isinstance(func, cst.Attribute) and func.attr.value in ("size", "numel", "dim") and bool(expr.args or func.attr.value != "size")
    if isinstance(expr, cst.Subscript):
        return isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape"
    if isinstance(expr, cst.Name):
        value = bound_before(expr, ctx)
        if value is not None:
            return python_int(value, ctx, depth + 1)
        return _counter(expr, ctx) or _annotated(expr, ctx) == "int"
    return False


def _counter(name: cst.Name, ctx: FileContext) -> bool:
    """``name`` is the counter of a loop around it: ``for i in range(...)`` or the first
    target of ``for i, x in enumerate(...)``."""
    for ancestor in ctx.ancestors(name):
        if not isinstance(ancestor, (cst.For, cst.CompFor)) or not isinstance(ancestor.iter, cst.Call):
            continue
        callee = ctx.qualified_name(ancestor.iter.func)
        target = ancestor.target
        if callee == "range" and isinstance(target, cst.Name) and target.value == name.value:
            return True
        if callee == "enumerate" and isinstance(target, cst.Tuple) and target.elements:
            first = target.elements[0].value
            if isinstance(first, cst.Name) and first.value == name.value:
                return True
    return False


def _annotated(name: cst.Name, ctx: FileContext) -> str:
    """The annotation of the parameter ``name`` of the enclosing function (``""`` if none)."""
    function = ctx.enclosing_function(name)
    if function is None:
        return ""
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name.value and param.annotation is not None:
            return ctx.code(param.annotation.annotation).strip()
    return ""


def dimensions(expr: cst.BaseExpression, ctx: FileContext, depth: int = 0) -> int | None:
    """How many dimensions the tensor ``expr`` has, when the factory, view or same-shape op
    that made it says so (``torch.zeros(n, device=d)``: 1; ``x.view(b, -1)``: 2)."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, cst.Name):
        value = bound_before(expr, ctx)
        return None if value is None else dimensions(value, ctx, depth + 1)
    if isinstance(expr, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in expr.slice):
        return dimensions(expr.value, ctx, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        left, right = dimensions(expr.left, ctx, depth + 1), dimensions(expr.right, ctx, depth + 1)
        if python_number(expr.right, ctx) or python_int(expr.right, ctx):
            return left
        if python_number(expr.left, ctx) or python_int(expr.left, ctx):
            return right
        return left if left == right else None
    if isinstance(expr, cst.Call):
        return _call_dimensions(expr, ctx, depth)
    return None


def _call_dimensions(call: cst.Call, ctx: FileContext, depth: int) -> int | None:
    name = ctx.qualified_name(call.func) or ""
    module, _, leaf = name.rpartition(".")
    positional = [a.value for a in call.args if a.keyword is None]
    if module == "torch":
        if leaf in _ONE_DIMENSIONAL:
            return 1
        if leaf in _SIZED_FACTORIES or leaf == "full":
            return _size_count(call, positional[:1] if leaf == "full" else positional, ctx)
        if leaf in _SAME_SHAPE and positional:
            return dimensions(positional[0], ctx, depth + 1)
        return None
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    if method == "flatten" and not call.args:
        return 1
    if method in ("view", "reshape") and positional and not any(_names_torch(a, ctx) for a in positional):
        if len(positional) == 1 and isinstance(positional[0], (cst.Tuple, cst.List)):
            return len(positional[0].elements)
        return len(positional) if len(call.args) == len(positional) else None
    if method in _SAME_SHAPE:
        return dimensions(func.value, ctx, depth + 1)
    return None


def _size_count(call: cst.Call, sizes: list[cst.BaseExpression], ctx: FileContext) -> int | None:
    keyword = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "size"), None)
    if keyword is not None:
        sizes = [keyword]
    if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
        return len(sizes[0].elements)
    if len(sizes) == 1:
        return 1 if python_int(sizes[0], ctx) else None  # ``torch.zeros(shape)``: a tuple of unknown length
    return len(sizes) or None


def _names_torch(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """``torch.int32`` in ``x.view(torch.int32)``: a dtype, not a size."""
    return (ctx.qualified_name(expr) or "").startswith("torch.")


def integer_index(expr: cst.BaseExpression, ctx: FileContext, depth: int = 0) -> bool:
    """``expr`` is a tensor of integer indices: ``torch.arange``/``argmax``/``.long()``, a
    factory with an integer ``dtype``, one-argument ``torch.where``, a parameter annotated
    ``LongTensor`` or passed as the index of ``index_select``-like ops, or a view of one."""
    if depth > _DEPTH:
        return False
    if isinstance(expr, cst.Call):
        return _integer_call(expr, ctx, depth)
    if isinstance(expr, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in expr.slice):
        return integer_index(expr.value, ctx, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        return (integer_index(expr.left, ctx, depth + 1) and python_int(expr.right, ctx)) or (
            integer_index(expr.right, ctx, depth + 1) and python_int(expr.left, ctx)
        )
    if isinstance(expr, cst.Name):
        value = bound_before(expr, ctx)
        if value is not None:
            return integer_index(value, ctx, depth + 1)
        function = ctx.enclosing_function(expr)
        return function is not None and (expr.value in index_parameters(function, ctx) or _annotated_integer(function, expr, ctx))
    return False


def _integer_call(call: cst.Call, ctx: FileContext, depth: int) -> bool:
    name = ctx.qualified_name(call.func) or ""
    module, _, leaf = name.rpartition(".")
    dtype = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "dtype"), None)
    if dtype is not None:
        return bool(_INTEGER_DTYPES.match(ctx.qualified_name(dtype) or ctx.code(dtype)))
    if module == "torch":
        if leaf == "where":
            return len(call.args) == 1
        return leaf in _INTEGER_RESULTS
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    if func.attr.value in _INTEGER_METHODS:
        return True
    if func.attr.value == "to" and call.args:
        return bool(_INTEGER_DTYPES.match(ctx.qualified_name(call.args[0].value) or ""))
    return func.attr.value in ("clone", "contiguous", "view", "reshape", "flatten") and integer_index(func.value, ctx, depth + 1)


def _annotated_integer(function: cst.FunctionDef, name: cst.Name, ctx: FileContext) -> bool:
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name.value and param.annotation is not None:
            return bool(_INTEGER_ANNOTATION.fullmatch(ctx.code(param.annotation.annotation).strip()))
    return False


def blocking_write(target: cst.Subscript, ctx: FileContext) -> str | None:
    """Why writing a Python number through ``target`` (a device tensor's subscript) copies
    it from the host and waits, or ``None`` when the write is a kernel with the number as
    its argument (``fill_``, ``masked_fill_``) or the code does not show which it is."""
    indices = [e.slice.value for e in target.slice if isinstance(e.slice, cst.Index)]
    if len(indices) != len(target.slice):
        return None  # a slice: ``fill_`` over the elements it selects
    tensors = [i for i in indices if isinstance(i, cst.List) or integer_index(i, ctx) or is_device_tensor(i, ctx)]
    if len(tensors) >= 2:
        return "indexing with two tensors runs `index_put_`, which copies the number to the device"
    if len(tensors) == 1:
        index = tensors[0]
        if isinstance(index, cst.List):
            return "a list index becomes a host tensor: `index_put_` copies it and the number to the device"
        if integer_index(index, ctx):  # integer evidence: never a boolean mask
            return "an integer index tensor runs `index_put_`, which copies the number to the device"
        return None  # a boolean mask (``masked_fill_``) or an index of unknown dtype
    if all(python_int(i, ctx) for i in indices) and dimensions(target.value, ctx) == len(indices):
        return "the index selects one element, which `copy_` fills from a host scalar"
    return None


class PythonNumberIndexWrite:
    """``x[i] = 1.0`` into one element of a device tensor, or ``x[idx] = 0`` through an
    integer index tensor: a blocking copy of the number from host memory."""

    reach = MatcherReach(reads="function", hits_at_tokens=True)
    prefilter: Prefilter = (_SUBSCRIPT_WRITE,)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for assign in ctx.nodes(cst.Assign):
            subscripts = [t.target for t in assign.targets if isinstance(t.target, cst.Subscript)]
            if not subscripts or not python_number(assign.value, ctx):
                continue
            for subscript in subscripts:
                if not is_device_tensor(subscript.value, ctx):
                    continue
                why = blocking_write(subscript, ctx)
                if why is not None:
                    yield Match(subscript, {"X": ctx.code(subscript), "V": ctx.code(assign.value), "HOW": why})
