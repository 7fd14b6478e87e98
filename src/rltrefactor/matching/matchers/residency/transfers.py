"""Unpacked transfers whose target names one value twice: ``a, b, a = put((x, y, x), ...)``.

An assignment that unpacks the result of a host-to-device placement into a target
naming the same variable (or the same dotted attribute) twice keeps only the last of
the two results: the first transfer is done on every run and thrown away. The lost
value is certain from the target alone; what makes the statement a transfer is read
from the code: the call maps over a tuple or list literal of as many elements as the
target (its result is unpacked element by element) and is a placement (a ``jax``
placement function, a ``device=``/``sharding=``/``mesh=`` argument, a placement object
or a per-element placement function passed to it), or the value is a tuple, list or
comprehension of per-element transfers (``x.to(dev)``, ``x.cuda()``, ``jax.device_put(x)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator, Sequence

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..imports import dotted_name
from ..options import Option

# Functions that place their argument (an array or a tree of arrays) on devices.
_PLACEMENT_FUNCTIONS = frozenset({
    "jax.device_put", "jax.device_put_replicated", "jax.device_put_sharded", "jax.device_get",
    "jax.make_array_from_process_local_data",
})
# Keywords through which a call is told where its result must live.
_PLACEMENT_KEYWORDS = frozenset({"device", "devices", "sharding", "shardings", "out_sharding", "mesh", "non_blocking"})
# Tensor methods that return a copy on another device.
_TRANSFER_METHODS = frozenset({"to", "cuda", "cpu", "npu", "xpu"})
# A positional argument naming where a result goes (``self.mesh``, ``target_device``):
# a name word, read only for calls that already map over the unpacked tuple.
_PLACE_WORD = re.compile(r"(?:^|_)(?:device|devices|mesh|sharding)$")
# pylint's default dummy-variable convention: names written to be thrown away.
_DISCARDED = re.compile(r"_+$|_[a-zA-Z0-9_]*[a-zA-Z0-9]$|dummy|ignored_|unused_")


@dataclass(frozen=True)
class Repeat:
    """The same name bound at two positions (0-based) of one unpacking target."""

    name: str
    first: int
    second: int
    node: cst.BaseExpression


class ValueTransferredTwice:
    """An unpacked placement whose target names one value twice: the first transfer is thrown away."""

    # Everything read lies in the assignment statement, and the hit is one of its targets.
    reach = MatcherReach(reads="statement", hits_at_tokens=True)
    prefilter: Prefilter = ("device", "shard", "mesh", ".to(", ".cuda(", ".cpu(", ".npu(", ".xpu(")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for assign in ctx.nodes(cst.Assign):
            if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, (cst.Tuple, cst.List)):
                continue
            targets = assign.targets[0].target.elements
            if any(isinstance(element, cst.StarredElement) for element in targets):
                continue  # positions after a star do not line up with the transferred elements
            repeat = _repeat(targets)
            if repeat is None:
                continue
            sources = _transferred(assign.value, len(targets), ctx)
            if sources is None:
                continue
            yield Match(repeat.node, _bindings(repeat, sources, assign.value, ctx))


def _repeat(targets: Sequence[cst.BaseElement]) -> Repeat | None:
    """The first name or dotted attribute bound twice by ``targets``, dummies left out."""
    seen: dict[str, int] = {}
    for position, element in enumerate(targets):
        name = dotted_name(element.value)
        if name is None or _DISCARDED.match(name):
            continue
        if name in seen:
            return Repeat(name, seen[name], position, element.value)
        seen[name] = position
    return None


def _transferred(value: cst.BaseExpression, count: int, ctx: FileContext) -> list[cst.BaseExpression] | None:
    """What each of ``count`` unpacked elements is a transfer of; None when ``value`` is not
    a transfer element by element."""
    if isinstance(value, cst.Call):
        for arg in value.args:
            if arg.star == "" and isinstance(arg.value, (cst.Tuple, cst.List)) and _plain(arg.value.elements, count):
                if _places(value, arg.value, ctx):
                    return [element.value for element in arg.value.elements]
        return None
    if isinstance(value, (cst.Tuple, cst.List)) and _plain(value.elements, count):
        sources = [_transfer_of_one(element.value, ctx) for element in value.elements]
        return None if any(source is None for source in sources) else [s for s in sources if s is not None]
    if isinstance(value, (cst.GeneratorExp, cst.ListComp)) and value.for_in.inner_for_in is None:
        loop, iterable = value.for_in.target, value.for_in.iter
        if (isinstance(loop, cst.Name) and isinstance(iterable, (cst.Tuple, cst.List)) and _plain(iterable.elements, count)
                and not value.for_in.ifs and _names(_transfer_of_one(value.elt, ctx), loop.value)):
            return [element.value for element in iterable.elements]
    return None


def _plain(elements: Sequence[cst.BaseElement], count: int) -> bool:
    return len(elements) == count and not any(isinstance(element, cst.StarredElement) for element in elements)


def _names(expr: cst.BaseExpression | None, name: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == name


def _places(call: cst.Call, mapped: cst.BaseExpression, ctx: FileContext) -> bool:
    """``call``, given the tuple ``mapped``, puts it on devices: a placement function, a
    placement keyword, or another argument that is a placement object or function."""
    if ctx.qualified_name(call.func) in _PLACEMENT_FUNCTIONS:
        return True
    for arg in call.args:
        if arg.value is mapped:
            continue
        if arg.keyword is not None and arg.keyword.value in _PLACEMENT_KEYWORDS:
            return True
        if arg.keyword is None and _placement_argument(arg.value, ctx):
            return True
    return False


def _placement_argument(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """A device, mesh or sharding (``torch.device(...)``, ``NamedSharding(...)``, ``self.mesh``),
    or a function placing each element (``jax.device_put``, ``lambda t: t.to(dev)``, a
    ``partial`` of a placement)."""
    if isinstance(expr, cst.Lambda):
        return _transfer_of_one(expr.body, ctx) is not None
    if isinstance(expr, cst.Call):
        called = ctx.qualified_name(expr.func) or ""
        if called == "torch.device" or called.startswith("jax.sharding."):
            return True
        return called == "functools.partial" and any(
            a.keyword is None and ctx.qualified_name(a.value) in _PLACEMENT_FUNCTIONS for a in expr.args[:1])
    if ctx.qualified_name(expr) in _PLACEMENT_FUNCTIONS:
        return True
    dotted = dotted_name(expr)
    return dotted is not None and _PLACE_WORD.search(dotted.rpartition(".")[2].lower()) is not None


def _transfer_of_one(expr: cst.BaseExpression, ctx: FileContext) -> cst.BaseExpression | None:
    """What ``expr`` copies to another device (``x`` in ``x.to(dev)``, ``x.cuda()``,
    ``jax.device_put(x, s)``, ``torch.as_tensor(x, device=d)``); None if it is no transfer."""
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in _TRANSFER_METHODS:
        if func.attr.value != "to" or not _only_dtype(expr, ctx):
            return func.value
    positional = [a.value for a in expr.args if a.keyword is None and a.star == ""]
    if not positional:
        return None
    if ctx.qualified_name(func) in _PLACEMENT_FUNCTIONS:
        return positional[0]
    if any(a.keyword is not None and a.keyword.value in _PLACEMENT_KEYWORDS for a in expr.args):
        return positional[0]
    return None


def _only_dtype(call: cst.Call, ctx: FileContext) -> bool:
    """``x.to(torch.float16)``, ``x.to(dtype=...)``, ``x.to()``: a conversion, not a transfer."""
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == "device":
                return False
            continue
        name = ctx.qualified_name(arg.value) or ""
        if not (name.startswith("torch.") and name != "torch.device"):
            return False
    return True


def _bindings(repeat: Repeat, sources: list[cst.BaseExpression], value: cst.BaseExpression,
              ctx: FileContext) -> dict[str, str]:
    first, second = sources[repeat.first], sources[repeat.second]
    first_text, second_text = _short(ctx.code(first)), _short(ctx.code(second))
    if " ".join(ctx.code(first).split()) == " ".join(ctx.code(second).split()):
        what = (f"`{first_text}` is transferred twice on every run (elements {repeat.first + 1} and "
                f"{repeat.second + 1}) and the first copy is thrown away")
        fix = (f"list `{first_text}` once among the transferred values and once in the target" if first_text == repeat.name
               else f"list `{first_text}` once among the transferred values and `{repeat.name}` once in the target")
    else:
        what = (f"the transfer of `{first_text}` (element {repeat.first + 1}) is thrown away and "
                f"`{repeat.name}` holds `{second_text}` (element {repeat.second + 1})")
        fix = f"give element {repeat.first + 1} its own name, or drop `{first_text}` from the transfer if it is not needed"
    return {"X": repeat.name, "CALL": _short(ctx.code(value.func if isinstance(value, cst.Call) else value)),
            "WHAT": what, "FIX": fix}


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
