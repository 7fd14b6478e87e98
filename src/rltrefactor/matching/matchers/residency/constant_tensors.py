"""Device tensors whose values a per-step function could build once, rebuilt on every call.

Two shapes, each read in a function the execution stage proves per step:

- a **constant tensor**: ``name = torch.ones/zeros/full/arange/eye(..., device=d)`` (or
  ``torch.empty`` followed by element writes) whose values come from sizes, literals,
  the dtype and the device alone, and that nothing after it writes with data: alpha and
  beta vectors, index and reordering maps, ``cu_seqlens`` of fixed-length batches,
  masks. Every call launches a fill kernel and allocates memory whose contents never
  change for a given size.
- a **default filled on every call**: ``if bias is None: bias = torch.zeros(n, device=d)``
  of a parameter (or ``bias = torch.zeros(...) if bias is None else bias``), not stored
  back: every call that leaves the default out pays the allocation and the fill.

A tensor that leaves the function (returned as its output, stored on an object or in a
container, handed to ``append``-like calls) is the caller's, not a constant; one written
by a later op (``out=name``, an in-place method, an element write of a value that is
not a literal or at a place read from data, ``zeros``/``empty`` handed to a call outside ``torch``, which may
accumulate into it) is an intermediate value. Loops, the scheduler-facing step functions
and functions the configuration makes per step are ``device-allocation-per-step``'s;
``torch.tensor(...)`` on a device is the host-to-device rules'.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import configured_per_step, in_per_step_function, parameter_names, subtree
from ..options import Option
from .allocation import device_allocation
from .locations import names_host

_CONSTANT_FACTORIES = frozenset({"zeros", "ones", "full", "arange", "eye", "empty"})
# Factories whose fresh contents a call outside ``torch`` may well accumulate into or overwrite.
_WRITABLE = frozenset({"zeros", "empty"})
_MORE_FILLS = frozenset({"arange", "eye", "tensor", "as_tensor", "linspace"})
# Calls that keep their argument beyond the function.
_KEEPING = frozenset("append extend insert add put put_nowait update setdefault register_buffer setattr".split())
# Results that are the receiver itself or share its memory.
_SAME_TENSOR = frozenset("view view_as reshape flatten narrow select squeeze unsqueeze permute transpose t expand contiguous".split())
_STEP_FUNCTIONS = r"^_?(execute_model|execute_\w+|step|prepare_inputs?\w*|update_states|schedule|propose\w*)$"
_FILL_TOKEN = re.compile(
    r"\b(?:zeros|ones|full|arange|eye|empty|empty_strided|tensor|as_tensor|linspace)(?:_like)?\s*\(|\bnew_\w+\s*\("
)
_TOKEN = re.compile(r"\b(?:zeros|ones|full|arange|eye|empty|tensor|linspace)(?:_like)?\s*\(|\bnew_\w+\s*\(")


def _torch_factory(call: cst.BaseExpression, ctx: FileContext, names: frozenset[str]) -> str | None:
    """The factory's name when ``call`` is ``torch.<one of names>(..., device=d)`` with
    ``d`` not the host."""
    if not isinstance(call, cst.Call):
        return None
    func = call.func
    written = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    if written not in names:
        return None
    root, _, leaf = (ctx.qualified_name(func) or "").rpartition(".")
    if root != "torch" or leaf not in names:
        return None
    device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    return leaf if device is not None and not names_host(device, ctx) else None


def _literal(expr: cst.BaseExpression) -> bool:
    """A number, a bool, ``float("inf")``, ``-1``, ``math.inf``, ``torch.finfo(t).min``."""
    if isinstance(expr, cst.UnaryOperation):
        return _literal(expr.expression)
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False")
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "float":
        return len(expr.args) == 1 and isinstance(expr.args[0].value, cst.SimpleString)
    return isinstance(expr, cst.Attribute) and expr.attr.value in ("inf", "nan", "min", "max", "eps")


def _constant_arguments(call: cst.Call, factory: str) -> bool:
    """``full``'s fill value is a literal (a value read from data is no constant)."""
    if factory != "full":
        return True
    fill = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "fill_value"), None)
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if fill is None and len(positional) >= 2:
        fill = positional[1]
    return fill is not None and _literal(fill)


def _is_tensor(expr: cst.BaseExpression | None, name: str) -> bool:
    """``expr`` is ``name``, a view or slice of it, or a tuple, list or dict holding one."""
    if isinstance(expr, cst.Name):
        return expr.value == name
    if isinstance(expr, cst.Subscript):
        return _is_tensor(expr.value, name)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and _same_tensor(expr.func.attr.value):
        return _is_tensor(expr.func.value, name)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return any(_is_tensor(e.value, name) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return any(isinstance(e, cst.DictElement) and _is_tensor(e.value, name) for e in expr.elements)
    if isinstance(expr, cst.IfExp):
        return _is_tensor(expr.body, name) or _is_tensor(expr.orelse, name)
    return False


def _same_tensor(method: str) -> bool:
    """A view method, or an in-place one (``x.div_(n)`` returns ``x``)."""
    return method in _SAME_TENSOR or (method.endswith("_") and not method.startswith("_"))


def _literal_index(subscript: cst.Subscript) -> bool:
    """``x[0]``, ``x[1:]``, ``x[:, -1]``, ``x[...]``: the same elements on every call (an
    index read from data writes data-dependent places)."""
    def fixed(expr: cst.BaseExpression | None) -> bool:
        return expr is None or isinstance(expr, (cst.Integer, cst.Ellipsis)) or (
            isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, cst.Integer))

    for element in subscript.slice:
        index = element.slice
        if isinstance(index, cst.Slice):
            if not (fixed(index.lower) and fixed(index.upper) and fixed(index.step)):
                return False
        elif not (isinstance(index, cst.Index) and fixed(index.value)):
            return False
    return True


def _aliases(function: cst.FunctionDef, name: str) -> set[str]:
    """``name`` and the local names bound to it or to a view of it (``view = buf[:n]``)."""
    names, grown = {name}, True
    while grown:
        grown = False
        for node in subtree(function.body):
            if isinstance(node, cst.Assign) and any(_is_tensor(node.value, alias) for alias in names):
                for target in node.targets:
                    if isinstance(target.target, cst.Name) and target.target.value not in names:
                        names.add(target.target.value)
                        grown = True
    return names


def _leaves(function: cst.FunctionDef, name: str, ctx: FileContext) -> bool:
    """The tensor bound to ``name`` (or an alias of it) leaves the function: returned or
    yielded (itself, a view, in a tuple), stored on an object or in a container, kept by a
    call, or named ``global``/``nonlocal``."""
    return any(_leaves_as(function, alias) for alias in _aliases(function, name))


def _leaves_as(function: cst.FunctionDef, name: str) -> bool:
    for node in subtree(function.body):
        if isinstance(node, (cst.Return, cst.Yield)) and node.value is not None:
            value = node.value.item if isinstance(node.value, cst.From) else node.value
            if _is_tensor(value, name):
                return True
        elif isinstance(node, cst.Assign) and _is_tensor(node.value, name):
            if any(not isinstance(t.target, cst.Name) for t in node.targets):
                return True
        elif isinstance(node, cst.Call):
            func = node.func
            method = func.attr.value if isinstance(func, cst.Attribute) else ""
            if method in _KEEPING and any(_is_tensor(a.value, name) for a in node.args):
                return True
        elif isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value == name for n in node.names):
            return True
    return False


class ConstantTensorPerCall:
    """A device tensor of constant values (sizes, literals, dtype, device) built on every call of per-step code."""

    reach = MatcherReach(reads="function")
    prefilter: Prefilter = (_TOKEN,)
    OPTIONS: ClassVar[dict[str, Option]] = {
        "left-to-loop-rule": Option(
            "regex", _STEP_FUNCTIONS,
            "function names whose allocations `device-allocation-per-step` already reports (loops too)",
        ),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.left_to_loop_rule = re.compile(options["left-to-loop-rule"])

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for assign in ctx.nodes(cst.Assign):
            if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
                continue
            factory = _torch_factory(assign.value, ctx, _CONSTANT_FACTORIES)
            function = ctx.enclosing_function(assign)
            if factory is None or function is None or not self._read_here(assign, function, ctx):
                continue
            assert isinstance(assign.value, cst.Call)
            name = assign.targets[0].target.value
            if name in parameter_names(function) or not _constant_arguments(assign.value, factory):
                continue  # ``bias = torch.zeros(...)`` of a parameter: the default rule's
            if _constant_uses(function, assign, name, factory, ctx) and not _leaves(function, name, ctx):
                yield Match(assign.value, {"X": name, "FACTORY": f"torch.{factory}"})

    def _read_here(self, assign: cst.Assign, function: cst.FunctionDef, ctx: FileContext) -> bool:
        """Per step, and not ``device-allocation-per-step``'s (a loop, its step names, configured functions)."""
        return (
            in_per_step_function(assign, ctx) and not configured_per_step(assign, ctx)
            and not ctx.in_loop(assign) and not self.left_to_loop_rule.search(function.name.value)
        )


def _constant_uses(function: cst.FunctionDef, assign: cst.Assign, name: str, factory: str, ctx: FileContext) -> bool:
    """Something reads the tensor and nothing writes data into it: no ``out=``, no in-place
    method, element writes of literals at literal places only (at least one for ``empty``), no other binding
    of the name; and ``zeros``/``empty`` handed to a call outside ``torch`` only once
    element writes have made their values (fresh zeros there may be an accumulator)."""
    inside = set(map(id, subtree(assign)))
    uses = {"read": 0, "write": 0, "handed": 0}
    for node in subtree(function.body):
        if not isinstance(node, cst.Name) or node.value != name or id(node) in inside:
            continue
        use = _use(node, ctx)
        if use is None:
            return False
        uses[use] += 1
    if factory in _WRITABLE and not uses["write"]:
        return uses["read"] > 0 and not uses["handed"] and factory != "empty"
    return uses["read"] + uses["handed"] > 0


def _use(node: cst.Name, ctx: FileContext) -> str | None:
    """"read", "write" (an element write of a literal), "handed" (an argument of a call
    outside ``torch``), or None for a use that makes the tensor no constant: a binding, a
    data write."""
    parent = ctx.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node:
        method = parent.attr.value
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent and method.endswith("_") and not method.startswith("_"):
            return None  # ``x.fill_(v)``, ``x.index_add_(...)``
        return "read"
    if isinstance(parent, cst.Attribute):
        return "read"  # ``obj.name``: another value
    if isinstance(parent, cst.Subscript) and parent.value is node:
        holder = ctx.parent(parent)
        if isinstance(holder, cst.AssignTarget):
            statement = ctx.parent(holder)
            constant = isinstance(statement, cst.Assign) and _literal(statement.value) and _literal_index(parent)
            return "write" if constant else None
        if isinstance(holder, cst.AugAssign) and holder.target is parent:
            return None
        return "read"
    if isinstance(parent, (cst.AssignTarget, cst.AugAssign)) or (isinstance(parent, cst.Element) and _in_target(parent, ctx)):
        return None  # bound again, or written as a whole
    if isinstance(parent, cst.Arg):
        if parent.keyword is not None and parent.keyword.value == "out":
            return None
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and not (ctx.qualified_name(call.func) or "").startswith("torch."):
            return "handed"
    return "read"


def _in_target(node: cst.CSTNode, ctx: FileContext) -> bool:
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.AssignTarget):
            return True
        if not isinstance(ancestor, (cst.Element, cst.Tuple, cst.List)):
            return False
    return False


class DefaultFilledPerCall:
    """A ``None`` parameter filled with a fresh device tensor on every call of per-step code."""

    reach = MatcherReach(reads="function")
    # The hit is the fill itself, a factory call: its name selects far fewer functions than ``None``.
    prefilter: Prefilter = (_FILL_TOKEN,)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for assign in ctx.nodes(cst.Assign):
            if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
                continue
            name = assign.targets[0].target.value
            fill = _default_fill(assign, name, ctx)
            function = ctx.enclosing_function(assign)
            if fill is None or function is None or name not in parameter_names(function):
                continue
            if in_per_step_function(assign, ctx) and not _leaves(function, name, ctx):
                yield Match(fill, {"X": name})


def _default_fill(assign: cst.Assign, name: str, ctx: FileContext) -> cst.Call | None:
    """The device tensor ``assign`` fills ``name`` with when it is None: inside ``if name
    is None:``, or ``fill if name is None else name`` / ``name if name is not None else fill``."""
    value = assign.value
    if isinstance(value, cst.IfExp):
        test = _none_test(value.test, name)
        if test == "is" and _is_tensor(value.orelse, name):
            value = value.body
        elif test == "is not" and _is_tensor(value.body, name):
            value = value.orelse
        else:
            return None
    elif not _under_none_test(assign, name, ctx):
        return None
    call = value.func.value if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
        and value.func.attr.value in ("to", "cuda") and isinstance(value.func.value, cst.Call) else value
    if not isinstance(call, cst.Call):
        return None
    if device_allocation(call, ctx) is not None or _torch_factory(call, ctx, _MORE_FILLS) is not None:
        return call
    return None


def _none_test(test: cst.BaseExpression, name: str) -> str | None:
    """"is" for ``name is None``, "is not" for ``name is not None``, else None."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    if not (isinstance(test.left, cst.Name) and test.left.value == name):
        return None
    if not (isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
        return None
    return "is" if isinstance(target.operator, cst.Is) else "is not" if isinstance(target.operator, cst.IsNot) else None


def _under_none_test(assign: cst.Assign, name: str, ctx: FileContext) -> bool:
    """``assign`` is in the body of ``if name is None:`` (or the ``else`` of ``if name is not None:``)."""
    child: cst.CSTNode = assign
    for ancestor in ctx.ancestors(assign):
        if isinstance(ancestor, cst.FunctionDef):
            return False
        if isinstance(ancestor, cst.If):
            test = _none_test(ancestor.test, name)
            if (test == "is" and child is ancestor.body) or (test == "is not" and child is ancestor.orelse):
                return True
        child = ancestor
    return False
