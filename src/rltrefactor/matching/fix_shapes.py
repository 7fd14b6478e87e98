"""Fixes fitted to the shape of the flagged code, where a rule's one fix would mislead.

``host-to-device-copy-per-call`` fixes a list of host values uploaded every step with a
persistent pinned staging buffer. One Python number made into a tensor per call
(``torch.tensor(n).to(dev)``, ``torch.tensor(5, device=d)``) needs none: ops and kernels
take Python numbers as arguments, which travel with the launch. The engine asks here for
each hit (``Hit.fix``); an empty answer keeps the rule's fix.
"""

from __future__ import annotations

from typing import Callable, Mapping

import libcst as cst

from .matchers.base import FileContext
from .matchers.residency.scalar_writes import python_int, python_number
from .rule_findings import quoted

_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
_PLACEMENTS = frozenset({"to", "cuda", "npu", "xpu"})

# A literal number: the same on every call.
_CONSTANT_FIX = (
    "Pass `{value}` to the op or kernel as a Python number (`x + {value}`, `torch.where(mask, x, {value})`), "
    "which travels with the launch; if a tensor must hold it, build that tensor once outside the per-call code."
)
# A number computed per call on the host (a length, a size, a count).
_COMPUTED_FIX = (
    "Pass `{value}` to the op or kernel as a Python number (`x + {value}`, `t.fill_({value})`), which travels "
    "with the launch; if a tensor must hold it, compute it on the device from the tensors it derives from."
)


def _scalar_upload_fix(node: cst.CSTNode, ctx: FileContext) -> str:
    value = _uploaded_value(node, ctx)
    if value is None or not (python_number(value, ctx) or python_int(value, ctx)):
        return ""
    template = _CONSTANT_FIX if _literal(value) else _COMPUTED_FIX
    return template.format(value=quoted(ctx.code(value).strip()))


def _uploaded_value(node: cst.CSTNode, ctx: FileContext) -> cst.BaseExpression | None:
    """The first argument of the tensor factory the flagged upload builds from, if it has one:
    ``torch.tensor(V, device=d)``, ``torch.tensor(V).to(d)`` (``.cuda()``, ...), ``t.new_tensor(V)``;
    the one element of ``[V]`` or ``(V,)``."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in _PLACEMENTS and isinstance(func.value, cst.Call):
        node, func = func.value, func.value.func
    is_factory = ctx.qualified_name(func) in _FACTORIES or (isinstance(func, cst.Attribute) and func.attr.value == "new_tensor")
    positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
    if not is_factory or not positional:
        return None
    value = positional[0]
    # ``[n]``: one number in a list or tuple is still one number to upload.
    if isinstance(value, (cst.List, cst.Tuple)) and len(value.elements) == 1 and isinstance(value.elements[0], cst.Element):
        return value.elements[0].value
    return value


def _literal(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.UnaryOperation):
        return _literal(value.expression)
    return isinstance(value, (cst.Integer, cst.Float)) or (isinstance(value, cst.Name) and value.value in ("True", "False"))


# Rule id -> what picks a fix for the flagged node ("" keeps the rule's own).
SHAPED_FIXES: Mapping[str, Callable[[cst.CSTNode, FileContext], str]] = {
    "host-to-device-copy-per-call": _scalar_upload_fix,
}


def shaped_fix(rule_id: str, node: cst.CSTNode, ctx: FileContext) -> str:
    """The fix for this shape of ``rule_id``'s flagged ``node``; "" where the rule's fix stands."""
    pick = SHAPED_FIXES.get(rule_id)
    return pick(node, ctx) if pick is not None else ""
