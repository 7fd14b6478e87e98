"""Device-residency matcher for pinned staging slots rewritten by the host while in flight.

A *ring* is a container of several pinned host tensors built in one expression (a
list comprehension or a literal list of ``pin_memory=True`` / ``.pin_memory()``
allocations) or by appending them to a list, kept beyond one call: stored on
``self``/``cls`` or returned by a function of the same file. A *slot* is an element of a ring selected by a rotating
index (``i % depth``, ``1 - i``, ``i ^ 1``, directly or through a name or attribute
assigned one). Building a ring and rotating through it says that one call's
asynchronous work on a slot may still run when a later call comes back to it.

A function hands a ring to asynchronous work when it copies from or into one of its
slots with ``non_blocking=True`` or passes a slot's ``data_ptr()`` to a call (native
code that reads the address later). The same function writing a slot from the host
(``fill_``, ``zero_``, in-place arithmetic, ``copy_`` of a host value, an index
assignment, ``out=``) takes effect at once, while the work a previous call handed the
slot to may still be reading it. It is reported unless a host wait (``synchronize()``,
``wait()``, ``query()``, ``item()``, ``tolist()``, a call whose name starts with ``sync``
or ``wait``, directly or in a method of the same class that the function calls) comes
before the write or after the function's last hand-off. A ring allocated in the
function itself is fresh on every call: only a loop there that rotates through it
reuses its slots, so only the hand-offs and waits inside that loop count. Pageable
containers are not rings.

The analysis reads the whole file (``ast``): the ring is usually built in another
method than the one that writes it.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import in_cold_function
from ..options import Option
from .pinned_rings import (
    FileRings, functions, in_order, pinned_append, ring_allocation, rotating_value, self_attribute, walk,
)

# In-place methods that write a tensor's memory from the host when it lives there.
_WRITES = frozenset(
    "fill_ zero_ index_fill_ index_copy_ index_put_ masked_fill_ masked_scatter_ scatter_ scatter_add_ "
    "add_ sub_ mul_ div_ clamp_".split()
)
# Host waits: a finished event, stream, future or device, or a value read back from it.
_WAITS = frozenset({"synchronize", "wait", "query", "item", "tolist"})
_DEVICE_MOVES = frozenset({"to", "cuda", "npu", "xpu"})
_HOST_SOURCES = frozenset({"cpu", "numpy", "tolist"})
_HOST_FACTORIES = frozenset({"tensor", "as_tensor", "from_numpy", "full", "zeros", "ones", "arange"})
_SETUP = frozenset({"__init__", "__post_init__", "__new__"})
# Methods whose result shares the receiver's memory: a write into it writes the slot.
_VIEWS = frozenset("view view_as reshape flatten narrow select squeeze unsqueeze numpy detach".split())
Position = tuple[int, int]  # (line, column) of an ast node: source order


def _waits(method: str) -> bool:
    """A host wait, or a call that says it may be one (``sync_with_cuda_stream``,
    ``wait_for_slot``): counting a possible wait as one only leaves findings out."""
    return method in _WAITS or method.startswith(("sync", "wait")) or method.endswith("synchronize")


@dataclass(frozen=True)
class Ring:
    """A container of pinned host tensors whose slots a function comes back to."""

    name: str  # as the writing function spells it
    allocated: int  # line of the allocation
    # Allocated in the writing function: it is reused only across the iterations of a
    # loop there, so only a hand-off and the waits inside that loop count.
    local: bool = False


@dataclass(frozen=True)
class SlotWrite:
    """A host write into a ring's slot in a function that also hands the ring to asynchronous work."""

    line: int
    column: int  # 0-based, in characters
    written: str
    ring: Ring
    handoff: str
    handoff_line: int


class PinnedSlotRewrittenWhileInFlight:
    """A host write into a pinned ring slot that this function also hands to asynchronous work, with no wait."""

    # The rings, hand-offs and waits are read from the whole file's text (``slot_writes``);
    # LibCST is asked only for the written statement, to place the finding.
    reach = MatcherReach(reads="statement", hits_at_tokens=True)
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = (
            re.compile("(?:" + "|".join(sorted(m[:-1] for m in _WRITES | {"copy_"})) + r")_\("),
            re.compile(r"\]\s*(?://|[-+*/%&|^])?=(?!=)"),  # slot[...] = value
            re.compile(r"out\s*="),
        )

    def find(self, ctx: FileContext) -> Iterator[Match]:
        writes = {(w.line, w.column): w for w in slot_writes(ctx.model.text)}
        if not writes:
            return
        lines = ctx.model.text.splitlines()
        for kind in (cst.Call, cst.Assign, cst.AugAssign):
            for node in ctx.nodes(kind):
                span = ctx.span(node)
                found = writes.get((span.line, span.column - 1))
                if found is None or not _same_start(lines, found, ctx.code(node)):
                    continue
                # A ring kept across calls comes back to a slot only in code that runs again.
                if not found.ring.local and in_cold_function(node, ctx):
                    continue
                yield Match(node, {
                    "X": found.written, "RING": found.ring.name, "ALLOCATED": str(found.ring.allocated),
                    "HANDOFF": found.handoff, "HANDOFF_LINE": str(found.handoff_line),
                })


def _same_start(lines: list[str], write: SlotWrite, code: str) -> bool:
    line = lines[write.line - 1] if write.line <= len(lines) else ""
    return line[write.column:].startswith(code.strip().splitlines()[0][:20])


@functools.lru_cache(maxsize=32)
def slot_writes(text: str) -> tuple[SlotWrite, ...]:
    """Every reported write of one file, in source order."""
    if "pin_memory" not in text:
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    if not any(
        (isinstance(node, (ast.ListComp, ast.List, ast.Tuple)) and ring_allocation(node)) or pinned_append(node) is not None
        for node in ast.walk(tree)
    ):
        return ()  # no ring anywhere in the file
    rings = FileRings(tree)
    found: list[SlotWrite] = []
    for owner, function in functions(tree):
        if function.name not in _SETUP:
            found.extend(_Function(function, owner, rings, text).writes())
    return tuple(sorted(found, key=lambda w: (w.line, w.column)))


class _Function:
    """One function's ring slots, host writes into them, hand-offs and waits."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef, owner: ast.ClassDef | None,
                 rings: FileRings, text: str) -> None:
        self.function = function
        self.owner = owner.name if owner is not None else None
        self.rings = rings
        self.text = text
        self.nodes = in_order(function)
        self.parents = {id(c): p for p in [function, *self.nodes] for c in ast.iter_child_nodes(p)}
        # Per name, its bindings in source order: an assigned value, or a ring it was unpacked as.
        self.bindings: dict[str, list[tuple[Position, ast.expr | Ring | None]]] = {}
        for node in self.nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                self._bind(node.targets[0], node.value, _at(node))
            elif isinstance(receiver := pinned_append(node), ast.Name):  # a local ring built one slot at a time
                self.bindings.setdefault(receiver.id, []).append((_at(node), Ring(receiver.id, _at(node)[0], local=True)))

    def _bind(self, target: ast.expr, value: ast.expr, at: Position) -> None:
        if isinstance(target, ast.Name):
            self.bindings.setdefault(target.id, []).append((at, value))
        elif isinstance(target, (ast.Tuple, ast.List)):
            positions = self.rings.called(value, self.owner) if isinstance(value, ast.Call) else {}
            for index, element in enumerate(target.elts):
                if isinstance(element, ast.Name):
                    line = positions.get(index)
                    ring = Ring(element.id, line) if line is not None else None
                    self.bindings.setdefault(element.id, []).append((at, ring))

    def _value(self, name: str, at: Position) -> tuple[Position, ast.expr | Ring | None] | None:
        last = None
        for bound_at, value in self.bindings.get(name, ()):
            if bound_at >= at:
                break
            last = (bound_at, value)
        return last

    def ring_of(self, node: ast.expr, at: Position, depth: int = 0) -> Ring | None:
        """The ring ``node`` is, as this function sees it at ``at``."""
        if depth > 6:
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            receiver = node.value.id
            owner = self.owner if receiver in ("self", "cls") else receiver if receiver in self.rings.classes else None
            line = self.rings.attribute(owner, node.attr) if owner is not None else None
            return Ring(_source(self.text, node), line) if line is not None else None
        if isinstance(node, ast.Call):
            line = self.rings.called(node, self.owner).get(None)
            return Ring(_source(self.text, node), line) if line is not None else None
        if isinstance(node, ast.Name):
            found = self._value(node.id, at)
            if found is None or found[1] is None:
                return None
            bound_at, value = found
            if isinstance(value, Ring) or value is None:
                return value
            if ring_allocation(value):
                return Ring(node.id, value.lineno, local=True)
            return self.ring_of(value, bound_at, depth + 1)
        return None

    def slot_of(self, node: ast.expr, at: Position, depth: int = 0) -> Ring | None:
        """The ring whose rotating slot ``node`` is (or is a view of)."""
        if depth > 6:
            return None
        if isinstance(node, ast.Subscript):
            ring = self.ring_of(node.value, at)
            if ring is not None:
                return ring if self.rotating(node.slice, at) else None
            return self.slot_of(node.value, at, depth + 1)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS:
            return self.slot_of(node.func.value, at, depth + 1)
        if isinstance(node, ast.Name):
            found = self._value(node.id, at)
            if found is not None and isinstance(found[1], ast.expr):
                return self.slot_of(found[1], found[0], depth + 1)
        return None

    def rotating(self, index: ast.expr, at: Position) -> bool:
        if rotating_value(index):
            return True
        if isinstance(index, ast.Name):
            found = self._value(index.id, at)
            return found is not None and isinstance(found[1], ast.expr) and rotating_value(found[1])
        attribute = self_attribute(index)
        return attribute is not None and any(attribute in self.rings.rotated.get(c, ()) for c in self.rings.lineage(self.owner))

    def writes(self) -> list[SlotWrite]:
        writes: list[tuple[ast.AST, ast.expr, Ring]] = []
        handoffs: list[tuple[Position, Ring, str]] = []
        waits: list[Position] = []
        for node in self.nodes:
            at = _at(node)
            if isinstance(node, ast.Call):
                self._call(node, at, writes, handoffs, waits)
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    ring = self.slot_of(target.value, at) if isinstance(target, ast.Subscript) else None
                    if ring is not None:
                        writes.append((node, target, ring))
        found = []
        for node, target, ring in writes:
            at = _at(node)
            lines = self._reused_over(node, ring)
            if lines is None:
                continue
            mine = [(h_at, text) for h_at, h_ring, text in handoffs
                    if h_ring.allocated == ring.allocated and lines[0] <= h_at[0] <= lines[1]]
            if not mine or any(w < at or w > max(h for h, _ in mine) for w in waits if lines[0] <= w[0] <= lines[1]):
                continue
            handoff_at, handoff = mine[0]
            line = self.text.splitlines()[at[0] - 1]
            column = len(line.encode()[: at[1]].decode(errors="ignore"))  # ast columns count UTF-8 bytes
            found.append(SlotWrite(at[0], column, _source(self.text, target), ring, handoff, handoff_at[0]))
        return found

    def _reused_over(self, node: ast.AST, ring: Ring) -> tuple[int, int] | None:
        """The lines over which ``ring`` comes back to the slot ``node`` writes: the whole
        function for a ring kept across calls; for one allocated here, the innermost loop
        around ``node`` that does not allocate it again (None outside such a loop)."""
        if not ring.local:
            return (self.function.lineno, self.function.end_lineno or self.function.lineno)
        parent = self.parents.get(id(node))
        while parent is not None and parent is not self.function:
            if isinstance(parent, (ast.For, ast.AsyncFor, ast.While)):
                end = parent.end_lineno or parent.lineno
                if not parent.lineno <= ring.allocated <= end:
                    return (parent.lineno, end)
            parent = self.parents.get(id(parent))
        return None

    def _call(self, call: ast.Call, at: Position, writes: list[tuple[ast.AST, ast.expr, Ring]],
              handoffs: list[tuple[Position, Ring, str]], waits: list[Position]) -> None:
        func = call.func
        for keyword in call.keywords:
            ring = self.slot_of(keyword.value, at) if keyword.arg == "out" else None
            if ring is not None:
                writes.append((call, keyword.value, ring))
        if isinstance(func, ast.Name) and _waits(func.id):
            waits.append(at)
        if not isinstance(func, ast.Attribute):
            return
        method, receiver = func.attr, func.value
        if _waits(method) or self._waiting_method(call):
            waits.append(at)
            return
        non_blocking = any(k.arg == "non_blocking" and isinstance(k.value, ast.Constant) and k.value.value is True
                           for k in call.keywords)
        ring = self.slot_of(receiver, at)
        source = call.args[0] if call.args else None
        if method == "copy_" and source is not None:
            read = self.slot_of(source, at)
            if read is not None and non_blocking:
                handoffs.append((at, read, f"`{_source(self.text, call)}`"))
            if ring is not None and _host_value(source):
                writes.append((call, receiver, ring))
            elif ring is not None and non_blocking:
                handoffs.append((at, ring, f"`{_source(self.text, call)}`"))
            elif ring is not None:
                waits.append(at)  # a blocking copy from the device waits for its stream
            return
        if ring is None:
            return
        if method in _WRITES:
            writes.append((call, receiver, ring))
        elif method in _DEVICE_MOVES and non_blocking:
            handoffs.append((at, ring, f"`{_source(self.text, call)}`"))
        elif method == "data_ptr" and self._passed_on(call):
            handoffs.append((at, ring, f"`{_source(self.text, call)}` passed to a call"))

    def _passed_on(self, node: ast.AST) -> bool:
        """``node`` is (inside) an argument of a call."""
        child, parent = node, self.parents.get(id(node))
        while parent is not None and not isinstance(parent, ast.stmt):
            if isinstance(parent, ast.Call) and child is not parent.func:
                return True
            child, parent = parent, self.parents.get(id(parent))
        return False

    def _waiting_method(self, call: ast.Call) -> bool:
        """``self.m(...)`` where ``m``, a method of this class, calls a host wait itself."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return False
        for cls in self.rings.lineage(self.owner):
            for member in self.rings.classes[cls].body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name == func.attr:
                    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _waits(n.func.attr)
                               for n in walk(member))
        return False


def _host_value(node: ast.expr) -> bool:
    """A value that is on the host as written: a number, a list, ``torch.tensor(...)``
    without a device, ``torch.from_numpy(...)``, ``x.cpu()``/``.numpy()``/``.tolist()``."""
    if isinstance(node, (ast.Constant, ast.List, ast.Tuple)):
        return True
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    if node.func.attr in _HOST_SOURCES:
        return True
    torch_call = isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
    return torch_call and node.func.attr in _HOST_FACTORIES and not any(k.arg == "device" for k in node.keywords)


def _at(node: ast.AST) -> Position:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _source(text: str, node: ast.AST) -> str:
    return (ast.get_source_segment(text, node) or "").strip().splitlines()[0] if node else ""
