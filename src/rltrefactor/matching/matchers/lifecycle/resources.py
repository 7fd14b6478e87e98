"""Lifecycle matchers for what a function acquires: handles it opens, chunks it holds.

A resource created per call must be closed on every path, or handed to an owner that
closes it; per-chunk memory must be dropped before the next chunk is built.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import DEL_KEYWORD, GuardedRegex, Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import subtree
from ..options import Option
from .teardown import del_targets, is_name


# Constructors of resources that hold an OS handle or threads until closed.
RESOURCES = (
    "open", "io.open", "asyncio.new_event_loop", "concurrent.futures.ThreadPoolExecutor",
    "concurrent.futures.ProcessPoolExecutor", "multiprocessing.Pool", "socket.socket",
    "tempfile.NamedTemporaryFile", "tempfile.TemporaryFile",
    "multiprocessing.shared_memory.SharedMemory", "zmq.Context", "zmq.asyncio.Context",
)  # fmt: skip
# Calls that take ownership of what they are given and close it.
_OWNING_CALLS = frozenset({
    "closing", "enter_context", "enter_async_context", "callback", "finalize", "register",
    "append", "add", "setdefault", "set_event_loop", "__init__",
})  # fmt: skip
_CLOSERS = frozenset({"close", "shutdown", "terminate", "cleanup", "__exit__", "aclose", "join", "unlink", "term", "destroy"})


class ResourceWithoutClose:
    """A file, event loop or executor created in a function and never closed there."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {"constructors": Option("strings", RESOURCES, "qualified names of calls that create a resource to close")}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.constructors = frozenset(options["constructors"])
        tails = sorted({name.rpartition(".")[2] for name in self.constructors})
        # Distinctive names as plain strings, so that import aliases of them
        # (``ThreadPoolExecutor as Pool``) become tokens too; short ones as calls.
        self.prefilter: Prefilter = tuple(_token(tail) for tail in tails)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            name = ctx.qualified_name(call.func)
            if name not in self.constructors:
                continue
            function = ctx.enclosing_function(call)
            if function is None:
                continue  # module-level handles live as long as the process
            parent = ctx.parent(call)
            if isinstance(parent, cst.WithItem) or isinstance(parent, cst.Await):
                continue
            if _borrows_descriptor(call):
                continue
            if isinstance(parent, cst.Arg):
                outer = ctx.parent(parent)
                callee = _callee(outer) if isinstance(outer, cst.Call) else ""
                if _takes_ownership(callee):
                    continue
                yield Match(call, {"RESOURCE": ctx.code(call.func), "HOW": "is passed on unnamed, so nothing can close it"})
            elif isinstance(parent, cst.Attribute) and parent.attr.value not in _CLOSERS:
                yield Match(call, {"RESOURCE": ctx.code(call.func), "HOW": f"is used once (`.{parent.attr.value}`) and never closed"})
            elif isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
                local = parent.targets[0].target.value
                if not _handed_over_or_closed(local, function, call) and not _rebinds(local, function, parent, ctx):
                    yield Match(call, {"RESOURCE": ctx.code(call.func), "HOW": f"is bound to `{local}`, which is never closed"})


# ``open(`` on a line that is not ``with open(...)``: most files open only in ``with``.
_BARE_OPEN = GuardedRegex(re.compile(r"^(?![ \t]*(?:async[ \t]+)?with[ \t]+open\b)[^\n]*?open\s*\(", re.MULTILINE), ("open",))


def _token(tail: str) -> "str | re.Pattern[str] | GuardedRegex":
    if tail == "open":
        return _BARE_OPEN
    return tail if len(tail) >= 8 else re.compile(rf"{re.escape(tail)}\s*\(")


def _takes_ownership(callee: str) -> bool:
    """An owner (``enter_context``, a base ``__init__``), or a wrapper class that closes
    what it wraps (``io.TextIOWrapper(f)``, ``Reader(f, close_handle=True)``)."""
    return callee in _OWNING_CALLS or callee.lstrip("_")[:1].isupper()


def _rebinds(local: str, function: cst.FunctionDef, creation: cst.Assign, ctx: FileContext) -> bool:
    """``local`` is a parameter or also holds other values (``err = sys.stderr`` and,
    when debugging, a file): whoever reads it cannot tell whether to close it."""
    params = function.params
    if any(p.name.value == local for p in [*params.params, *params.posonly_params, *params.kwonly_params]):
        return True
    for node in subtree(function.body):
        if isinstance(node, (cst.Assign, cst.AnnAssign)) and node is not creation and node.value is not None:
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(is_name(t, local) for t in targets) and not isinstance(node.value, cst.Call):
                return True
    return False


def _borrows_descriptor(call: cst.Call) -> bool:
    """``open(fd, closefd=False)`` wraps a descriptor someone else owns."""
    return any(a.keyword is not None and a.keyword.value == "closefd" for a in call.args)


def _callee(call: cst.Call) -> str:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def _handed_over_or_closed(local: str, function: cst.FunctionDef, creation: cst.Call) -> bool:
    """Whether ``local`` is closed (``local.close``, even passed as a callback), used
    as a context manager, returned, yielded, stored elsewhere or given to an owner."""
    for node in subtree(function.body):
        if isinstance(node, cst.Attribute) and is_name(node.value, local) and node.attr.value in _CLOSERS:
            return True
        if isinstance(node, cst.WithItem) and is_name(node.item, local):
            return True
        if isinstance(node, (cst.Return, cst.Yield)) and node.value is not None and any(is_name(n, local) for n in _unpacked(node.value)):
            return True
        if isinstance(node, cst.Assign) and is_name(node.value, local):
            return True  # ``self.loop = loop``: its owner closes it
        if isinstance(node, cst.Assign) and any(isinstance(t.target, cst.Attribute) for t in node.targets):
            if any(is_name(n, local) for n in subtree(node.value)):
                return True  # ``self.sock = ctx.socket()``: it lives on in what it made
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value == local for n in node.names):
            return True
        if isinstance(node, cst.Call) and _takes_ownership(_callee(node)) and any(is_name(a.value, local) for a in node.args):
            return True
    return False


def _unpacked(value: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The value itself, or the elements of a returned tuple/list."""
    if isinstance(value, (cst.Tuple, cst.List)):
        yield from (element.value for element in value.elements)
    else:
        yield value


# Names of items large enough that holding two at once matters.
_BULKY = re.compile(r"chunk|bucket|batch|shard|tensor|weight|param|buffer|layer|state_dict", re.IGNORECASE)


class ChunkKeptAliveByLoopVariable:
    """``for chunk in make_chunks(): out = send(chunk); del out``: the loop variable still
    holds the chunk while the next one is built."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        # ``del`` of plain names only: far rarer than loops over tensors or ``del d[k]``.
        self.prefilter: Prefilter = (re.compile(DEL_KEYWORD + r"\s+\w+\s*(?:,\s*\w+\s*)*(?:#[^\n]*)?$", re.MULTILINE),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for statement in ctx.nodes(cst.Del):
            line = ctx.parent(statement)
            block = ctx.parent(line) if line is not None else None
            loop = ctx.parent(block) if block is not None else None
            if not (isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and isinstance(loop.target, cst.Name)):
                continue
            chunk = loop.target.value
            if not _BULKY.search(f"{chunk} {ctx.code(loop.iter.func)}"):
                continue  # nothing says an item is large enough for two to matter
            deleted = {t.value for t in del_targets(statement.target) if isinstance(t, cst.Name)}
            if not deleted or chunk in deleted or _deletes(loop.body, chunk):
                continue
            derived = _derived_from(loop.body, chunk)
            if deleted & derived:
                yield Match(statement, {"CHUNK": chunk, "DELETED": ", ".join(sorted(deleted)), "SOURCE": ctx.code(loop.iter.func)})


def _deletes(body: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Del) and any(is_name(t, name) for t in del_targets(n.target)) for n in subtree(body))


def _derived_from(body: cst.CSTNode, chunk: str) -> set[str]:
    """Names the loop body assigns from a call that is given ``chunk``."""
    names: set[str] = set()
    for node in subtree(body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            if any(is_name(n, chunk) for a in node.value.args for n in subtree(a.value)):
                for target in node.targets:
                    names.update(n.value for n in subtree(target.target) if isinstance(n, cst.Name))
    return names


# How far after the last ``except`` line a release is read (the prefilter's window).
_NEAR_HANDLER = 20
# Verbs of calls that give back what a region used.
RELEASE_VERBS = (
    "close", "release", "free", "cleanup", "shutdown", "unlock", "unpin", "deallocate",
    "destroy", "teardown", "terminate", "disconnect", "unregister",
)  # fmt: skip


class CleanupAfterTryNotInFinally:
    """``try: use(x) except E: ...; raise`` then ``x.close()``: the exit path skips the cleanup."""

    reach = MatcherReach(reads="function")
    OPTIONS: ClassVar[dict[str, Option]] = {"release-verbs": Option("strings", RELEASE_VERBS, "words of method names that release")}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.verbs = frozenset(options["release-verbs"])
        verbs = "|".join(sorted(self.verbs))
        # A release call near an ``except`` line (each alone is everywhere); the matcher
        # reads releases that close to the last handler only, so nothing is hidden.
        release = re.compile(rf"\.(?:\w*_)?(?:{verbs})(?:_\w*)?\s*\(", re.IGNORECASE)
        self.prefilter: Prefilter = (GuardedRegex(release, ("except",), context=_NEAR_HANDLER),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for statement in ctx.nodes(cst.Try):
            if statement.finalbody is not None:
                continue
            exit_kind = _handler_exit(statement)
            block = ctx.parent(statement)
            if exit_kind is None or not isinstance(block, (cst.IndentedBlock, cst.Module)):
                continue
            siblings = list(block.body)
            index = siblings.index(statement)
            before = siblings[index - 1] if index > 0 else None
            last_handler = ctx.span(statement.handlers[-1]).line
            for later in siblings[index + 1 : index + 4]:
                if not isinstance(later, cst.SimpleStatementLine) or ctx.span(later).line - last_handler > _NEAR_HANDLER:
                    break
                call = self._release_of_region(later, statement, before, ctx)
                if call is not None:
                    yield Match(call, {"CALL": ctx.code(call.func), "EXIT": exit_kind})
                    break

    def _release_of_region(
        self, line: cst.CSTNode, region: cst.Try, before: cst.CSTNode | None, ctx: FileContext
    ) -> cst.Call | None:
        for node in subtree(line):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                if not set(node.func.attr.value.lower().split("_")) & self.verbs:
                    continue
                owner = ctx.code(node.func.value)
                if owner in ("self", "cls") or _managed(owner, region, ctx):
                    continue  # ``self`` is no evidence of a region; a ``with`` releases anyway
                if any(_calls_on(h.body, owner, node.func.attr.value, ctx) for h in region.handlers):
                    continue  # the handler releases on its own way out
                used = [region.body] + ([before] if before is not None else [])
                if any(isinstance(n, (cst.Name, cst.Attribute)) and ctx.code(n) == owner for part in used for n in subtree(part)):
                    return node
        return None


def _managed(owner: str, node: cst.CSTNode, ctx: FileContext) -> bool:
    """Whether ``owner`` is bound by an enclosing ``with ... as owner``."""
    return any(
        isinstance(a, cst.With) and any(i.asname is not None and ctx.code(i.asname.name) == owner for i in a.items)
        for a in ctx.ancestors(node)
    )


def _calls_on(body: cst.CSTNode, owner: str, method: str, ctx: FileContext) -> bool:
    return any(
        isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == method and ctx.code(n.func.value) == owner
        for n in subtree(body)
    )


def _handler_exit(region: cst.Try) -> str | None:
    """How a handler leaves without reaching the code after the ``try``."""
    for handler in region.handlers:
        for node in subtree(handler.body):
            if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                break
            if isinstance(node, cst.Raise):
                return "re-raises"
            if isinstance(node, cst.Return):
                return "returns"
    return None
