"""Long-lived caches keyed by an object's identity while nothing keeps the object alive.

``id(x)`` is unique only among objects alive at the same time (Python ``id()`` docs),
and ``x.data_ptr()`` only among tensors whose storage is alive: once ``x`` dies, a new
object (or a new tensor in the freed memory, which the caching allocator hands out
again at once) gets the same key, and the cache returns the dead object's entry. A cache
on ``self`` or at module level outlives the objects it is keyed by unless it holds them.

The key is an identity when it is ``id(x)``, ``x.data_ptr()`` or a tuple of those and
``x``'s own metadata (``x.shape``, ``x.dtype``, ``x._version``), directly or through a
local name. ``x`` is held when the value stored holds it (``cache[id(x)] = (x, y)``, a
``weakref.ref(x)`` to check against), when ``x`` is read from ``self`` (``self.weight``,
a loop over ``self.kv_caches``) or stored on ``self`` by the same function, or when the
cache is a ``weakref.WeakKeyDictionary``/``WeakValueDictionary``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, own_nodes
from ..context import bound_before, bound_names, subtree, unpacked
from ..imports import dotted_name
from ..options import Option

# Metadata of the keyed object that may sit beside its identity in a key.
_METADATA = frozenset({"shape", "dtype", "device", "_version", "stride", "size", "numel", "storage_offset", "layout", "ndim"})
_STORING_METHODS = frozenset({"append", "add", "extend", "insert", "setdefault", "update"})
_REFERENCES = frozenset({"weakref.ref", "weakref.proxy", "weakref.WeakMethod"})


class CacheKeyedByObjectIdentity:
    """``self.cache[id(x)] = y`` while nothing holds ``x``: a new object reuses the key."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (re.compile(r"\bid\s*\("), re.compile(r"data_ptr\s*\("))

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for cache, key, value, node in _cache_writes(ctx):
            function = ctx.enclosing_function(node)
            keyed = _identity_of(key, ctx, 0)
            if function is None or keyed is None or not _long_lived(cache, node, ctx):
                continue
            if _holds(value, keyed, ctx) or _held_elsewhere(keyed, function, ctx) or _managed_cache(cache, ctx):
                continue
            yield Match(node, {"CACHE": ctx.code(cache), "KEY": ctx.code(key), "OBJECT": ctx.code(keyed)})


def _cache_writes(ctx: FileContext) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression, cst.BaseExpression, cst.CSTNode]]:
    """``(cache, key, value, statement)`` of ``cache[key] = value`` and ``cache.setdefault(key, value)``."""
    for assign in ctx.nodes(cst.Assign):
        for target in assign.targets:
            item = target.target
            if isinstance(item, cst.Subscript) and len(item.slice) == 1 and isinstance(item.slice[0].slice, cst.Index):
                yield item.value, item.slice[0].slice.value, assign.value, assign
    for call in ctx.nodes(cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "setdefault" and len(call.args) == 2:
            yield call.func.value, call.args[0].value, call.args[1].value, call


def _identity_of(key: cst.BaseExpression, ctx: FileContext, depth: int) -> cst.BaseExpression | None:
    """The object whose identity ``key`` is, when ``key`` holds nothing else about it."""
    if isinstance(key, cst.Call) and isinstance(key.func, cst.Name) and key.func.value == "id" and len(key.args) == 1:
        return key.args[0].value
    if isinstance(key, cst.Call) and isinstance(key.func, cst.Attribute) and key.func.attr.value == "data_ptr" and not key.args:
        return key.func.value
    if isinstance(key, cst.Tuple) and key.elements:
        found = [_identity_of(e.value, ctx, depth) for e in key.elements]
        objects = {ctx.code(f) for f in found if f is not None}
        first = next((f for f in found if f is not None), None)
        if first is not None and len(objects) == 1 and all(f is not None or _metadata_of(e.value, first, ctx) for f, e in zip(found, key.elements)):
            return first
        return None
    if isinstance(key, cst.Name) and depth == 0:
        bound = bound_before(key, ctx)
        return _identity_of(bound, ctx, depth + 1) if bound is not None else None
    return None


def _metadata_of(expr: cst.BaseExpression, keyed: cst.BaseExpression, ctx: FileContext) -> bool:
    """``x.shape``, ``x.stride()``, ``tuple(x.shape)`` for the keyed ``x``."""
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Name) and len(expr.args) == 1:
            return _metadata_of(expr.args[0].value, keyed, ctx)
        expr = expr.func
    return isinstance(expr, cst.Attribute) and expr.attr.value in _METADATA and ctx.code(expr.value) == ctx.code(keyed)


def _long_lived(cache: cst.BaseExpression, node: cst.CSTNode, ctx: FileContext) -> bool:
    """An attribute of ``self`` (or an item of one), or a name no enclosing function binds
    (a closure's dictionary lives only as long as the call that made it)."""
    root = cache
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    if not isinstance(root, cst.Name):
        return False
    if root.value == "self":
        return cache is not root
    functions = [a for a in ctx.ancestors(node) if isinstance(a, cst.FunctionDef)]
    return bool(functions) and all(root.value not in bound_names(f) for f in functions)


def _holds(value: cst.BaseExpression, keyed: cst.BaseExpression, ctx: FileContext, *, weak: bool = True) -> bool:
    """``value`` keeps a reference to the keyed object: it is the object, holds it as an
    element (``(x, y)``, ``{"t": x}``), or hands it to a constructor (``Entry(x, y)``) or,
    with ``weak``, to ``weakref.ref(x)`` (an entry that can tell its object died). A call
    that only reads it (``torch.empty_like(x)``) does not."""
    if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)) and ctx.code(value) == ctx.code(keyed):
        return True
    if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
        return any(_holds(e.value, keyed, ctx, weak=weak) for e in value.elements)
    if isinstance(value, cst.Dict):
        return any(isinstance(e, cst.DictElement) and _holds(e.value, keyed, ctx, weak=weak) for e in value.elements)
    if isinstance(value, cst.Call):
        name = ctx.qualified_name(value.func) or dotted_name(value.func) or ""
        # A class called (a capitalised name) keeps its arguments.
        if name in _REFERENCES and weak or name not in _REFERENCES and name.rpartition(".")[2][:1].isupper():
            return any(_holds(a.value, keyed, ctx, weak=weak) for a in value.args)
    return False


def _held_elsewhere(keyed: cst.BaseExpression, function: cst.FunctionDef, ctx: FileContext) -> bool:
    """``self`` holds the keyed object: it is read from ``self``, or the function stores it there."""
    if _from_self(keyed):
        return True
    if isinstance(keyed, cst.Name):
        bound = bound_before(keyed, ctx)
        if bound is not None and _from_self(bound):
            return True
        for node in own_nodes(function.body):
            if isinstance(node, (cst.For, cst.CompFor)) and any(isinstance(t, cst.Name) and t.value == keyed.value for t in unpacked(node.target)):
                if any(_from_self(n) for n in subtree(node.iter) if isinstance(n, cst.Attribute)):
                    return True
    return any(_stores(node, keyed, ctx) for node in own_nodes(function.body))


def _from_self(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return isinstance(expr, cst.Name) and expr.value == "self"


def _stores(node: cst.CSTNode, keyed: cst.BaseExpression, ctx: FileContext) -> bool:
    """``self.x = keyed``, ``self.items.append(keyed)``: the object lives on in ``self``
    (a weak reference does not keep it)."""
    if isinstance(node, cst.Assign) and any(_from_self(t.target) and not isinstance(t.target, cst.Name) for t in node.targets):
        return _holds(node.value, keyed, ctx, weak=False)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _STORING_METHODS:
        stored = node.args[1:] if node.func.attr.value == "setdefault" else node.args  # not the key
        return _from_self(node.func.value) and any(_holds(a.value, keyed, ctx, weak=False) for a in stored)
    return False


def _managed_cache(cache: cst.BaseExpression, ctx: FileContext) -> bool:
    """The file builds this cache as a ``WeakKeyDictionary``/``WeakValueDictionary``, or
    removes entries one by one (``cache.pop(key)``, ``del cache[key]``): each entry's
    lifetime is managed with its object's."""
    name = cache.attr.value if isinstance(cache, cst.Attribute) else cache.value if isinstance(cache, cst.Name) else None
    if name is None:
        return False
    word = re.escape(name)
    weak = rf"\b{word}\s*(?::[^=\n]*)?=\s*(?:\w+\.)*Weak(?:Key|Value)Dictionary\b"
    removed = rf"\b{word}\.pop\s*\(|\bdel\s+[\w.]*\b{word}\["
    return re.search(f"{weak}|{removed}", ctx.model.text) is not None
