"""Whether a host value is pinned (page-locked), so that a ``non_blocking=True`` copy from it
overlaps: it comes from ``pin_memory=`` anything but a literal no (``True``,
``PIN_MEMORY``) or ``.pin_memory()``, is named so (``pinned``),
is a persistent buffer (an attribute of ``self``: staging buffers are allocated pinned
once), is a basic view or slice of a pinned value, or is what an in-place copy into one
returns (``buf.copy_(x)``). Advanced indexing (``buf[idx]``) makes a new, pageable tensor.

Whether a host value is known to be pageable, so that a ``non_blocking=True`` copy from it
still blocks: ``torch.tensor(...)``, ``torch.from_numpy(...)`` or another factory given no
``pin_memory``, ``.cpu()`` or ``.numpy()``, a gathered copy (``x[idx]``) or a view of such a
value. A value handed in or read from another object may be either: unknown, not pageable."""

from __future__ import annotations

import re

import libcst as cst

from ..base import FileContext
from ..imports import dotted_name
from .locations import DEPTH, keyword, last_value

_PINNED_NAMES = re.compile(r"(?i)(?<![a-z])pinned(?![a-z])")
# Methods whose result shares its receiver's memory.
_VIEWS = frozenset("view view_as reshape flatten narrow select squeeze unsqueeze detach permute transpose t expand".split())
# In-place copies return their receiver.
_IN_PLACE_COPIES = frozenset({"copy_"})
# ``torch`` factories whose result is new host memory unless ``pin_memory`` or a device says otherwise.
_HOST_FACTORIES = frozenset(
    "tensor as_tensor from_numpy frombuffer zeros ones empty full arange linspace rand randn randint".split()
)
# Methods whose result is new, pageable host memory.
_PAGEABLE_METHODS = frozenset({"cpu", "numpy"})


def is_pinned(expr: cst.CSTNode, ctx: FileContext, depth: int = 0) -> bool:
    """Whether ``expr`` is known (or, for a persistent buffer, presumed) to be pinned host memory."""
    if depth > DEPTH:
        return False
    if isinstance(expr, cst.Attribute) and (dotted_name(expr) or "").startswith("self."):
        return True
    if isinstance(expr, (cst.Name, cst.Attribute)) and _PINNED_NAMES.search(ctx.code(expr)):
        return True
    if isinstance(expr, cst.Subscript):
        return _basic_index(expr) and is_pinned(expr.value, ctx, depth + 1)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "pin_memory":
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in _VIEWS | _IN_PLACE_COPIES:
            return is_pinned(func.value, ctx, depth + 1)
        # ``pin_memory=PIN_MEMORY`` (``is_pin_memory_available()``) asks for pinned memory
        # wherever the platform has it: only a literal no is no.
        pin = keyword(expr, "pin_memory")
        return pin is not None and ctx.code(pin).strip() not in ("False", "None", "0")
    if isinstance(expr, cst.Name):
        value = last_value(expr, ctx)
        return value is not None and is_pinned(value, ctx, depth + 1)
    return False


def is_pageable(expr: cst.CSTNode, ctx: FileContext, depth: int = 0) -> bool:
    """Whether ``expr`` is known to be pageable host memory (see the module docstring)."""
    if depth > DEPTH:
        return False
    if isinstance(expr, cst.Subscript):
        return is_pageable(expr.value, ctx, depth + 1)  # a view of pageable memory, or a gathered copy
    if isinstance(expr, cst.Name):
        value = last_value(expr, ctx)
        return value is not None and is_pageable(value, ctx, depth + 1)
    if not isinstance(expr, cst.Call) or keyword(expr, "pin_memory") is not None:
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in _PAGEABLE_METHODS and not expr.args:
        return True
    if isinstance(func, cst.Attribute) and func.attr.value in _VIEWS:
        return is_pageable(func.value, ctx, depth + 1)
    qualified = ctx.qualified_name(func) or dotted_name(func) or ""
    return qualified.startswith("torch.") and qualified[6:] in _HOST_FACTORIES and keyword(expr, "device") is None


def _basic_index(subscript: cst.Subscript) -> bool:
    """Indexed by slices and integer literals only: a view, not a gathered copy."""
    return all(
        isinstance(element.slice, cst.Slice)
        or (isinstance(element.slice, cst.Index) and isinstance(element.slice.value, cst.Integer))
        for element in subscript.slice
    )
