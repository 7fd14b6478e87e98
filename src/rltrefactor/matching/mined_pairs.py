"""Pairs of calls a file's own cleanup code shows to belong together, read from its text.

A function that calls ``owner.acquire(...)`` and later, in a ``finally`` or ``except``
body, ``owner.release(...)`` on the same owner, tied to it (the release takes the
handle the acquire returned, both take the same first argument, or neither takes one),
shows that ``(acquire, release)`` is a pair: that is the evidence
``release-skipped-on-exit-path`` asks for before it reads a plain release as one that an
exit path may skip. Text only (indentation and regexes, no parse), so that the rule's
prefilter token can be worked out, and unpickled from the rule index, without LibCST.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterator

# Names cleanup code calls that undo nothing: diagnostics, waits, conversions, builtins.
_NOT_RELEASES = frozenset({
    "log", "debug", "info", "warning", "warn", "warning_once", "error", "exception", "critical", "print",
    "print_exc", "format", "format_exc", "join", "wait", "result", "get", "synchronize", "flush", "sleep",
    "len", "str", "repr", "int", "float", "bool", "isinstance", "hasattr", "getattr", "setattr", "type",
    "super", "list", "dict", "set", "tuple", "id", "min", "max", "sorted", "any", "all", "items", "keys",
    "values", "time", "perf_counter", "monotonic", "append", "extend", "update", "copy", "encode", "decode",
})  # fmt: skip
_HEADER = re.compile(r"^([ \t]*)(?:finally|except\b[^\n]*?)[ \t]*:(.*)$", re.MULTILINE)
_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]")
_DOTTED = r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*"
_OWNED_CALL = re.compile(rf"({_DOTTED})\.([A-Za-z_]\w*)\s*\(([^()\n]*)")
# ``stack.callback(pool.free, blocks)``: a release handed on, to be called at exit.
_HANDED_ON = re.compile(
    rf"(?:callback|finalize|register|add_done_callback)\s*\(\s*({_DOTTED})\.([A-Za-z_]\w*)\b(?!\s*\()([^()\n]*)"
)
# Reads are not acquires: a lookup before a removal pairs nothing.
_NOT_ACQUIRES = frozenset({"get", "items", "keys", "values", "copy", "index", "count", "format", "join", "split"})


def _width(indent: str) -> int:
    return len(indent.expandtabs())


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _opens_function(line: str, indent: int) -> bool:
    """A ``def`` line indented less than ``indent``: the function holding that code."""
    found = _DEF.match(line)
    return found is not None and _width(found.group(1)) < indent


@functools.lru_cache(maxsize=64)
def mined_pairs(text: str) -> frozenset[tuple[str, str]]:
    """``(acquire, release)`` method names the file itself uses as a pair: a function
    calls ``owner.release(...)`` in a ``finally`` or ``except`` body (or hands
    ``owner.release`` to ``ExitStack.callback``, ``weakref.finalize``, ...) after calling
    ``owner.acquire(...)`` on the same owner, tied to it (the release takes the handle
    the acquire returned, both take the same first argument, or neither takes one)."""
    lines = text.splitlines()
    pairs: set[tuple[str, str]] = set()
    number, counted_to = 0, 0
    for header in _HEADER.finditer(text):
        number += text.count("\n", counted_to, header.start())  # the header's index in ``lines``
        counted_to = header.start()
        indent = _width(header.group(1))
        end = number + 1
        while end < len(lines) and not (lines[end].strip() and _width(_indent(lines[end])) <= indent):
            end += 1
        start = number  # the enclosing function's body starts after its ``def`` line
        while start > 0 and not _opens_function(lines[start - 1], indent):
            start -= 1
        if start == number:
            continue
        body = [header.group(2), *lines[number + 1 : end]]
        earlier = "\n".join(lines[start:number])
        for line in body:
            for owner, release, args in [*_OWNED_CALL.findall(line), *_HANDED_ON.findall(line)]:
                if release in _NOT_RELEASES or owner in ("self", "cls"):
                    continue  # the object's own methods are its operations, not a resource it holds
                tied = _tied_acquires(earlier, owner, release, args.strip(" ,"))
                pairs.update((acquire, release) for acquire in tied)
    return frozenset(pairs)


def _tied_acquires(earlier: str, owner: str, release: str, release_args: str) -> Iterator[str]:
    """The calls on ``owner`` in ``earlier`` (the function's text before the cleanup
    code) that the release is tied to."""
    release_first = release_args.split(",")[0].strip()
    call_on_owner = rf"(?:\b([A-Za-z_]\w*)\s*=\s*)?(?:await\s+)?(?<![\w.]){re.escape(owner)}\.([A-Za-z_]\w*)\s*\(([^()\n]*)"
    calls = re.finditer(call_on_owner, earlier)
    for call in calls:
        handle, acquire, args = call.group(1), call.group(2), call.group(3).strip()
        if acquire == release or acquire in _NOT_ACQUIRES or acquire in _NOT_RELEASES:
            continue
        first = args.split(",")[0].strip()
        if (handle and re.search(rf"\b{handle}\b", release_args)) or (
                first and first == release_first and re.fullmatch(_DOTTED, first)) or (not args and not release_args):
            yield acquire


# A free list's take: from either end, without a key.
_TAKE_ALL = re.compile(r"\.(?:pop|popleft|get_nowait)\(\s*(?:0\s*)?\)")
_LOCK_BUILT = re.compile(r"=\s*(?:[\w.]*\.)?(?:Lock|RLock|Semaphore|BoundedSemaphore|Condition)\s*\(")


@dataclass(frozen=True)
class ReleaseCalls:
    """The prefilter token: calls of the releases the searched text itself shows to pair
    (``mined_pairs``), a free list's argument-less take, and ``.release(`` where the text
    builds a lock or semaphore. No state: it pickles into the rule index, and any two
    are equal."""

    def search(self, text: str) -> re.Match[str] | None:
        return next(self.finditer(text), None)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        yield from _release_pattern(frozenset(r for _, r in mined_pairs(text))).finditer(text)
        yield from _TAKE_ALL.finditer(text)
        if _LOCK_BUILT.search(text) is not None:
            yield from re.finditer(r"\.release\(", text)


@functools.lru_cache(maxsize=256)
def _release_pattern(releases: frozenset[str]) -> re.Pattern[str]:
    if not releases:
        return re.compile(r"(?!)")  # matches nothing
    return re.compile(r"\.(?:" + "|".join(sorted(map(re.escape, releases))) + r")\s*\(")
