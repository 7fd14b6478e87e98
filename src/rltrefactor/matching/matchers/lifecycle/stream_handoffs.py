"""A tensor made on one CUDA stream and used on another with nothing ordering the two.

After PyTorch's CUDA semantics ("CUDA streams"): kernels on a side stream run
concurrently with the current stream. A value computed under
``with torch.cuda.stream(side):`` is ready for the current stream only after
``torch.cuda.current_stream().wait_stream(side)``, an event recorded on ``side`` and
waited on, or a host synchronize; a value the current stream computes is ready for
``side`` only after ``side.wait_stream(...)`` (or an event). Without one, the consumer
reads memory its producer is still writing.

Two hand-offs are read, each within one function, in source order:
- *out of the side stream*: a name bound inside the ``with`` block to the result of a
  call, then used after the block (as an operand, an argument, a receiver) with no wait
  between;
- *into the side stream*: a name the function showed on a device (``on_device``) before
  the block, read inside it with no wait between.

A wait is any ``wait_stream``, ``wait_event``, ``wait``, ``synchronize``,
``record_stream`` or ``record`` call, whatever its receiver (``record_stream`` is the
allocator's half of the protocol, ``record`` an event's: code that calls them is taking
care of the hand-off, perhaps in another function). Returning or
storing the value is no use (whoever reads it may wait), nor are its metadata
(``.shape``, ``.dtype``, ``.device``, ``.size()``, ``.data_ptr()``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, own_nodes
from ..context import bound_before, is_target, subtree, unpacked
from ..imports import dotted_name
from ..options import Option
from ..residency.locations import on_device
from ....source.tensor_places import VIEW_METHODS

_WAITS = frozenset({"wait_stream", "wait_event", "wait", "synchronize", "record_stream", "record", "record_event"})
# Allocations that write nothing: there is no producer to wait for.
_UNWRITTEN = frozenset({"empty", "empty_like", "empty_strided", "new_empty"})
_METADATA = frozenset({"shape", "dtype", "device", "size", "data_ptr", "dim", "numel", "is_cuda", "ndim",
                       "stride", "record_stream", "element_size", "nbytes"})
_NOT_TENSORS = frozenset({"len", "int", "float", "bool", "str", "list", "tuple", "dict", "range", "Event",
                          "current_stream", "default_stream", "Stream", "item", "tolist", "numpy"})
_CURRENT = frozenset({"current_stream", "default_stream"})
# Calls that store or count a value rather than read its data.
_STORES = frozenset({"append", "extend", "put", "put_nowait", "len", "isinstance", "id"})


@dataclass(frozen=True)
class _Produced:
    """A value an assignment binds."""

    name: str  # as the function spells it: "ids", "self.buf"
    at: cst.CSTNode  # the binding target


class StreamHandoffWithoutWait:
    """A value handed between a side stream and the current one with no wait, event or synchronize."""

    reach = MatcherReach(reads="function")
    prefilter: Prefilter = ("stream(", "StreamContext(")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for block in ctx.nodes(cst.With):
            side = _side_stream(block, ctx)
            if side is None:
                continue
            function = ctx.enclosing_function(block)
            if function is None:
                continue
            order = list(own_nodes(function.body))
            position = {id(n): i for i, n in enumerate(order)}
            if id(block) not in position:
                continue  # inside a class the function defines: it runs at another time
            yield from _out_of_side(block, side, order, position, ctx)
            yield from _into_side(block, side, order, position, ctx)


def _side_stream(block: cst.With, ctx: FileContext) -> str | None:
    """The text of the side stream a ``with torch.cuda.stream(s):`` switches to."""
    for item in block.items:
        call = item.item
        if not isinstance(call, cst.Call) or not call.args:
            continue
        name = ctx.qualified_name(call.func) or dotted_name(call.func) or ""
        if not name.startswith("torch.") or name.rpartition(".")[2] not in ("stream", "StreamContext"):
            continue
        stream = call.args[0].value
        if isinstance(stream, cst.Name) and stream.value == "None":
            return None
        if isinstance(stream, cst.Name):
            bound = bound_before(stream, ctx)
            stream = bound if bound is not None else stream
        if any(isinstance(n, cst.Call) and (dotted_name(n.func) or "").rpartition(".")[2] in _CURRENT
               for n in own_nodes(stream)):
            return None  # the current or default stream, maybe on one branch: no side stream known
        return ctx.code(stream)
    return None


def _out_of_side(block: cst.With, side: str, order: list[cst.CSTNode], position: dict[int, int],
                 ctx: FileContext) -> Iterator[Match]:
    produced = list(_bound_from_calls(block.body, ctx))
    if not produced:
        return
    end = position[id(block)] + sum(1 for _ in own_nodes(block))  # own_nodes is pre-order: the block is a run
    for value in produced:
        for index in range(position[id(value.at)] + 1, len(order)):
            node = order[index]
            if _waits(node):
                break
            if index < end:
                continue  # still on the side stream
            if _rebinds(node, value.name):
                break
            if _uses(node, value.name, ctx):
                yield Match(node, {"NAME": value.name, "STREAM": side, "LINE": str(ctx.span(value.at).line),
                                   "DIRECTION": "made on",
                                   "WAIT": f"torch.cuda.current_stream().wait_stream({side})"})
                break


def _into_side(block: cst.With, side: str, order: list[cst.CSTNode], position: dict[int, int],
               ctx: FileContext) -> Iterator[Match]:
    begin = position[id(block)]
    ready: dict[str, cst.CSTNode] = {}  # device values bound before the block, not yet waited for
    for node in order[:begin]:
        if _waits(node):
            ready.clear()
        elif isinstance(node, cst.Assign) and on_device(node.value, ctx):
            if _launches_nothing(node.value):
                # A view of a value still unordered is that value; one of an ordered value is ready.
                made = [ready[n.value] for n in subtree(node.value) if isinstance(n, cst.Name) and n.value in ready]
                ready.update((value.name, made[0]) for value in _bound(node) if made)
            else:
                ready.update((value.name, value.at) for value in _bound(node))
    if not ready:
        return
    for node in own_nodes(block.body):
        if _waits(node):
            return
        for name, at in list(ready.items()):
            if _uses(node, name, ctx):
                yield Match(node, {"NAME": name, "STREAM": side, "LINE": str(ctx.span(at).line),
                                   "DIRECTION": "read on", "WAIT": f"{side}.wait_stream(torch.cuda.current_stream())"})
                del ready[name]


_CONTAINERS = frozenset({"dict", "list", "tuple"})


def _launches_nothing(value: cst.BaseExpression) -> bool:
    """``value`` queues no work on the current stream: a name, a slice or view of one
    (``buf[:n].view(b, -1)``), or a container of those (``dict(common, out=out[rows])``);
    its memory is what an earlier wait already ordered."""
    if isinstance(value, (cst.Name, cst.Attribute)):
        return True
    if isinstance(value, cst.Subscript):
        return _launches_nothing(value.value)
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(isinstance(e, cst.Element) and _launches_nothing(e.value) for e in value.elements)
    if isinstance(value, cst.Dict):
        return all(isinstance(e, cst.DictElement) and _launches_nothing(e.value) for e in value.elements)
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value in VIEW_METHODS:
        return _launches_nothing(func.value)
    return isinstance(func, cst.Name) and func.value in _CONTAINERS and all(_launches_nothing(a.value) for a in value.args)


def _bound_from_calls(body: cst.BaseSuite, ctx: FileContext) -> Iterator[_Produced]:
    for node in own_nodes(body):
        if not (isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)):
            continue
        func = node.value.func
        callee = func.attr.value if isinstance(func, cst.Attribute) else dotted_name(func) or ""
        if callee in _NOT_TENSORS or callee in _UNWRITTEN or callee[:1].isupper():
            continue  # a Python value, an event, a stream, an object a class builds, unwritten memory
        if not (on_device(node.value, ctx) or (ctx.qualified_name(func) or "").startswith("torch.")):
            continue  # not shown to be device work: what a helper returns may be a Python value
        yield from _bound(node)


def _bound(assign: cst.Assign) -> Iterator[_Produced]:
    """Each name or attribute chain the assignment binds (tuples unpacked)."""
    for target in assign.targets:
        for single in unpacked(target.target):
            name = dotted_name(single)
            if name is not None:
                yield _Produced(name, single)


def _waits(node: cst.CSTNode) -> bool:
    """A call that orders streams or waits: one of ``_WAITS``, or a helper whose name says
    it waits, synchronizes or records (``_wait_stream_event(s, ev)``): leaving a finding
    out on a name is the safe side."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, (cst.Attribute, cst.Name))):
        return False
    name = node.func.attr.value if isinstance(node.func, cst.Attribute) else node.func.value
    return name in _WAITS or bool({"wait", "sync", "synchronize", "record"} & set(name.lower().split("_")))


def _rebinds(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.Assign) and any(value.name == name for value in _bound(node))


def _uses(node: cst.CSTNode, name: str, ctx: FileContext) -> bool:
    """``node`` reads ``name``'s data: an argument, an operand, a subscript or a method's
    receiver; not its metadata, not a plain return or store."""
    if dotted_name(node) != name if isinstance(node, (cst.Name, cst.Attribute)) else True:
        return False
    parent = ctx.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node:
        return parent.attr.value not in _METADATA and dotted_name(parent) != name and not is_target(parent, ctx)
    if isinstance(parent, (cst.Return, cst.AssignTarget, cst.Del)):
        return False
    if isinstance(parent, cst.Assign) and parent.value is node:
        return False
    identity = (cst.Is, cst.IsNot)
    if isinstance(parent, cst.Comparison) and all(isinstance(c.operator, identity) for c in parent.comparisons):
        return False  # ``x is not None`` reads no data
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        callee = dotted_name(call.func) if isinstance(call, cst.Call) else None
        return (callee or "").rpartition(".")[2] not in _STORES
    return isinstance(parent, (cst.BinaryOperation, cst.Subscript, cst.Comparison, cst.UnaryOperation,
                               cst.AugAssign))
