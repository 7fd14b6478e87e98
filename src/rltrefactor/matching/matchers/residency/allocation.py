"""Device allocations that a function makes on every call and does not hand back.

An allocation is a ``torch`` factory given a device that is not the host
(``torch.empty(n, device=x.device)``; ``empty``/``zeros``/``ones``/``full``/
``empty_strided``), a ``*_like`` factory of a tensor not known to be on the host, or a
``new_empty``/``new_zeros``/``new_ones``/``new_full`` of such a tensor. An in-place method
chained on it (``torch.empty_like(idx).scatter_(...)``) returns the same tensor.

A **workspace** is an allocation bound to a name that is handed to exactly one call,
which writes it (the buffer is uninitialized, ``empty``, or the call is a kernel:
``device.KERNEL_CALLEES``), whose every use hands it on (as an argument, or through a
view) and that never leaves the function: not returned or yielded (itself, a view of it,
or in a returned tuple), not stored on an object or in a container, not given to a call
whose result is returned or kept. A function's output (``out = torch.empty(...);
kernel(x, out); return out``) is not a workspace: the caller owns it, also where a wrapper
given a view of it returns it under the buffer's name (``out = attn.run(q, out.view(...));
return out``); nor is a buffer one op writes and later ops read (an intermediate value:
the ``out=`` of a call whose result is used), or a filled tensor given to ``torch.cat``
(data).

An **unread** allocation is bound to a name that is bound again, in the same block,
before anything reads it; or never read at all.
"""

from __future__ import annotations

import re
from typing import Any, Callable, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import configured_per_step, in_per_step_function, subtree
from ..options import Option
from .device import KERNEL_CALLEES
from .locations import names_host, on_host

_FACTORIES = frozenset({"empty", "zeros", "ones", "full", "empty_strided"})
_LIKE = frozenset({"empty_like", "zeros_like", "ones_like", "full_like"})
_NEW = frozenset({"new_empty", "new_zeros", "new_ones", "new_full"})
# Results that share the receiver's memory (or are the receiver): returning them returns it.
_SAME_TENSOR = frozenset(
    "view view_as reshape flatten narrow select squeeze unsqueeze permute transpose t expand expand_as "
    "contiguous detach as_strided unflatten".split()
)
# Calls that keep their argument beyond the function.
_KEEPING_CALLS = frozenset(
    "append extend insert add put put_nowait update setdefault save_for_backward register_buffer setattr "
    "mark_non_differentiable".split()
)
KERNEL = re.compile(KERNEL_CALLEES)
_ALLOCATION_TOKEN = re.compile(r"\b(?:empty|zeros|ones|full|empty_strided|new_empty|new_zeros|new_ones|new_full)(?:_like)?\s*\(")


def device_allocation(expr: cst.BaseExpression, ctx: FileContext) -> cst.Call | None:
    """The allocating call ``expr`` is (or chains an in-place method on), when it allocates
    device memory as far as the code shows."""
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and not func.attr.value.startswith("_"):
        return device_allocation(func.value, ctx)  # ``x.fill_(0)``, ``x.scatter_(...)`` return ``x``
    if isinstance(func, cst.Attribute) and func.attr.value in _NEW:
        return expr if not on_host(func.value, ctx) and not _no_elements(expr, func.attr.value) else None
    written = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    if written not in _FACTORIES | _LIKE:
        return None  # checked before resolving the name, which costs more
    root, _, leaf = (ctx.qualified_name(func) or "").rpartition(".")
    if root != "torch" or leaf not in _FACTORIES | _LIKE:
        return None
    device = next((a.value for a in expr.args if a.keyword is not None and a.keyword.value == "device"), None)
    if device is not None:
        return None if names_host(device, ctx) or _no_elements(expr, leaf) else expr
    if leaf in _LIKE and expr.args and expr.args[0].keyword is None:
        return None if on_host(expr.args[0].value, ctx) else expr
    return None  # a factory without a device allocates on the host


def _no_elements(call: cst.Call, factory: str) -> bool:
    """The size written at the call has a literal 0 in it (``x.new_empty((0, 0))``,
    ``torch.empty(0, d, device=dev)``): a placeholder that allocates nothing. The fill of
    ``full``/``new_full`` and the strides of ``empty_strided`` are not sizes."""
    positional = [a.value for a in call.args if a.keyword is None and a.star == ""]
    sizes = positional[:1] if factory in ("full", "new_full", "empty_strided") else positional
    for size in sizes:
        dims = [e.value for e in size.elements] if isinstance(size, (cst.Tuple, cst.List)) else [size]
        if any(isinstance(d, cst.Integer) and d.value == "0" for d in dims):
            return True
    return False


def _allocations(
    ctx: FileContext, where: Callable[[cst.Assign], bool] = lambda assign: True
) -> Iterator[tuple[cst.Assign, cst.Name, cst.Call]]:
    """``name = <device allocation>`` statements inside functions, among those ``where`` keeps
    (asked first: residency costs more)."""
    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name) or not where(assign):
            continue
        call = device_allocation(assign.value, ctx)
        if call is not None and ctx.enclosing_function(assign) is not None:
            yield assign, assign.targets[0].target, call


def _refers(expr: cst.BaseExpression | None, names: set[str]) -> bool:
    """``expr`` is one of ``names``, a view of one, or a tuple, list or dict holding one."""
    if expr is None:
        return False
    if isinstance(expr, cst.Name):
        return expr.value in names
    if isinstance(expr, cst.Subscript):
        return _refers(expr.value, names)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_TENSOR:
        return _refers(expr.func.value, names)
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return any(_refers(element.value, names) for element in expr.elements)
    if isinstance(expr, cst.Dict):
        return any(isinstance(e, cst.DictElement) and _refers(e.value, names) for e in expr.elements)
    return False


def _mentions(node: cst.CSTNode, names: set[str]) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in subtree(node))


def _after(
    function: cst.FunctionDef, assign: cst.Assign, name: str, order: dict[int, list[cst.CSTNode]], ctx: FileContext
) -> list[cst.CSTNode]:
    """The nodes of ``function`` after ``assign``, in source order, up to the next binding
    of ``name`` in the allocation's block or a block around it: where the allocated value
    can be used. A binding in a nested branch ends nothing (the other branches still see
    the buffer), so uses are over-counted, never missed."""
    nodes = order.get(id(function))
    if nodes is None:
        nodes = order[id(function)] = list(subtree(function.body))
    inside = set(map(id, subtree(assign)))
    around = {id(a) for a in ctx.ancestors(assign) if isinstance(a, cst.IndentedBlock)}
    start = next((i for i, node in enumerate(nodes) if node is assign), len(nodes))
    window: list[cst.CSTNode] = []
    held = {name}  # the name and its aliases so far
    for node in nodes[start + 1:]:  # an assignment comes before its targets and value
        if id(node) in inside:
            continue
        if isinstance(node, cst.Assign) and any(binds_name(t.target, name) for t in node.targets):
            block = next((a for a in ctx.ancestors(node) if isinstance(a, cst.IndentedBlock)), None)
            if id(block) in around and not _refers(node.value, {name}) and not _hands_back(node.value, held, ctx):
                window.extend(subtree(node.value))  # evaluated before the new binding
                break  # ``name = ...`` or ``name, other = ...``: a new value from here on
        if isinstance(node, cst.Assign) and _refers(node.value, held):
            held.update(n.value for t in node.targets for n in subtree(t.target) if isinstance(n, cst.Name))
        window.append(node)
    return window


def _hands_back(value: cst.BaseExpression, held: set[str], ctx: FileContext) -> bool:
    """``value`` is a call outside ``torch`` given the buffer or a view of it: a wrapper that
    writes its output argument may return it (``out = attn.run(q, out.view(...))``), so the
    name it is bound to may still hold the buffer."""
    return isinstance(value, cst.Call) and _mentions(value, held) \
        and not (ctx.qualified_name(value.func) or "").startswith("torch.")


def _aliases(window: list[cst.CSTNode], name: str) -> set[str]:
    """``name`` and the names bound to it or to views of it in ``window``."""
    names = {name}
    for node in window:  # source order: an alias is bound before it is used
        if isinstance(node, cst.Assign) and _refers(node.value, names):
            for target in node.targets:
                names.update(n.value for n in subtree(target.target) if isinstance(n, cst.Name))
    return names


def _may_return_argument(call: cst.Call, names: set[str], ctx: FileContext) -> bool:
    """``call`` is given one of ``names`` and may return it: an ``out=`` argument, or a
    callee that is not a ``torch`` function (a wrapper may hand its buffer back)."""
    if any(a.keyword is not None and a.keyword.value == "out" and _refers(a.value, names) for a in call.args):
        return True
    return _mentions(call, names) and not (ctx.qualified_name(call.func) or "").startswith("torch.")


def _escapes(window: list[cst.CSTNode], names: set[str], ctx: FileContext) -> bool:
    """One of ``names`` leaves the function: returned, yielded, stored, kept by a call, or
    given to a call whose result is returned."""
    for node in window:
        if isinstance(node, (cst.Return, cst.Yield)) and node.value is not None:
            value = node.value.item if isinstance(node.value, cst.From) else node.value
            if _refers(value, names) or (isinstance(value, cst.Call) and _may_return_argument(value, names, ctx)):
                return True
        elif isinstance(node, cst.Assign) and _refers(node.value, names):
            if any(not isinstance(t.target, cst.Name) for t in node.targets):
                return True  # ``self.buf = x``, ``cache[k] = x``
        elif isinstance(node, cst.Call):
            func = node.func
            method = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            if method in _KEEPING_CALLS and any(_refers(a.value, names) for a in node.args):
                return True
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            return True
    return False


def _only_handed_on(window: list[cst.CSTNode], names: set[str], ctx: FileContext) -> bool:
    """Every use of ``names`` in ``window`` hands the buffer (or a view of it) on: as a
    call's argument, a ``return``, or the value of an alias. A buffer that Python code
    fills, reads or computes with (``q[:, :d] = x``, ``mask.sum()``) is an intermediate
    value, not a workspace."""
    for node in window:
        if not isinstance(node, cst.Name) or node.value not in names or _is_binding(node, ctx):
            continue
        holder: cst.CSTNode = node
        parent = ctx.parent(holder)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue  # ``obj.name``: another value of the same name
        while parent is not None and _passes_through(parent, holder):
            holder, parent = parent, ctx.parent(parent)
        if not isinstance(parent, (cst.Arg, cst.Return, cst.Assign)):
            return False
    return True


def _passes_through(parent: cst.CSTNode, child: cst.CSTNode) -> bool:
    """``parent`` is the same buffer as ``child``: a view method's call or receiver, a
    basic slice of it, or a tuple holding it."""
    if isinstance(parent, cst.Attribute):
        return parent.value is child and parent.attr.value in _SAME_TENSOR
    if isinstance(parent, cst.Call):
        return isinstance(parent.func, cst.Attribute) and parent.func is child
    if isinstance(parent, cst.Subscript):
        return parent.value is child and all(isinstance(e.slice, cst.Slice) for e in parent.slice)
    return isinstance(parent, (cst.Element, cst.Tuple, cst.List))


def _is_binding(name: cst.Name, ctx: FileContext) -> bool:
    """``name`` is (part of) an assignment target: an alias being bound."""
    for ancestor in ctx.ancestors(name):
        if isinstance(ancestor, cst.AssignTarget):
            return True
        if not isinstance(ancestor, (cst.Element, cst.Tuple, cst.List)):
            return False
    return False


def _consumers(window: list[cst.CSTNode], names: set[str]) -> list[cst.Call]:
    """The calls given one of ``names``, or a view of it, as an argument."""
    return [node for node in window if isinstance(node, cst.Call) and any(_refers(a.value, names) for a in node.args)]


def _results_of_calls(window: list[cst.CSTNode], names: set[str], ctx: FileContext) -> set[str]:
    """``names`` and the names bound to what a call outside ``torch`` returns when given one
    of them: a wrapper may return the buffer, or a record holding it."""
    held = set(names)
    for node in window:
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) and _mentions(node.value, held):
            if not (ctx.qualified_name(node.value.func) or "").startswith("torch."):
                for target in node.targets:
                    held.update(n.value for n in subtree(target.target) if isinstance(n, cst.Name))
    return held


def _output_argument(consumer: cst.Call, names: set[str], ctx: FileContext) -> bool:
    """The buffer is the consumer's ``out=`` and the consumer's result is used, not dropped
    (``mixed = conv_update(x, state, out=buf)``): the op writes its output there and later
    code reads it through the result."""
    given = any(a.keyword is not None and a.keyword.value == "out" and _refers(a.value, names) for a in consumer.args)
    return given and not isinstance(ctx.parent(consumer), cst.Expr)


def _scratch(call: cst.Call, consumer: cst.Call, ctx: FileContext) -> bool:
    """What the consumer does with the buffer is write it: the buffer starts uninitialized
    (``empty``), or the consumer is a kernel (``device.KERNEL_CALLEES``); a filled buffer
    given to ``torch.cat`` or a Python helper is data, not scratch."""
    func = call.func
    allocator = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    if allocator.startswith(("empty", "new_empty")):
        return True
    return KERNEL.search(ctx.code(consumer.func).strip()) is not None


class WorkspaceAllocationPerCall:
    """A device workspace allocated on every call of a per-step function and handed to a kernel or op."""

    reach = MatcherReach(reads="function")
    prefilter: Prefilter = (_ALLOCATION_TOKEN,)
    OPTIONS: ClassVar[dict[str, Option]] = {
        "left-to-loop-rule": Option(
            "regex",
            r"^_?(execute_model|execute_\w+|step|prepare_inputs?\w*|update_states|schedule|propose\w*)$",
            "function names whose allocations `device-allocation-per-step` already reports (loops too)",
        ),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.left_to_loop_rule = re.compile(options["left-to-loop-rule"])

    def find(self, ctx: FileContext) -> Iterator[Match]:
        order: dict[int, list[cst.CSTNode]] = {}
        for assign, name, call in _allocations(ctx, lambda assign: self._candidate(assign, ctx)):
            function = ctx.enclosing_function(assign)
            if function is None:
                continue
            window = _after(function, assign, name.value, order, ctx)
            names = _aliases(window, name.value)
            consumers = _consumers(window, names)
            # A workspace is handed to one call, which writes it; a buffer one op writes and
            # later ops read is an intermediate value, not scratch.
            if len(consumers) != 1 or not _scratch(call, consumers[0], ctx) or not _only_handed_on(window, names, ctx):
                continue
            if _output_argument(consumers[0], names, ctx):
                continue  # the op's output, read through what it returns: an intermediate value
            if not _escapes(window, _results_of_calls(window, names, ctx), ctx):
                yield Match(call, {"X": name.value})


    def _candidate(self, assign: cst.Assign, ctx: FileContext) -> bool:
        """Proven per step by the execution stage, and not left to ``device-allocation-per-step``
        (loops, its step names, functions the configuration makes per step)."""
        function = ctx.enclosing_function(assign)
        return (
            function is not None and in_per_step_function(assign, ctx) and not configured_per_step(assign, ctx)
            and not ctx.in_loop(assign) and not self.left_to_loop_rule.search(function.name.value)
        )


class UnreadDeviceAllocation:
    """A device allocation bound to a name that is bound again, or dropped, before anything reads it."""

    reach = MatcherReach(reads="function")
    prefilter: Prefilter = (_ALLOCATION_TOKEN,)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for assign, name, call in _allocations(ctx):
            if name.value == "_" or ctx.in_loop(assign):
                continue
            if _unread(assign, name.value, ctx):
                yield Match(call, {"X": name.value})


def _unread(assign: cst.Assign, name: str, ctx: FileContext) -> bool:
    """No statement after ``assign`` in its block reads ``name`` before one binds it again,
    and nothing outside the block reads it (the block is the function's body, or the
    binding is followed by a rebinding in the same block)."""
    statement = ctx.parent(assign)
    block = ctx.parent(statement) if statement is not None else None
    if not isinstance(statement, cst.SimpleStatementLine) or not isinstance(block, cst.IndentedBlock):
        return False
    position = next((i for i, line in enumerate(block.body) if line is statement), None)
    if position is None:
        return False
    function = ctx.enclosing_function(assign)
    rest = block.body[position + 1:]
    names_in: dict[int, frozenset[str]] = ctx.__dict__.setdefault("_allocation_statement_names", {})
    for later in rest:
        mentioned = names_in.get(id(later))
        if mentioned is None:
            mentioned = names_in[id(later)] = frozenset(n.value for n in subtree(later) if isinstance(n, cst.Name))
        if name not in mentioned:
            continue
        if _reads(later, name):
            return False
        if _binds(later, name):
            return True
    return function is not None and block is function.body  # never read before the function ends


def _reads(statement: cst.CSTNode, name: str) -> bool:
    """``statement`` mentions ``name`` anywhere but as the whole target of a plain assignment."""
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if isinstance(small, cst.Assign):
                if _mentions(small.value, {name}) or any(
                    not binds_name(t.target, name) and _mentions(t.target, {name})
                    for t in small.targets
                ):
                    return True
            elif _mentions(small, {name}):
                return True
        return False
    return _mentions(statement, {name})


def _binds(statement: cst.CSTNode, name: str) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, cst.Assign) and any(binds_name(t.target, name) for t in small.targets)
        for small in statement.body
    )


def binds_name(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(binds_name(element.value, name) for element in target.elements)
    return isinstance(target, cst.Name) and target.value == name
