"""Implicit host-device synchronizations that no ``.item()`` spells out.

Python asks a tensor for a truth value (``if not loss.isfinite():``, ``bool(t)``), for an
integer (``int(offsets[-1])``, ``x[:, :idx]``, ``range(n)``) or for an output size it
cannot know without reading device memory (``repeat_interleave`` with tensor repeats):
each is a copy to the host and a wait for the device. These matchers report them where
``tensor_values`` shows the value to be a tensor not known to be on the host, and leave
the reductions ``device-scalar-read-in-hot-path`` already reports (``int(t.sum())``,
``if t.any():``) to it.
"""

from __future__ import annotations

import re
from typing import Any, Callable, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..companions import residency_companions
from ..context import bound_before, comparison_sides, is_cold_condition, truth_conditions
from ..options import Option
from .device import TensorToHostConversion
from .locations import on_device, on_host, shown_on_host
from .tensor_values import is_device_tensor

# What ``device-scalar-read-in-hot-path`` reads: reductions and host-returning comparisons.
_REDUCTIONS = frozenset(TensorToHostConversion.OPTIONS["reductions"].default)
_HOST_RETURNING = frozenset(TensorToHostConversion.OPTIONS["host-returning"].default)


def _reduction(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """A call ``device-scalar-read-in-hot-path`` takes for a device reduction."""
    if not isinstance(expr, cst.Call):
        return False
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _REDUCTIONS:
        return True
    name = ctx.qualified_name(expr.func) or ""
    return name in _HOST_RETURNING or (name.startswith("torch.") and name.rpartition(".")[2] in _REDUCTIONS)


def _holds_reduction(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    if isinstance(expr, cst.Comparison):
        return any(_holds_reduction(side, ctx) for side in comparison_sides(expr))
    if isinstance(expr, cst.BinaryOperation):
        return _holds_reduction(expr.left, ctx) or _holds_reduction(expr.right, ctx)
    return _reduction(expr, ctx)


def _truth_of_tensor(condition: cst.BaseExpression, ctx: FileContext) -> bool:
    """``condition`` is a device tensor whose truth value Python asks for, and no reduction
    of it (reported by the scalar-read rule) is involved."""
    if isinstance(condition, cst.Comparison) and any(_reduction(side, ctx) for side in comparison_sides(condition)):
        return False
    return not _reduction(condition, ctx) and is_device_tensor(condition, ctx)


_BRANCH_TOKEN = re.compile(r"\b(?:if|elif|while)\b")


def _tested_names(text: str) -> set[str]:
    """The names on a token's line and the two after it (a test wrapped over lines): their
    assignments say whether they are tensors."""
    return residency_companions(text.replace("\n", " "))


class DeviceTensorTruthTest:
    """A branch, ``bool()`` or ``torch.is_nonzero`` on a tensor the code shows to be on the device."""

    # Residency and tensor evidence are read from how the tested names were assigned.
    reach = MatcherReach(reads="header", companions=_tested_names, companion_lines="assignments")
    prefilter: Prefilter = (_BRANCH_TOKEN, "bool(", "is_nonzero(")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        kind: type[cst.If | cst.While | cst.IfExp | cst.CompIf]
        for kind in (cst.If, cst.While, cst.IfExp, cst.CompIf):
            for branch in ctx.nodes(kind):
                if is_cold_condition(branch.test):
                    continue  # ``if logger.isEnabledFor(DEBUG) and x.isnan():`` only runs when debugging
                # One branch waits once: its first device condition is reported.
                for condition in truth_conditions(branch.test):
                    if _truth_of_tensor(condition, ctx):
                        yield Match(condition, {"X": ctx.code(condition), "USE": "a branch condition"})
                        break
        for call in ctx.nodes(cst.Call):
            name = ctx.qualified_name(call.func)
            if name not in ("bool", "torch.is_nonzero") or len(call.args) != 1:
                continue
            value = call.args[0].value
            if _truth_of_tensor(value, ctx):
                yield Match(call, {"X": ctx.code(value), "USE": f"`{ctx.code(call.func)}()`"})


# ``int(``, ``float(``, ``range(``, or a colon inside brackets (a slice), over lines too.
_NUMBER_TOKEN = re.compile(r"\b(?:int|float|range)\s*\(|\[(?:[^\[\]:]|\[[^\[\]]*\])*:")


class DeviceTensorAsNumber:
    """``int()``/``float()`` of, ``range()`` over, or a slice bounded by a tensor the code shows to be on the device."""

    # Index-parameter evidence reads uses anywhere in the function; hits are the token's call or slice.
    reach = MatcherReach(reads="function", hits_at_tokens=True)
    prefilter: Prefilter = (_NUMBER_TOKEN,)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            name = ctx.qualified_name(call.func)
            if name in ("int", "float") and len(call.args) == 1:
                value = call.args[0].value
                if not _holds_reduction(value, ctx) and self._reported(value, ctx):
                    yield Match(call, {"X": ctx.code(value), "USE": f"`{name}()`"})
            elif name == "range":
                bound = next((a.value for a in call.args if self._reported(a.value, ctx)), None)
                if bound is not None:
                    yield Match(bound, {"X": ctx.code(bound), "USE": "`range()`"})
        for piece in ctx.nodes(cst.Slice):
            bound = next((b for b in (piece.lower, piece.upper, piece.step) if b is not None and self._reported(b, ctx)), None)
            if bound is not None:
                yield Match(bound, {"X": ctx.code(bound), "USE": "a slice bound"})

    def _reported(self, value: cst.BaseExpression, ctx: FileContext) -> bool:
        return is_device_tensor(value, ctx)


class RepeatInterleaveWithoutOutputSize:
    """``repeat_interleave`` with tensor repeats and no ``output_size``: the output length is read from the device."""

    reach = MatcherReach(reads="function", hits_at_tokens=True)
    prefilter: Prefilter = ("repeat_interleave",)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            repeats = _repeats(call, ctx)
            if repeats is None or any(a.keyword is not None and a.keyword.value == "output_size" for a in call.args):
                continue
            if is_device_tensor(repeats, ctx):
                yield Match(call, {"R": ctx.code(repeats)})


def _repeats(call: cst.Call, ctx: FileContext) -> cst.BaseExpression | None:
    """The ``repeats`` argument of ``x.repeat_interleave(repeats)`` / ``torch.repeat_interleave(x, repeats)``
    (``torch.repeat_interleave(repeats)`` alone repeats the indices)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "repeat_interleave"):
        return None
    keyword = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "repeats"), None)
    positional = [a.value for a in call.args if a.keyword is None]
    if ctx.qualified_name(func) == "torch.repeat_interleave":
        return keyword or (positional[1] if len(positional) > 1 else positional[0] if positional else None)
    if on_host(func.value, ctx):
        return None
    return keyword or (positional[0] if positional else None)


# Methods whose result is a boolean tensor of their receiver's shape.
_MASK_METHODS = frozenset("isnan isinf isfinite isneginf isposinf logical_and logical_or logical_not logical_xor bool eq ne gt lt ge le isclose".split())
_MASK_OPERATORS = (cst.BitAnd, cst.BitOr, cst.BitXor)
_SUBSCRIPT_WRITE = re.compile(r"\]\s*(?:[-+*/|&^%@]|//|\*\*|<<|>>)?=(?!=)")


def _boolean_mask(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """``expr`` is a boolean tensor on the device, as far as the function shows: a tensor
    comparison, ``~mask``, ``a & b``, ``isnan()``/``logical_*``/``.bool()``, or a name bound to one."""
    return _mask(expr, ctx, on_device_side=True)


def _host_boolean_mask(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """``expr`` is a boolean mask the host holds, as far as the function shows: a comparison
    of a host tensor or array with anything, ``~mask``, ``a & b`` of such, or a name bound
    to one."""
    return _mask(expr, ctx, on_device_side=False)


def _mask_index(
    target: cst.Subscript, is_mask: Callable[[cst.BaseExpression, FileContext], bool], ctx: FileContext,
) -> cst.BaseExpression | None:
    """The first index of ``target`` that ``is_mask`` finds a mask, or None."""
    return next((element.slice.value for element in target.slice
                 if isinstance(element.slice, cst.Index) and is_mask(element.slice.value, ctx)), None)


def _mask(expr: cst.BaseExpression, ctx: FileContext, on_device_side: bool, depth: int = 0) -> bool:
    """The walk both mask questions share: a device mask is one whose comparison or mask
    method the code shows on a tensor not on the host, and ``a & b`` is one where either
    side is; a host mask compares a value the code shows on the host, on both sides of
    ``a & b``."""
    if depth > 4:
        return False
    if isinstance(expr, cst.Comparison):
        if on_device_side:
            return is_device_tensor(expr, ctx)
        return len(expr.comparisons) == 1 and not isinstance(expr.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) \
            and not isinstance(expr.left, (cst.Integer, cst.Float, cst.SimpleString)) and shown_on_host(expr.left, ctx)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return _mask(expr.expression, ctx, on_device_side, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _MASK_OPERATORS):
        left = _mask(expr.left, ctx, on_device_side, depth + 1)
        if left is on_device_side:  # the device side needs one, the host side both
            return left
        return _mask(expr.right, ctx, on_device_side, depth + 1)
    if on_device_side and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _MASK_METHODS:
        return is_device_tensor(expr, ctx)
    if isinstance(expr, cst.Name):
        value = bound_before(expr, ctx)
        return value is not None and _mask(value, ctx, on_device_side, depth + 1)
    return False


class BooleanMaskWrite:
    """``x[mask] = tensor`` or ``x[mask] += v`` with a device boolean mask: a ``nonzero`` over
    the mask, read by the host. ``x[mask] = v``, a number too, with a mask the host holds
    into a tensor the function places on the device: the write waits for the device
    (measured: ``bench/probes/host_mask_reads.py``)."""

    reach = MatcherReach(reads="function", hits_at_tokens=True)
    prefilter: Prefilter = (_SUBSCRIPT_WRITE,)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for assign in ctx.nodes(cst.Assign):
            if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Subscript):
                continue  # only a subscript is written through a mask
            target = assign.targets[0].target
            # ``x[mask] = 0`` (a Python number) with a device mask becomes ``masked_fill_``
            # and does not wait: only a tensor value goes through ``index_put_``, which turns
            # the mask into indices. A mask the host holds waits whatever is written.
            host_masked = self._host_masked(target, ctx)
            if host_masked is not None:
                yield host_masked
            elif is_device_tensor(assign.value, ctx):
                yield from self._masked(target, ctx, "assigning a tensor through it")
        for update in ctx.nodes(cst.AugAssign):
            host_masked = self._host_masked(update.target, ctx)
            if host_masked is not None:
                yield host_masked
            else:
                yield from self._masked(update.target, ctx, "reading it for the update")

    def _host_masked(self, target: cst.BaseExpression, ctx: FileContext) -> Match | None:
        """``x[mask]`` written, ``x`` placed on the device in the function and ``mask`` a
        boolean mask the host holds."""
        if not isinstance(target, cst.Subscript):
            return None
        # The mask first: it is rare, and where the written tensor lives may take the type engine.
        mask = _mask_index(target, _host_boolean_mask, ctx)
        if mask is None or not on_device(target.value, ctx):
            return None
        use = "a mask the host holds, which the write copies to the device and waits for"
        return Match(target, {"X": ctx.code(target), "M": ctx.code(mask), "USE": use})

    def _masked(self, target: cst.BaseExpression, ctx: FileContext, use: str) -> Iterator[Match]:
        if not isinstance(target, cst.Subscript):
            return
        mask = _mask_index(target, _boolean_mask, ctx)
        if mask is not None and not on_host(target.value, ctx):
            yield Match(target, {"X": ctx.code(target), "M": ctx.code(mask), "USE": use})
