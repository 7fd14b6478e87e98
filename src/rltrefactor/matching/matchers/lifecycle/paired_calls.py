"""The two halves of a paired operation in one function: which call releases, which
earlier call it undoes, and the statements between them.

A release is a call whose value is dropped, on an owner that holds a resource of its
own (not ``self``, whose methods are the object's own operations, nor a local that dies
with the frame). Its acquire is the nearest call before it on the same owner, in a block
that holds the release directly or through ``try``/``with`` bodies, that the file shows
to pair with it (``mined_pairs``), that a container's free list pairs (``h = x.pop()``
... ``x.append(h)``), or that a lock or semaphore the file builds pairs; and the two are
tied: the release takes the handle the acquire returned, both take the same first
argument, or neither takes one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from ..base import FileContext, own_nodes
from ..context import bound_names, parameter_names, statement_and_block, subtree
from ..imports import dotted_name

# Python's free list: what ``take`` removed from a container comes back through ``give``.
_TAKES = frozenset({"pop", "popleft", "get_nowait"})
GIVES = frozenset({"append", "appendleft", "add", "put_nowait"})


@dataclass(frozen=True)
class Half:
    """One call of a pair."""

    call: cst.Call
    name: str  # the method or function name
    owner: str  # the receiver's text ("self.pool"); "" for a plain function


def half_of(call: cst.Call) -> Half | None:
    """``call`` as a half: ``owner.name(...)`` or ``name(...)``; None for any other callee."""
    func = call.func
    if isinstance(func, cst.Attribute):
        owner = dotted_name(func.value)
        return Half(call, func.attr.value, owner) if owner is not None else None
    if isinstance(func, cst.Name):
        return Half(call, func.value, "")
    return None


def lock_release(release: Half, ctx: FileContext) -> bool:
    """``owner.release()`` of a lock or semaphore the file builds (``threading``,
    ``asyncio``, ``multiprocessing``): the standard library pairs it with ``acquire``."""
    return release.name == "release" and builds_lock(release.owner, ctx)


def builds_lock(owner: str, ctx: FileContext) -> bool:
    """The file assigns a lock or semaphore to ``owner``'s last name."""
    if not owner:
        return False
    last = re.escape(owner.rpartition(".")[2])
    lock = r"(?:Lock|RLock|Semaphore|BoundedSemaphore|Condition)"
    built = re.compile(rf"\b{last}\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?{lock}\s*\(")
    return built.search(ctx.model.text) is not None


def dropped(call: cst.Call, ctx: FileContext) -> bool:
    """The call is a statement of its own (awaited or not): its value is not used."""
    parent = ctx.parent(call)
    if isinstance(parent, cst.Await):
        parent = ctx.parent(parent)
    return isinstance(parent, cst.Expr)


def local_owner(owner: str, function: cst.FunctionDef) -> bool:
    """The owner is a name the function binds itself (not a parameter): it dies with the frame."""
    root = owner.split(".")[0]
    if not root or root in ("self", "cls"):
        return False
    return root in bound_names(function) and root not in parameter_names(function)


def released_in_finally(function: cst.FunctionDef, release: Half) -> bool:
    """Some ``finally`` of the function makes the same release."""
    return any(isinstance(n, cst.Try) and n.finalbody is not None and calls(n.finalbody, release)
               for n in own_nodes(function.body))


@dataclass(frozen=True)
class Between:
    """The statements between an acquire and its release, in source order: those after
    the acquire in its block, then those before the release in each ``try``/``with``
    body that holds the release."""

    between: tuple[cst.BaseStatement, ...]
    handle: str | None  # the name the acquire's result is bound to


def acquire_before(call: cst.Call, release: Half, pairs: frozenset[tuple[str, str]],
                    ctx: FileContext) -> tuple[Half, Between] | None:
    """The acquire that ``release`` undoes: the nearest call before it on its owner,
    in a block that holds the release directly or through ``try``/``with`` bodies."""
    statement: cst.CSTNode | None = statement_and_block(call, ctx)[0]
    between: list[cst.BaseStatement] = []
    while statement is not None:
        block = ctx.parent(statement)
        if not isinstance(block, cst.IndentedBlock):
            return None
        siblings = list(block.body)
        index = next(i for i, s in enumerate(siblings) if s is statement)
        for earlier in reversed(siblings[:index]):
            acquire = _acquire_in(earlier, release, pairs, ctx)
            if acquire is not None:
                return acquire, Between(tuple(between), _handle(earlier))
            if calls(earlier, release):
                return None  # an earlier release of the same kind: the pairing is not this one
            between.insert(0, earlier)
        holder = ctx.parent(block)
        if not (isinstance(holder, cst.Try) and holder.body is block or isinstance(holder, cst.With)):
            return None  # conditional or repeated release: the author chose when it runs
        statement = holder
    return None


def _handle(statement: cst.BaseStatement) -> str | None:
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
    if isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    return None


def _acquire_in(statement: cst.BaseStatement, release: Half, pairs: frozenset[tuple[str, str]],
                ctx: FileContext) -> Half | None:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    target: cst.BaseExpression | None = None
    if isinstance(small, cst.Expr):
        value = small.value
    elif isinstance(small, cst.Assign) and len(small.targets) == 1:
        value, target = small.value, small.targets[0].target
    else:
        return None
    if isinstance(value, cst.Await):
        value = value.expression
    if not isinstance(value, cst.Call):
        return None
    acquire = half_of(value)
    if acquire is None or acquire.owner != release.owner or acquire.name == release.name:
        return None
    if release.name in GIVES and acquire.name in _TAKES:
        from_an_end = not value.args or len(value.args) == 1 and isinstance(value.args[0].value, cst.Integer) \
            and value.args[0].value.value == "0"
        tied = from_an_end and isinstance(target, cst.Name) and _first_argument(release.call) == target.value
        return acquire if tied else None
    pair = (acquire.name, release.name)
    known = pair in pairs or pair == ("acquire", "release") and lock_release(release, ctx)
    return acquire if known and _tied(acquire, target, release) else None


def _tied(acquire: Half, target: cst.BaseExpression | None, release: Half) -> bool:
    """The release takes the acquire's handle, shares its first argument, or neither takes one."""
    if isinstance(target, cst.Name) and any(
        isinstance(n, cst.Name) and n.value == target.value for a in release.call.args for n in subtree(a.value)
    ):
        return True
    first = _first_argument(acquire.call)
    if first is not None and first == _first_argument(release.call):
        return True
    return not acquire.call.args and not release.call.args


def _first_argument(call: cst.Call) -> str | None:
    """The first positional argument's text, when it names a value (not a literal or a call)."""
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    return dotted_name(call.args[0].value)


def calls(node: cst.CSTNode, half: Half) -> bool:
    return any(
        isinstance(n, cst.Call) and (h := half_of(n)) is not None and (h.owner, h.name) == (half.owner, half.name)
        for n in subtree(node)
    )
