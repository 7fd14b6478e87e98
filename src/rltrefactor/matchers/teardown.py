"""Lifecycle matchers for the paths that end things: cancel, abort, finish, free, close.

These paths run for ids that may already be gone (a late cancel, a request that was
never scheduled, a second abort), concurrently with consumers of the state they
change, and they must give back everything the function took. The matchers read the
evidence a reviewer reads: the function's name, the loop it is in, the operations.
"""

from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from .base import FileContext, Match
from .context import subtree
from .imports import dotted_name
from .options import Option

# Words of a function name that make it a path ending a request or job for an id the
# caller hands in, at any time and possibly twice. Allocator internals (free, release,
# evict) are left out: a double free there is a bug that an assertion rightly stops.
# Generic removers (``remove_hook``, ``unregister``) keep internal registries whose
# invariants a KeyError rightly defends, so they are left out too.
RELEASE_WORDS = ("cancel", "abort", "finish", "cleanup")
# A loop over ids that have just ended: ``for req_id in finished_req_ids:``.
_ENDED_ITERABLE = re.compile(r"finish|abort|cancel|stopped", re.IGNORECASE)
_INT = re.compile(r"^-?\d+$")
_KEY_ERRORS = frozenset({"KeyError", "LookupError", "ValueError", "Exception", "BaseException"})


def name_words(name: str) -> set[str]:
    """``_free_finished_requests`` -> {"free", "finished", "finish", "requests", ...}:
    the words and their stems, so "finished", "cancelled" and "freed" match."""
    words = {w for w in name.lower().split("_") if w}
    stems = {w[: -len(end)] for w in words for end in ("led", "ed", "d", "es", "s") if w.endswith(end)}
    return words | stems


class UncheckedRemovalOnReleasePath:
    """``del d[k]``, ``d.pop(k)`` or ``assert k in d`` for an id on a cancel/abort/finish path."""

    OPTIONS = {"release-words": Option("strings", RELEASE_WORDS, "words of function names that end a request, job or resource")}

    def __init__(self, rule_id: str, options: dict) -> None:
        self.rule_id = rule_id
        self.words = frozenset(options["release-words"])
        self.prefilter = (re.compile(r"\bdel\b"), ".pop(", re.compile(r"\bassert\b"))

    def find(self, ctx: FileContext) -> Iterator[Match]:
        candidates: list[tuple[cst.CSTNode, str, str | None, str]] = []
        for statement in ctx.nodes(cst.Del):
            for target in _del_targets(statement.target):
                if isinstance(target, cst.Subscript) and len(target.slice) == 1:
                    key = target.slice[0].slice
                    if isinstance(key, cst.Index) and not isinstance(key.value, (cst.SimpleString, cst.Integer)):
                        candidates.append((statement, ctx.code(target.value), ctx.code(key.value), f"del {ctx.code(target)}"))
        for call in ctx.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "pop" and len(call.args) == 1 and not call.args[0].keyword:
                key = ctx.code(call.args[0].value)
                if not _INT.match(key) and not isinstance(call.args[0].value, cst.SimpleString):
                    candidates.append((call, ctx.code(func.value), key, ctx.code(call)))
        for statement in ctx.nodes(cst.Assert):
            container = _membership(statement.test)
            if container is not None:
                candidates.append((statement, ctx.code(container[1]), ctx.code(container[0]), ctx.code(statement)))
            elif isinstance(statement.test, cst.Name) and statement.test.value == "False":
                candidates.append((statement, "", None, "assert False"))
        for node, container, key, what in candidates:
            where = self._release_path(node, ctx)
            if where is None or _checked(node, container, key, ctx):
                continue
            if key is not None and not _from_caller(node, key, ctx):
                continue  # a key the function derived itself follows its own bookkeeping
            yield Match(node, {"OP": what, "WHERE": where, "CONTAINER": container or "the registry"})

    def _release_path(self, node: cst.CSTNode, ctx: FileContext) -> str | None:
        for ancestor in ctx.ancestors(node):
            if isinstance(ancestor, cst.For) and _ENDED_ITERABLE.search(ctx.code(ancestor.iter)):
                return f"the loop over {ctx.code(ancestor.iter)}"
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                if isinstance(ancestor, cst.FunctionDef) and name_words(ancestor.name.value) & self.words:
                    return f"{ancestor.name.value}()"
                return None
        return None


def _del_targets(target: cst.BaseDelTargetExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield element.value
    else:
        yield target


def _membership(test: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """``(key, container)`` of ``key in container``."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, cst.In):
            return test.left, target.comparator
    return None


def _from_caller(node: cst.CSTNode, key: str, ctx: FileContext) -> bool:
    """Whether ``key`` is rooted in a parameter, or in the target of a loop over a
    parameter or over ended ids: an id the caller (or the scheduler) hands in."""
    function = ctx.enclosing_function(node)
    root = re.match(r"\w+", key)
    if function is None or root is None:
        return False
    outside = {p.name.value for p in [*function.params.params, *function.params.posonly_params, *function.params.kwonly_params]}
    for loop in (n for n in subtree(function.body) if isinstance(n, cst.For)):
        source = re.match(r"\w+", ctx.code(loop.iter))
        if source and source.group() in outside and source.group() != "self" or _ENDED_ITERABLE.search(ctx.code(loop.iter)):
            outside.update(n.value for n in subtree(loop.target) if isinstance(n, cst.Name))
    outside.discard("self")
    return root.group() in outside


def _checked(node: cst.CSTNode, container: str, key: str | None, ctx: FileContext) -> bool:
    """Whether the function tests ``container`` for the key before removing, or
    handles the ``KeyError``: then a missing id is an expected case."""
    if not container:
        return False
    child = node
    function = None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Try) and child is ancestor.body and any(_catches_lookup(h) for h in ancestor.handlers):
            return True
        if isinstance(ancestor, cst.With) and any("suppress" in ctx.code(item.item) for item in ancestor.items):
            return True
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            function = ancestor
            break
        child = ancestor
    if function is None:
        return False
    position = ctx.span(node).line
    for test in _tests_before(function, position, ctx):
        for part in subtree(test):
            if isinstance(part, cst.Comparison) and any(isinstance(c.operator, (cst.In, cst.NotIn)) for c in part.comparisons):
                if any(ctx.code(c.comparator) == container for c in part.comparisons):
                    return True
            if isinstance(part, cst.Call) and isinstance(part.func, cst.Attribute) and part.func.attr.value == "get":
                if ctx.code(part.func.value) == container:
                    return True
    return _read_before(function, container, key, position, ctx)


def _read_before(function: cst.CSTNode, container: str, key: str | None, line: int, ctx: FileContext) -> bool:
    """``container[key]`` read on an earlier line: it raised already if the key were missing."""
    for node in subtree(function):
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 and ctx.code(node.value) == container:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and ctx.code(index.value) == key and ctx.span(node).line < line:
                return True
    return False


def _tests_before(function: cst.CSTNode, line: int, ctx: FileContext) -> Iterator[cst.BaseExpression]:
    """Conditions in ``function`` that start on or before ``line`` (guards and early returns)."""
    for node in subtree(function):
        if isinstance(node, (cst.If, cst.While, cst.IfExp)) and ctx.span(node.test).line <= line:
            yield node.test
        elif isinstance(node, cst.Assert) and ctx.span(node).line < line:
            yield node.test
        elif isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) and ctx.span(node).line < line:
            yield node.value  # ``x = d.get(k)`` before ``del d[k]``


def _catches_lookup(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any((dotted_name(t) or "").rpartition(".")[2] in _KEY_ERRORS for t in types)


# Constructors of resources that hold an OS handle or threads until closed.
RESOURCES = (
    "open", "io.open", "asyncio.new_event_loop", "concurrent.futures.ThreadPoolExecutor",
    "concurrent.futures.ProcessPoolExecutor", "multiprocessing.Pool", "socket.socket",
    "tempfile.NamedTemporaryFile", "tempfile.TemporaryFile",
)  # fmt: skip
# Calls that take ownership of what they are given and close it.
_OWNING_CALLS = frozenset({
    "closing", "enter_context", "enter_async_context", "callback", "finalize", "register",
    "append", "add", "setdefault", "set_event_loop", "__init__",
})  # fmt: skip
_CLOSERS = frozenset({"close", "shutdown", "terminate", "cleanup", "__exit__", "aclose", "join"})


class ResourceWithoutClose:
    """A file, event loop or executor created in a function and never closed there."""

    OPTIONS = {"constructors": Option("strings", RESOURCES, "qualified names of calls that create a resource to close")}

    def __init__(self, rule_id: str, options: dict) -> None:
        self.rule_id = rule_id
        self.constructors = frozenset(options["constructors"])
        tails = sorted({name.rpartition(".")[2] for name in self.constructors})
        self.prefilter = tuple(re.compile(rf"\b{re.escape(tail)}\s*\(") for tail in tails)

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
            if any(_is(t, local) for t in targets) and not isinstance(node.value, cst.Call):
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
        if isinstance(node, cst.Attribute) and _is(node.value, local) and node.attr.value in _CLOSERS:
            return True
        if isinstance(node, cst.WithItem) and _is(node.item, local):
            return True
        if isinstance(node, (cst.Return, cst.Yield)) and node.value is not None and any(_is(n, local) for n in _unpacked(node.value)):
            return True
        if isinstance(node, cst.Assign) and _is(node.value, local):
            return True  # ``self.loop = loop``: its owner closes it
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value == local for n in node.names):
            return True
        if isinstance(node, cst.Call) and _takes_ownership(_callee(node)) and any(_is(a.value, local) for a in node.args):
            return True
    return False


def _unpacked(value: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The value itself, or the elements of a returned tuple/list."""
    if isinstance(value, (cst.Tuple, cst.List)):
        yield from (element.value for element in value.elements)
    else:
        yield value


def _is(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


_DELIVERY = re.compile(r"^(?:put|send)(?:_\w+)?$")


class AwaitedDeliveryInFanOutLoop:
    """``await consumer.put(...)`` for each consumer in a loop: one slow consumer stalls all."""

    OPTIONS: dict[str, Option] = {}

    def __init__(self, rule_id: str, options: dict) -> None:
        self.rule_id = rule_id
        self.prefilter = (re.compile(r"\.(?:put|send)\w*\s*\("),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for awaited in ctx.nodes(cst.Await):
            call = awaited.expression
            if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and _DELIVERY.match(call.func.attr.value)):
                continue
            receiver = _root_name(call.func.value)
            loop = _enclosing_loop(awaited, ctx)
            if receiver is None or loop is None or not _varies_per_iteration(receiver, loop):
                continue
            yield Match(awaited, {"CALL": ctx.code(call.func), "LOOP": ctx.code(loop.iter)})


def _root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) and node.value != "self" else None


def _enclosing_loop(node: cst.CSTNode, ctx: FileContext) -> cst.For | None:
    """The innermost ``for`` around ``node`` within an ``async def``."""
    loop = None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.For) and loop is None:
            loop = ancestor
        if isinstance(ancestor, (cst.Lambda, cst.FunctionDef)):
            return loop if isinstance(ancestor, cst.FunctionDef) and ancestor.asynchronous is not None else None
    return None


def _varies_per_iteration(name: str, loop: cst.For) -> bool:
    """``name`` is the loop's target or is bound in its body: a different consumer each time."""
    if any(_is(n, name) for n in subtree(loop.target)):
        return True
    for node in subtree(loop.body):
        if isinstance(node, cst.AssignTarget) and _is(node.target, name):
            return True
        if isinstance(node, cst.NamedExpr) and _is(node.target, name):
            return True
    return False


# Cancel and abort announce an intent other tasks must see at once. A close or stop
# often sets its flag last on purpose: "closed" means done, and the awaited flush
# before it still needs the object open.
_ENDING_WORDS = frozenset({"cancel", "abort"})


class StateFlagSetAfterAwait:
    """``await ...`` then ``self.cancelled = True`` in an async cancel/abort: consumers race the flag."""

    OPTIONS: dict[str, Option] = {}

    def __init__(self, rule_id: str, options: dict) -> None:
        self.rule_id = rule_id
        words = "|".join(sorted(_ENDING_WORDS))
        self.prefilter = (re.compile(rf"async\s+def\s+\w*(?:{words})", re.IGNORECASE),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for function in ctx.nodes(cst.FunctionDef):
            if function.asynchronous is None or not name_words(function.name.value) & _ENDING_WORDS:
                continue
            if not isinstance(function.body, cst.IndentedBlock):
                continue
            awaited = None
            for statement in function.body.body:
                flag = _flag_assignment(statement)
                if flag is not None and awaited is not None:
                    yield Match(statement, {"FLAG": flag, "AWAIT": awaited, "FUNCTION": function.name.value})
                elif awaited is None and any(isinstance(n, cst.Await) for n in subtree(statement)):
                    awaited = ctx.code(next(n for n in subtree(statement) if isinstance(n, cst.Await)))


def _flag_assignment(statement: cst.CSTNode) -> str | None:
    """``self.x = True/False`` as a statement of its own."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            if isinstance(target, cst.Attribute) and dotted_name(target.value) == "self":
                if isinstance(small.value, cst.Name) and small.value.value in ("True", "False"):
                    return f"self.{target.attr.value}"
    return None


_CANCEL_WORDS = frozenset({"cancel", "abort"})


class CancelPastItsOwner:
    """``self.wrapper.inner.cancel(x)`` inside ``cancel()``: the wrapper's own
    bookkeeping for ``x`` is skipped."""

    OPTIONS: dict[str, Option] = {}
    reads = "statement"

    def __init__(self, rule_id: str, options: dict) -> None:
        self.rule_id = rule_id
        self.prefilter = (re.compile(r"self(?:\s*\.\s*\w+){2,}\s*\.\s*\w*(?:cancel|abort)", re.IGNORECASE),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            chain = dotted_name(call.func) or ""
            parts = chain.split(".")
            if len(parts) < 4 or parts[0] != "self" or not name_words(parts[-1]) & _CANCEL_WORDS:
                continue
            function = ctx.enclosing_function(call)
            if function is None or not name_words(function.name.value) & _CANCEL_WORDS:
                continue
            owner = ".".join(parts[:2])
            yield Match(call, {"CALL": chain, "OWNER": owner, "FUNCTION": function.name.value})


# Names of items large enough that holding two at once matters.
_BULKY = re.compile(r"chunk|bucket|batch|shard|tensor|weight|param|buffer|layer|state_dict", re.IGNORECASE)


class ChunkKeptAliveByLoopVariable:
    """``for chunk in make_chunks(): out = send(chunk); del out``: the loop variable still
    holds the chunk while the next one is built."""

    OPTIONS: dict[str, Option] = {}

    def __init__(self, rule_id: str, options: dict) -> None:
        self.rule_id = rule_id
        self.prefilter = (re.compile(r"\bdel\b"),)

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
            deleted = {t.value for t in _del_targets(statement.target) if isinstance(t, cst.Name)}
            if not deleted or chunk in deleted or _deletes(loop.body, chunk):
                continue
            derived = _derived_from(loop.body, chunk)
            if deleted & derived:
                yield Match(statement, {"CHUNK": chunk, "DELETED": ", ".join(sorted(deleted)), "SOURCE": ctx.code(loop.iter.func)})


def _deletes(body: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Del) and any(_is(t, name) for t in _del_targets(n.target)) for n in subtree(body))


def _derived_from(body: cst.CSTNode, chunk: str) -> set[str]:
    """Names the loop body assigns from a call that is given ``chunk``."""
    names: set[str] = set()
    for node in subtree(body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            if any(_is(n, chunk) for a in node.value.args for n in subtree(a.value)):
                for target in node.targets:
                    names.update(n.value for n in subtree(target.target) if isinstance(n, cst.Name))
    return names
