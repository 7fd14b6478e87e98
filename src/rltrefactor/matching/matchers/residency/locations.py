"""Where a tensor lives, as far as one function shows it: on the host, or unknown.

A value is known to be on the host when it is, or is a view of, or was assigned from:
``.cpu()``, ``.numpy()``, ``.tolist()``, ``.pin_memory()``, a join (``torch.cat``) or a
``torch`` reduction, reshape or elementwise, sorting or sampling op (``torch.any(mask)``,
``torch.clamp(x, ...)``, ``torch.multinomial(probs, 1)``) or ``torch.nn.functional`` op
(``F.pad(index, ...)``) of host values, a ``torch`` factory called without a device (outside a ``with`` that makes
one the default) or with a host device (or ``pin_memory=True``), ``torch.from_numpy(...)``/``torch.frombuffer(...)``,
a numpy call, ``.to(<host device>)``, a cast of a host value that names no device
(``.to(dtype=torch.int64)``), a name that says so (``x_cpu``, ``host_x``, ``x_np``),
arithmetic, comparisons or negations of host values, a ``tuple``/``list`` of host values, the
``values`` of a host reduction's named result (``x.max(dim=1).values``), a generator's state
(``gen.get_state()``, ``torch.cuda.get_rng_state()``), a field looked up by a host name
(``getattr(batch, "seq_lens_cpu", None)``), a
value guarded by ``if x.is_cpu:`` or read after ``assert x.device.type == "cpu"``;
``self.x`` where every value its class assigns it is on the host (``attributes``; a factory
given no device does not count there); a field the file declares host-side, read by its
name, or a dataclass field the repository fills with host tensors only, read through an
instance of its class (``host_fields``). A host device is ``"cpu"``, ``torch.device("cpu")``, the ``.device``
of a host value, or a name last assigned one of those. The last assignment of a name before
its use decides (``assigned_value``: a name unpacked from a tuple written out takes its
element, one unpacked from a split takes the whole); anything else is unknown. A call to a function the call index shows
returns host tensors only (``execution.host_calls``) is a host value, and so is a call
whose callee returns where one of its arguments lives (``execution.following_calls``)
given a host value there, and a parameter, not reassigned before its use, that every
caller passes a host tensor (``execution.host_params``). Every device-residency rule asks these questions (``on_host``;
whether a host value is also pinned: ``pinned.is_pinned``) and never reports known-host values.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from ....source import treesitter
from ....source.functions import and_operands
from ....source.tensor_places import DEFAULT_DEVICE_FACTORIES, HOST_METHODS, RESULT_FIELDS, SAME_PLACE_FUNCTIONS, SAME_PLACE_METHODS
from ..base import FileContext
from ..context import guarded_by, subtree
from ..walk import binds
from ..imports import dotted_name
from .attributes import attribute_values
from .host_fields import declared_host_fields, reads_host_class_field, reads_host_field
from .threading_loops import enclosing_function, node_text
from .type_names import PARAMETER_TENSORS, PARAMETER_TYPES, is_host_type, is_tensor_type

if TYPE_CHECKING:
    from tree_sitter import Node

_LIKE = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like"})
_FACTORIES = DEFAULT_DEVICE_FACTORIES | _LIKE | {"tensor", "as_tensor", "from_numpy", "frombuffer"}
_JOINS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack"})
_HOST_ARRAY_TYPES = frozenset({"numpy.ndarray", "np.ndarray", "numpy.typing.NDArray", "npt.NDArray"})
_DTYPES = frozenset(
    "float float32 float64 double half float16 bfloat16 int int8 int16 int32 int64 long short uint8 bool "
    "float8_e4m3fn float8_e5m2 complex64 complex128".split()
)
DEPTH = 10  # assignments and views followed; device names add two steps


def on_host(expr: cst.CSTNode, ctx: FileContext, depth: int = 0) -> bool:
    """Whether ``expr`` is known to live in host memory: the code shows it, or the type
    engine says it is a host type (``ndarray``, ``list[int]``, a number: ``host-types``)."""
    if depth > DEPTH:
        return False
    if _on_host_in_code(expr, ctx, depth):
        return True
    if depth == 0:
        return _typed_host(expr, ctx)
    return False


def shown_on_host(expr: cst.CSTNode, ctx: FileContext) -> bool:
    """Whether the function's own code shows ``expr`` in host memory, the type engine left
    out: for checks where "on the host" makes a finding (a download, an upload's source),
    which a host type must never start."""
    return _on_host_in_code(expr, ctx, 0)


def _typed_host(expr: cst.CSTNode, ctx: FileContext) -> bool:
    """The type engine gives the value asked about, or the receiver its same-place methods
    start from (``m`` of ``m.max()``), a host type. Asked of that value only, never of the
    parts ``on_host`` follows: a question costs a round trip to the engine, and a part
    that is a Python number says nothing of the tensor it combines with
    (``probs >= self.threshold``)."""
    if _is_device_argument(expr, ctx):
        return False  # a device is a ``str`` or an ``int`` wherever it points
    host_types = ctx.names.entry("host-types").values
    while isinstance(expr, (cst.Name, cst.Attribute, cst.Call)):
        answer = ctx.value_type(expr)
        if answer is not None:
            return is_host_type(answer, host_types)
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in SAME_PLACE_METHODS):
            return False
        expr = expr.func.value
    return False


def _is_device_argument(expr: cst.CSTNode, ctx: FileContext) -> bool:
    """``dev`` of ``device=dev``, or the first positional argument of ``.to(dev)``/``.cuda(dev)``."""
    argument = ctx.parent(expr)
    if not isinstance(argument, cst.Arg):
        return False
    if argument.keyword is not None:
        return argument.keyword.value == "device"
    call = ctx.parent(argument)
    return (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda")
            and bool(call.args) and call.args[0] is argument)


def names_host(device: cst.CSTNode, ctx: FileContext, depth: int = 0) -> bool:
    """Whether a device argument is known to name the host (``"cpu"``, a host value's
    ``.device``): read from the code alone, as a device is a ``str`` or an ``int`` wherever
    it points."""
    return depth <= DEPTH and _on_host_in_code(device, ctx, depth)


def _on_host_in_code(expr: cst.CSTNode, ctx: FileContext, depth: int) -> bool:
    """Memoized per file context: a value shown on the host stays so with any budget left,
    and one not shown with at least as much budget left is not shown with less."""
    known: dict[int, tuple[bool, int]] = ctx.__dict__.setdefault("_residency_host", {})
    found = known.get(id(expr))
    if found is not None and (found[0] or found[1] <= depth):
        return found[0]
    host = _read_on_host(expr, ctx, depth)
    known[id(expr)] = (host, depth)
    return host


def _read_on_host(expr: cst.CSTNode, ctx: FileContext, depth: int) -> bool:
    if reads_host_field(expr, ctx) or reads_host_class_field(expr, ctx):
        return True
    if isinstance(expr, (cst.Name, cst.Attribute)) and ctx.names.regex("host-names").search(ctx.code(expr)):
        return not _placed_against_its_name(expr, ctx, depth)
    if isinstance(expr, cst.Subscript):
        return on_host(expr.value, ctx, depth + 1)
    if isinstance(expr, cst.BinaryOperation):  # a host tensor only combines with host values
        return on_host(expr.left, ctx, depth + 1) or on_host(expr.right, ctx, depth + 1)
    if isinstance(expr, cst.Comparison):
        operands = [expr.left, *(target.comparator for target in expr.comparisons)]
        return any(on_host(operand, ctx, depth + 1) for operand in operands)
    if isinstance(expr, cst.UnaryOperation):  # one operand: no step toward the bound
        return on_host(expr.expression, ctx, depth)
    if isinstance(expr, cst.IfExp):  # ``x.cpu() if prefill else None``: a host value, where there is one
        branches = [b for b in (expr.body, expr.orelse) if not (isinstance(b, cst.Name) and b.value == "None")]
        return bool(branches) and all(on_host(b, ctx, depth + 1) for b in branches)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "device":  # the device of a host value
        return on_host(expr.value, ctx, depth + 1)
    if isinstance(expr, cst.Attribute) and expr.attr.value in RESULT_FIELDS and isinstance(expr.value, cst.Call):
        return on_host(expr.value, ctx, depth + 1)  # ``x.max(dim=1).values`` lies where ``x.max(dim=1)`` does
    if isinstance(expr, cst.Attribute) and (values := attribute_values(expr, ctx)):
        # Every value the class gives ``self.x`` says the host; a factory with no device
        # does not, as a model is often built under a default device (``with device:``).
        return all(on_host(v.value, ctx, depth + 1) and not _bare_factory(v.value, ctx) for v in values)
    if _names_cpu(expr, ctx):
        return True
    if isinstance(expr, cst.Attribute) and _asserted_host_field(expr, ctx):
        return True
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        return on_host(expr.elt, ctx, depth + 1)
    if (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("tuple", "list")
            and len(expr.args) == 1):  # ``tuple(torch.zeros(n, device="cpu") for n in sizes)``
        return on_host(expr.args[0].value, ctx, depth + 1)
    if isinstance(expr, (cst.List, cst.Tuple)):
        return any(isinstance(e, cst.Element) and on_host(e.value, ctx, depth + 1) for e in expr.elements)
    if isinstance(expr, cst.Call):
        return _call_on_host(expr, ctx, depth)
    if isinstance(expr, cst.Name):
        return (_guarded_as_host(expr, ctx) or _asserted_host(expr, ctx) or _assigned_on_host(expr, ctx, depth)
                or _passed_on_host(expr, ctx) or _uploaded_without_waiting(expr, ctx) or _element_of_host(expr, ctx, depth)
                or _annotated_host(expr, ctx) or _host_field_parameter(expr, ctx))
    return False


def _placed_against_its_name(expr: cst.CSTNode, ctx: FileContext, depth: int) -> bool:
    """A ``self`` attribute named as host data that its class assigns a value placed
    elsewhere: a tensor shown on a device, or a device built from what does not name the
    host (``self.cpu_offload_device = torch.device(compute_device)``, the device weights
    are brought to). The class's assignments, where all are known, outweigh the name."""
    values = (attribute_values(expr, ctx) if isinstance(expr, cst.Attribute) else None) or []
    return any(_names_a_device(v.value, ctx, depth) or on_device(v.value, ctx, depth + 1) for v in values)


def _names_a_device(value: cst.BaseExpression, ctx: FileContext, depth: int) -> bool:
    return (isinstance(value, cst.Call) and ctx.qualified_name(value.func) == "torch.device" and bool(value.args)
            and not names_host(value.args[0].value, ctx, depth + 1))


def _call_on_host(call: cst.Call, ctx: FileContext, depth: int) -> bool:
    func = call.func
    if (isinstance(func, cst.Name) and func.value == "getattr" and len(call.args) >= 2
            and isinstance(call.args[1].value, cst.SimpleString)):  # ``getattr(batch, "seq_lens_cpu", None)``
        field = call.args[1].value.evaluated_value
        return isinstance(field, str) and ctx.names.regex("host-names").search(field) is not None
    if isinstance(func, cst.Attribute) and not _imported(func.value, ctx):  # a method, not ``torch.any(x)``
        method = func.attr.value
        if method in HOST_METHODS or method == "astype":  # ``astype``: numpy's, no tensor has it
            return True
        if method == "to":
            return _targets_host(call, ctx, depth) or (_keeps_place(call, ctx) and on_host(func.value, ctx, depth + 1))
        if method in SAME_PLACE_METHODS:
            return on_host(func.value, ctx, depth + 1)
        if method == "get_state" and (ctx.value_type(func.value) or "").rpartition(".")[2] == "Generator":
            return True  # a generator's state is a CPU byte tensor, whatever device it draws for
    if dotted_name(func) in ctx.execution.host_calls:
        return True  # the call index: every return of the callee, wherever it is defined, is a host tensor
    argument = _followed_argument(call, ctx)
    if argument is not None:
        return on_host(argument, ctx, depth + 1)  # the callee returns where this argument lives
    name = ctx.qualified_name(func) or dotted_name(func) or ""
    root, _, leaf = name.rpartition(".")
    if root in ("numpy", "np") or name.startswith("numpy."):
        return True
    if name.startswith("torch.") and leaf == "get_rng_state":  # ``torch.cuda.get_rng_state()``: a CPU byte tensor
        return True
    if root == "torch" and leaf in _JOINS and call.args:
        return on_host(call.args[0].value, ctx, depth + 1)
    if root == "torch" and leaf in SAME_PLACE_FUNCTIONS and call.args:  # ``torch.any(mask)`` runs where ``mask`` is
        return on_host(call.args[0].value, ctx, depth + 1)
    if root == "torch.nn.functional" and call.args:  # ``F.pad(index, ...)`` runs where its input is
        return on_host(call.args[0].value, ctx, depth + 1)
    if root == "torch" and leaf in _FACTORIES:
        device = keyword(call, "device")
        if device is not None:
            return names_host(device, ctx, depth + 1)
        if leaf in _LIKE and call.args:
            return on_host(call.args[0].value, ctx, depth + 1)
        # torch factories allocate on the CPU unless told otherwise: by a device the
        # enclosing ``with`` makes the default (``with forward_batch.out_cache_loc.device:``)
        return not _under_default_device(call, ctx)
    return False


def _under_default_device(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` lies in the body of a ``with`` that makes a device the default for new
    tensors, in its own function: ``with torch.device(dev):``, ``with x.device:``, ``with
    device:``; ``torch.device("cpu")`` keeps the host, ``torch.cuda.device(i)`` only picks a GPU."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return False
        if isinstance(ancestor, cst.With) and child is ancestor.body:
            for item in ancestor.items:
                made = item.item
                if isinstance(made, cst.Call) and ctx.qualified_name(made.func) == "torch.device":
                    if not (made.args and names_host(made.args[0].value, ctx)):
                        return True
                elif isinstance(made, cst.Attribute) and made.attr.value == "device":
                    return not on_host(made.value, ctx)
                elif isinstance(made, cst.Name) and made.value.endswith("device") and not names_host(made, ctx):
                    return True
        child = ancestor
    return False


def _followed_argument(call: cst.Call, ctx: FileContext) -> cst.BaseExpression | None:
    """The argument of a call whose callee returns values keeping one parameter's place
    (``execution.following_calls``), given by its keyword or at its position."""
    if not ctx.execution.following_calls:
        return None
    written = dotted_name(call.func)
    for callee, parameter, position in ctx.execution.following_calls:
        if callee != written:
            continue
        for index, argument in enumerate(call.args):
            if argument.star:
                return None
            if (argument.keyword is not None and argument.keyword.value == parameter) or \
                    (argument.keyword is None and index == position):
                return argument.value
    return None


def _bare_factory(value: cst.BaseExpression, ctx: FileContext) -> bool:
    """A ``torch`` factory given neither a device nor ``pin_memory``: where it allocates
    depends on the default device of the code that runs it. Looked for through
    ``tuple(...)``/``list(...)`` of a comprehension, too."""
    while True:
        if isinstance(value, (cst.GeneratorExp, cst.ListComp)):
            value = value.elt
        elif (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("tuple", "list")
              and len(value.args) == 1):
            value = value.args[0].value
        else:
            break
    if not isinstance(value, cst.Call) or keyword(value, "device") is not None or keyword(value, "pin_memory") is not None:
        return False
    root, _, leaf = (ctx.qualified_name(value.func) or dotted_name(value.func) or "").rpartition(".")
    return root == "torch" and leaf in _FACTORIES and leaf not in _LIKE and leaf not in ("from_numpy", "frombuffer")


def _targets_host(call: cst.Call, ctx: FileContext, depth: int) -> bool:
    """``.to("cpu")``, ``.to(device=host_dev)`` or ``.to(x_cpu)`` (the device of a host tensor)."""
    device = keyword(call, "device")
    if device is None and call.args and call.args[0].keyword is None:
        device = call.args[0].value
    return device is not None and names_host(device, ctx, depth + 1)


def _keeps_place(call: cst.Call, ctx: FileContext) -> bool:
    """``.to(dtype=torch.int64)``, ``.to(torch.float32)``: a cast that names no device."""
    if keyword(call, "device") is not None:
        return False
    positional = [a.value for a in call.args if a.keyword is None]
    return all(isinstance(a, cst.Attribute) and (ctx.qualified_name(a) or dotted_name(a) or "").startswith("torch.")
               for a in positional)


def _names_cpu(expr: cst.CSTNode, ctx: FileContext) -> bool:
    """A device literal that names the host: ``"cpu"``, ``torch.device("cpu")``."""
    if not isinstance(expr, (cst.SimpleString, cst.Call)):
        return False
    text = ctx.code(expr).strip()
    return bool(re.fullmatch(r"""['"]cpu['"]|(torch\.)?device\(\s*['"]cpu['"]\s*\)""", text))


def on_device(expr: cst.CSTNode, ctx: FileContext, depth: int = 0) -> bool:
    """Whether the function shows ``expr`` placed on a device: ``.cuda()``, ``.to(<not the
    host>)``, a ``torch`` factory given a device that is not the host, an op or a module
    applied to such a value, a same-place method of one, or a name last assigned one of
    those. Anything else (a parameter, an attribute, what a module returns from values
    the function did not place) is unknown, never presumed to be on the device."""
    if depth > DEPTH:
        return False
    if isinstance(expr, cst.Subscript):
        return on_device(expr.value, ctx, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        return on_device(expr.left, ctx, depth + 1) or on_device(expr.right, ctx, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return on_device(expr.expression, ctx, depth + 1)
    if isinstance(expr, cst.Comparison):
        return on_device(expr.left, ctx, depth + 1) or any(on_device(c.comparator, ctx, depth + 1) for c in expr.comparisons)
    if isinstance(expr, cst.Name):
        value = last_value(expr, ctx)
        return on_device(value, ctx, depth + 1) if value is not None else typed_as_parameter(expr, ctx)
    if isinstance(expr, cst.Attribute):
        if expr.attr.value in PARAMETER_TENSORS:  # a parameter's gradient or data lives where it does
            return on_device(expr.value, ctx, depth + 1)
        if expr.attr.value in RESULT_FIELDS and isinstance(expr.value, cst.Call):
            return on_device(expr.value, ctx, depth + 1)
        values = attribute_values(expr, ctx)
        if values and all(on_device(v.value, ctx, depth + 1) for v in values):
            return True
        return typed_as_parameter(expr, ctx)
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    # ``torch.argmax(x)`` is a function of a module, not a method of ``torch``.
    if isinstance(func, cst.Attribute) and not _imported(func.value, ctx):
        method = func.attr.value
        if method == "cuda":
            return True
        if method == "to":
            device = keyword(expr, "device")
            if device is None and expr.args and expr.args[0].keyword is None:
                device = expr.args[0].value
            return device is not None and not _is_dtype(device, ctx) and not names_host(device, ctx, depth + 1)
        if method in SAME_PLACE_METHODS:
            return on_device(func.value, ctx, depth + 1)
        if method not in HOST_METHODS and is_tensor_type(ctx.value_type(expr)):
            return on_device(func.value, ctx, depth + 1)  # a tensor method's tensor result stays on its device
    name = ctx.qualified_name(func) or dotted_name(func) or ""
    root, _, leaf = name.rpartition(".")
    if root == "torch" and leaf in _FACTORIES:
        device = keyword(expr, "device")
        if device is not None:
            return not names_host(device, ctx, depth + 1)
        return leaf in _LIKE and bool(expr.args) and on_device(expr.args[0].value, ctx, depth + 1)
    if root in ("numpy", "np") or name.startswith("numpy.") or dotted_name(func) in ctx.execution.host_calls:
        return False
    # An op, or a module applied to a tensor (``self.model(x)``), runs where its tensor
    # operands live: given one the function placed on a device, its result is there too.
    return any(on_device(arg.value, ctx, depth + 1) for arg in expr.args)


def typed_as_parameter(expr: cst.CSTNode, ctx: FileContext) -> bool:
    """The type engine says ``expr`` is a module's parameter or buffer."""
    answer = ctx.value_type(expr)
    return answer is not None and answer.rpartition(".")[2] in PARAMETER_TYPES


def _imported(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """``expr`` names something the file imports (a module such as ``torch``)."""
    name = dotted_name(expr)
    return name is not None and name.split(".")[0] in ctx.imports.aliases


def _is_dtype(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    name = ctx.qualified_name(expr) or dotted_name(expr) or ""
    return name.startswith("torch.") and name.rpartition(".")[2] in _DTYPES


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


# ``.is_cpu`` or ``.device.type == "cpu"`` after what it tests: a name, or a field's dotted path.
_ON_CPU = r"\.(?:is_cpu\b|device\.type\s*==\s*['\"]cpu['\"])"
_CPU_TEST = re.compile(r"\b([A-Za-z_]\w*)" + _ON_CPU)


def _asserted_on_host(test: cst.BaseExpression, ctx: FileContext) -> list[str]:
    """The names a test (an assertion's, a branch's) holds on the host: ``x.is_cpu`` or
    ``x.device.type == "cpu"``, alone or as operands of ``and`` (never under ``not``/``or``)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _asserted_on_host(test.left, ctx) + _asserted_on_host(test.right, ctx)
    found = _CPU_TEST.fullmatch(ctx.code(test).strip())
    return [found.group(1)] if found is not None else []


def in_host_branch(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` lies in the body of an ``if`` or the chosen value of a conditional expression
    whose test holds a tensor on the host (``x.is_cpu``, ``x.device.type == "cpu"``, or a
    local last assigned such a test: ``use_cpu = tokens.device.type == "cpu"``): the
    function's host path, taken when its data is in host memory, where a read or a copy
    waits for no device."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return False
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child is ancestor.body and _says_host(ancestor.test, ctx):
            return True
        child = ancestor
    return False


def _says_host(test: cst.BaseExpression, ctx: FileContext) -> bool:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _says_host(test.left, ctx) or _says_host(test.right, ctx)
    if isinstance(test, cst.Name):
        value = last_value(test, ctx)
        return value is not None and bool(_asserted_on_host(value, ctx))
    return bool(_asserted_on_host(test, ctx))


def _guarded_as_host(name: cst.Name, ctx: FileContext) -> bool:
    """Inside ``if name.is_cpu:``, ``if name.device.type == "cpu":`` (alone or as an
    operand of ``and``: never under ``not``/``or``) or a test that ``name`` is a numpy or
    Python value (``if isinstance(name, np.generic):``)."""
    for branch in guarded_by(name, ctx):
        if name.value in _asserted_on_host(branch.test, ctx):
            return True
        if _tested_as_host_type(branch.test, name.value, ctx):
            return True
    return False


# Python types whose values live in host memory (``isinstance(x, (int, float))``).
_HOST_BUILTINS = frozenset("int float bool complex str bytes list tuple dict".split())


def _tested_as_host_type(test: cst.BaseExpression, name: str, ctx: FileContext) -> bool:
    """``test`` holds only when ``name`` is an instance of numpy or Python value types:
    ``isinstance(name, np.ndarray)``, alone or as one operand of an ``and``."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tested_as_host_type(test.left, name, ctx) or _tested_as_host_type(test.right, name, ctx)
    if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "isinstance"):
        return False
    if len(test.args) != 2 or not (isinstance(test.args[0].value, cst.Name) and test.args[0].value.value == name):
        return False
    kinds = test.args[1].value
    types = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    return bool(types) and all(_host_type(t, ctx) for t in types)


def _host_type(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    name = ctx.qualified_name(expr) or dotted_name(expr) or ""
    return name in _HOST_BUILTINS or name.partition(".")[0] in ("numpy", "np")


def _asserted_host(name: cst.Name, ctx: FileContext) -> bool:
    """After ``assert name.is_cpu`` or ``assert name.device.type == "cpu"`` in the function,
    with no assignment of ``name`` between the assertion and this use."""
    function = ctx.enclosing_function(name)
    asserted = False
    for node in _events(function, ctx).get(name.value, ()) if function is not None else ():
        if node is name:
            break
        if isinstance(node, cst.Assert):
            asserted = True
        elif isinstance(node, cst.Assign) and not _holds(node, name, ctx):
            asserted = False
    return asserted


_CPU_FIELD_TEST = re.compile(r"([A-Za-z_][\w.]*)" + _ON_CPU)


def _asserted_host_field(field: cst.Attribute, ctx: FileContext) -> bool:
    """After ``assert result.next_token_ids.is_cpu`` (or ``.device.type == "cpu"``, alone or
    as an operand of ``and``) in a block that holds this use, earlier in its function, with
    no assignment of the field or of its root name between them. Read from the whole
    file's tree-sitter parse: a region leaves out an assertion that holds none of the
    rule's tokens."""
    written = ctx.code(field).strip()
    if not _DOTTED_FIELD.fullmatch(written):
        return False
    use, function = _in_file_tree(field, ctx)
    if use is None or function is None:
        return False
    use_row = ctx.span(field).line - 1
    root = written.partition(".")[0]
    asserted = -1  # the row of the latest such assertion before the use
    for statement in treesitter.captures("(assert_statement) @assert", function).get("assert", []):
        row, block = statement.start_point[0], statement.parent
        if asserted < row < use_row and block is not None and block.start_byte <= use.start_byte < block.end_byte \
                and enclosing_function(statement) == function and written in _fields_on_host(statement):
            asserted = row
    if asserted < 0:
        return False
    for target in treesitter.captures("(assignment left: (_) @target)", function).get("target", []):
        if asserted < target.start_point[0] < use_row and node_text(target).strip() in (written, root):
            return False
    return True


def _in_file_tree(node: cst.CSTNode, ctx: FileContext) -> tuple[Node | None, Node | None]:
    """The whole file's tree-sitter node at ``node``'s start, and its enclosing function."""
    span = ctx.span(node)
    point = (span.line - 1, span.column - 1)
    use: Node | None = ctx.model.tree.root_node.descendant_for_point_range(point, point)
    return use, enclosing_function(use) if use is not None else None


_DOTTED_FIELD = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _fields_on_host(assertion: Node) -> list[str]:
    """The fields an assertion holds on the host: operands of its test joined by ``and``."""
    operands = and_operands(assertion.named_children[0]) if assertion.named_children else []
    found = [_CPU_FIELD_TEST.fullmatch(node_text(o).strip()) for o in operands]
    return [m.group(1) for m in found if m is not None]


def _assigned_on_host(name: cst.Name, ctx: FileContext, depth: int) -> bool:
    """The last assignment of ``name`` before this use, in source order, puts it on the host."""
    value = last_value(name, ctx)
    return value is not None and on_host(value, ctx, depth + 1)


def handed_in(expr: cst.CSTNode, ctx: FileContext) -> bool:
    """``expr`` is a parameter of its function read before anything assigns it: the value
    every call hands in."""
    return isinstance(expr, cst.Name) and parameter_of(expr, ctx) is not None


def parameter_of(name: cst.Name, ctx: FileContext) -> tuple[cst.FunctionDef, cst.Param] | None:
    """The enclosing function's parameter ``name`` reads, where nothing assigns it before
    this use: its value is what the caller passed."""
    function = ctx.enclosing_function(name)
    if function is None or last_value(name, ctx) is not None:
        return None
    params = function.params
    found = next((p for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.name.value == name.value), None)
    return (function, found) if found is not None else None


def _annotated_host(name: cst.Name, ctx: FileContext) -> bool:
    """A parameter annotated as a numpy array (``np.ndarray``, ``numpy.typing.NDArray[...]``):
    host memory by its declared type."""
    found = parameter_of(name, ctx)
    if found is None or found[1].annotation is None:
        return False
    annotation = found[1].annotation.annotation
    written = ctx.qualified_name(annotation.value if isinstance(annotation, cst.Subscript) else annotation) or ""
    return written in _HOST_ARRAY_TYPES or written.rpartition(".")[2] in ("ndarray", "NDArray") and written.startswith(("numpy", "np"))


def _element_of_host(name: cst.Name, ctx: FileContext, depth: int) -> bool:
    """The target of a loop or comprehension over a host value, assigned nothing else
    before this use: ``int(n.item()) ... for n in lens.tolist()``. An element of a
    container the code shows on the host (a ``.tolist()``, a CPU tensor) is a host value."""
    if last_value(name, ctx) is not None:
        return False
    for ancestor in ctx.ancestors(name):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return False
        clauses: list[cst.CompFor] = []
        if isinstance(ancestor, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            clause: cst.CompFor | None = ancestor.for_in
            while clause is not None:
                clauses.append(clause)
                clause = clause.inner_for_in
        for_target, iterable = next(((c.target, c.iter) for c in clauses if _binds_name(c.target, name.value)), (None, None))
        if isinstance(ancestor, cst.For) and _binds_name(ancestor.target, name.value):
            for_target, iterable = ancestor.target, ancestor.iter
        if for_target is not None and iterable is not None:
            return on_host(iterable, ctx, depth + 1) and not _grown_in_place(iterable, ctx)
    return False


def _grown_in_place(container: cst.BaseExpression, ctx: FileContext) -> bool:
    """A local list its function grows (``ids.append(x)``, ``.extend``, ``.insert``): what
    its elements are is not what its last assignment says."""
    function = ctx.enclosing_function(container)
    if not isinstance(container, cst.Name) or function is None:
        return False
    return re.search(rf"(?<![\w.]){re.escape(container.value)}\s*\.\s*(?:append|extend|insert)\s*\(",
                     ctx.code(function)) is not None


def _binds_name(target: cst.BaseExpression, name: str) -> bool:
    return isinstance(target, cst.Name) and target.value == name


def _uploaded_without_waiting(name: cst.Name, ctx: FileContext) -> bool:
    """A parameter its function never rebinds and copies to a device with
    ``non_blocking=True`` (``is_multimodal.to(device=dev, non_blocking=True)``): a copy that
    overlaps only from host memory, so the function is written for a host value. Read from
    the whole file's tree-sitter parse, as a region may leave the upload out."""
    if parameter_of(name, ctx) is None:
        return False
    _, function = _in_file_tree(name, ctx)
    body = function.child_by_field_name("body") if function is not None else None
    if function is None or body is None:
        return False
    uploads = re.finditer(rf"(?<![\w.]){re.escape(name.value)}\s*\.\s*(?:to|cuda)\s*\(([^()]*)\)", node_text(body))
    if not any(_NON_BLOCKING.search(m.group(1)) and not ctx.names.regex("host-names").search(m.group(1)) for m in uploads):
        return False
    targets = treesitter.captures(_BINDINGS, function).get("target", [])
    return not any(name.value in _WORDS.findall(node_text(target)) for target in targets)


_NON_BLOCKING = re.compile(r"\bnon_blocking\s*=\s*True\b")
_WORDS = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
# What binds a name in a function: assignments, loop targets, ``:=``.
_BINDINGS = ("(assignment left: (_) @target) (augmented_assignment left: (_) @target) "
             "(for_statement left: (_) @target) (named_expression name: (_) @target)")


def _host_field_parameter(name: cst.Name, ctx: FileContext) -> bool:
    """A parameter named as a field the file declares host-side (``host_fields``): the
    framework hands the field on under its name."""
    return name.value in declared_host_fields(ctx) and parameter_of(name, ctx) is not None


def _passed_on_host(name: cst.Name, ctx: FileContext) -> bool:
    """A parameter that every caller the call index sees passes a host tensor
    (``execution.host_params``)."""
    found = parameter_of(name, ctx) if ctx.execution.host_params else None
    if found is None:
        return False
    where = ctx.execution.at(ctx.span(found[0].name).line)
    return where is not None and (where.qualname, name.value) in ctx.execution.host_params


def last_value(name: cst.Name, ctx: FileContext) -> cst.BaseExpression | None:
    """The value of the last assignment of ``name`` before this use, in source order; in a
    nested function that never binds the name, its enclosing function's last before the
    nested one is defined (a closure's variable)."""
    function = ctx.enclosing_function(name)
    if function is None:
        return None
    value = None
    for node in _events(function, ctx).get(name.value, ()):
        if node is name:
            break
        if isinstance(node, cst.Assign) and not _holds(node, name, ctx):
            value = assigned_value(node, name.value)
    if value is None and ctx.enclosing_function(function) is not None and not binds(function, name.value):
        return _value_before(function, name.value, ctx)
    return value


def _value_before(nested: cst.FunctionDef, name: str, ctx: FileContext) -> cst.BaseExpression | None:
    """The value of the last plain assignment of ``name`` in the function around ``nested``
    before ``nested`` is defined."""
    outer = ctx.enclosing_function(nested)
    if outer is None:
        return None
    value = None
    for node in _events(outer, ctx).get(name, ()):
        if any(ancestor is nested for ancestor in ctx.ancestors(node)):
            break  # events come in source order: the nested function's own come after what precedes it
        if isinstance(node, cst.Assign):
            value = assigned_value(node, name)
    return value


def assigned_value(assign: cst.Assign, name: str) -> cst.BaseExpression:
    """What ``assign`` gives ``name``: its value, or, unpacked into a tuple of names, the
    element at the name's place in a tuple written out (``a, b = x.cpu(), y``), else the
    whole value (``q, k = qkv.split(n)``: the parts of a split live where it does)."""
    for target in assign.targets:
        if not isinstance(target.target, (cst.Tuple, cst.List)):
            continue
        names = [e.value.value if isinstance(e, cst.Element) and isinstance(e.value, cst.Name) else None
                 for e in target.target.elements]
        value = assign.value
        if name in names and isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(names) \
                and all(isinstance(e, cst.Element) for e in value.elements):
            return value.elements[names.index(name)].value
    return assign.value


def _events(function: cst.FunctionDef, ctx: FileContext) -> dict[str, list[cst.CSTNode]]:
    """Per name, its assignments (``Assign``) and uses (``Name``) in source order; built
    once per function and file context."""
    cache: dict[int, dict[str, list[cst.CSTNode]]] = ctx.__dict__.setdefault("_residency_events", {})
    found = cache.get(id(function))
    if found is None:
        found = {}
        for node in subtree(function.body):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        found.setdefault(target.target.value, []).append(node)
                    elif isinstance(target.target, (cst.Tuple, cst.List)):  # ``a, b = ...``
                        for element in target.target.elements:
                            if isinstance(element, cst.Element) and isinstance(element.value, cst.Name):
                                found.setdefault(element.value.value, []).append(node)
            elif isinstance(node, cst.Name):
                found.setdefault(node.value, []).append(node)
            elif isinstance(node, cst.Assert):  # ``assert x.is_cpu``: an event for ``x``
                for asserted in _asserted_on_host(node.test, ctx):
                    found.setdefault(asserted, []).append(node)
        cache[id(function)] = found
    return found


def _holds(assign: cst.CSTNode, name: cst.Name, ctx: FileContext) -> bool:
    return any(ancestor is assign for ancestor in ctx.ancestors(name))
