"""Device-residency matcher for a host read of a non-blocking download before any wait.

A *download* is ``y = x.to(<host device>, non_blocking=True)`` of a value not known to
be on the host already, or ``buf.copy_(x, non_blocking=True)`` into a host buffer from a
value not known to be on the host. Either returns before the data has arrived (torch
pins the destination of a non-blocking ``.to("cpu")``). Reading the result on the host
(``.item()``, ``.tolist()``, ``.numpy()``, indexing, ``int()``/``float()``/``bool()``,
``print``/``str``/an f-string) later in the same function, with no wait in between, can
see stale data.

A wait is any call that may block the host until the copy is done: ``.synchronize()``
of anything (device, stream, event), ``.wait_event``/``.wait_stream``/``.wait()``, a
blocking ``.cpu()``, ``.to(<host>)`` or ``.copy_`` into host memory, or ``.item()`` of
another value not known to be on the host (it waits for its stream). Counting a call
that only orders device work (``wait_event``) as a wait leaves findings out, never adds
one. A slice is a view, not a read; a download the function returns is its caller's to
wait for. Order is source order within the function; code in nested functions and
lambdas runs at another time and is not read. The first read after each download is
reported, naming the copying line; rebinding the name ends its download.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match, own_nodes
from ..imports import dotted_name
from ..options import Option
from .locations import on_host, shown_on_host

_WAITS = frozenset({"synchronize", "wait_event", "wait_stream", "wait", "cpu"})
_READ_METHODS = frozenset({"item", "tolist", "numpy"})
_READ_FUNCTIONS = frozenset({"int", "float", "bool", "print", "str", "repr", "list"})


@dataclass
class _Download:
    name: str  # the host value, as the function spells it ("host_ids", "self.buf")
    copy: cst.Call


class NonBlockingDownloadReadBeforeSync:
    """A host read of a non-blocking download's result before anything waits for the copy."""

    reach = MatcherReach(reads="function")  # the download, the waits and the read lie in one function
    prefilter: Prefilter = ("non_blocking",)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for function in ctx.nodes(cst.FunctionDef):
            yield from _reads_in(function, ctx)


def _reads_in(function: cst.FunctionDef, ctx: FileContext) -> Iterator[Match]:
    pending: dict[str, _Download] = {}
    for node in own_nodes(function.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                pending.pop(dotted_name(target.target) or "", None)  # rebound: the old download is gone
            download = _download(node.value, ctx)
            name = dotted_name(node.targets[0].target) if len(node.targets) == 1 else None
            if download is not None and name is not None:
                pending[name] = _Download(name, download)
        elif isinstance(node, cst.Call):
            into = _download_into(node, ctx)
            if into is not None and not _returned(node, ctx):
                pending[into] = _Download(into, node)
            elif _waits(node, pending, ctx):
                pending.clear()
        if pending:
            read = _read_of(node, pending)
            if read is not None:
                found = pending.pop(read)
                yield Match(node, {"X": found.name, "COPY": _short(ctx.code(found.copy)),
                                   "COPY_LINE": str(ctx.span(found.copy).line), "READ": _short(ctx.code(node))})


def _non_blocking(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value == "non_blocking" and isinstance(a.value, cst.Name)
               and a.value.value == "True" for a in call.args)


def _download(value: cst.BaseExpression, ctx: FileContext) -> cst.Call | None:
    """``x.to(<host>, non_blocking=True)`` of a value not known to be on the host."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to"):
        return None
    if not _non_blocking(value) or not shown_on_host(value, ctx) or on_host(value.func.value, ctx):
        return None
    return value


def _download_into(call: cst.Call, ctx: FileContext) -> str | None:
    """The host buffer ``buf`` of ``buf.copy_(x, non_blocking=True)`` from a value not known on the host."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "copy_" and call.args and _non_blocking(call)):
        return None
    if not shown_on_host(func.value, ctx) or on_host(call.args[0].value, ctx):
        return None
    return dotted_name(func.value)


def _waits(call: cst.Call, pending: dict[str, _Download], ctx: FileContext) -> bool:
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    method = func.attr.value
    if method in _WAITS:
        return True
    if method in ("to", "copy_") and not _non_blocking(call) and _blocking_download(call, func, ctx):
        return True  # a blocking copy to the host waits for the stream, and the download before it
    # ``.item()`` of a device value waits for its stream; of a pending download it is the read.
    return method == "item" and _root_name(func.value) not in pending and not on_host(func.value, ctx)


def _blocking_download(call: cst.Call, func: cst.Attribute, ctx: FileContext) -> bool:
    """``x.to(<host>)`` or ``buf.copy_(x)`` into host memory, of a value not known on the host."""
    if func.attr.value == "to":
        return shown_on_host(call, ctx) and not on_host(func.value, ctx)
    return bool(call.args) and shown_on_host(func.value, ctx) and not on_host(call.args[0].value, ctx)


def _returned(node: cst.CSTNode, ctx: FileContext) -> bool:
    """The node is part of a ``return``: what it makes is the caller's to wait for."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Return):
            return True
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
    return False


def _root_name(expr: cst.BaseExpression) -> str | None:
    """``y`` for ``y``, ``y[0]``, ``y[0].view(-1)``; ``self.buf`` for ``self.buf[:n]``."""
    while True:
        name = dotted_name(expr)
        if name is not None:
            return name
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value not in _READ_METHODS:
            expr = expr.func.value
        else:
            return None


def _read_of(node: cst.CSTNode, pending: dict[str, _Download]) -> str | None:
    """The pending download ``node`` reads on the host, if it reads one."""
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _READ_METHODS:
            root = _root_name(func.value)
            return root if root in pending else None
        if isinstance(func, cst.Name) and func.value in _READ_FUNCTIONS and node.args:
            root = _root_name(node.args[0].value)
            return root if root in pending else None
    if isinstance(node, cst.Subscript) and not all(isinstance(e.slice, cst.Slice) for e in node.slice):
        root = _root_name(node.value)  # a slice is a view: taking one reads nothing
        return root if root in pending else None
    if isinstance(node, cst.FormattedStringExpression):
        root = _root_name(node.expression)
        return root if root in pending else None
    return None


def _short(text: str, limit: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
