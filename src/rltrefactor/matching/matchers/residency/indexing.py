"""Index tensors that select what a slice would: ``x[:, torch.arange(s, e)]``.

An ``arange`` with step 1 whose bounds are not device tensors, used as the only
non-slice index of a subscript (directly, or through a name bound once and used only
so), selects the same elements as ``x[:, s:e]``, but through an index allocation and an
advanced-indexing kernel. Combined with another index tensor (``x[torch.arange(n), idx]``)
it picks one element per row, which no slice does.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import subtree
from ..options import Option
from .allocation import binds_name
from .tensor_values import is_device_tensor


class ArangeIndexForSlice:
    """``x[:, torch.arange(start, end)]``: an index tensor where the slice ``x[:, start:end]`` selects the same elements."""

    reach = MatcherReach(reads="function")
    prefilter: Prefilter = ("arange(",)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            if not _contiguous_arange(call, ctx):
                continue
            parent = ctx.parent(call)
            if isinstance(parent, cst.Index) and _sole_tensor_index(parent, ctx):
                yield Match(call, {"X": ctx.code(call)})
            elif isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
                name = parent.targets[0].target.value
                function = ctx.enclosing_function(parent)
                uses = _uses(function, name, parent) if function is not None else []
                if uses and all(_sole_tensor_index(use, ctx) for use in uses):
                    yield Match(call, {"X": name})


def _contiguous_arange(call: cst.Call, ctx: FileContext) -> bool:
    """``torch.arange(end)`` or ``torch.arange(start, end)`` (step 1) of values not known to be device tensors."""
    if ctx.qualified_name(call.func) != "torch.arange":
        return False
    positional = [a.value for a in call.args if a.keyword is None and a.star == ""]
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    if not 1 <= len(positional) <= 2 or keywords - {"device", "dtype"} or any(a.star for a in call.args):
        return False
    return not any(is_device_tensor(bound, ctx) for bound in positional)


def _uses(function: cst.FunctionDef, name: str, binding: cst.Assign) -> list[cst.CSTNode]:
    """Every read of ``name`` in ``function`` other than in ``binding``; empty when ``name`` is bound twice."""
    bound = [n for n in subtree(function.body) if isinstance(n, cst.AssignTarget) and binds_name(n.target, name)]
    if len(bound) != 1:
        return []
    held = set(map(id, subtree(binding)))
    return [n for n in subtree(function.body) if isinstance(n, cst.Name) and n.value == name and id(n) not in held]


def _sole_tensor_index(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` (or the ``Index`` holding it) is the one non-slice index of a subscript: ``x[:, :, node]``."""
    index = node if isinstance(node, cst.Index) else ctx.parent(node)
    if not isinstance(index, cst.Index):
        return False
    element = ctx.parent(index)
    subscript = ctx.parent(element) if element is not None else None
    if not isinstance(element, cst.SubscriptElement) or not isinstance(subscript, cst.Subscript):
        return False
    return all(
        other is element or isinstance(other.slice, cst.Slice)
        or (isinstance(other.slice, cst.Index) and isinstance(other.slice.value, cst.Ellipsis))
        for other in subscript.slice
    )
