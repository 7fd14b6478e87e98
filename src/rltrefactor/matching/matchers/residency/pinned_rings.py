"""Pinned rings of one file: containers of pinned host tensors kept across calls.

A ring is built in one expression, a list comprehension or a literal list (or tuple)
of two or more ``pin_memory=True`` / ``.pin_memory()`` allocations, or by appending
such allocations to a list one at a time, and kept beyond
the call that builds it: stored on ``self``/``cls``, or returned by a function of the
file (whole, or at a position of a returned tuple). An index into it *rotates* when it
is ``a % n``, ``1 - a`` or ``a ^ 1``, or a ``self`` attribute assigned one: it comes
back to the same slots, which is what a ring is for.
"""

from __future__ import annotations

import ast
from typing import Iterator, Mapping


def functions(tree: ast.Module) -> Iterator[tuple[ast.ClassDef | None, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield None, node
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield node, member


def pinned_allocation(node: ast.expr) -> bool:
    """``torch.empty(..., pin_memory=<not False>)`` or ``<tensor>.pin_memory()``."""
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Attribute) and node.func.attr == "pin_memory" and not node.args:
        return True
    pin = next((k.value for k in node.keywords if k.arg == "pin_memory"), None)
    return pin is not None and not (isinstance(pin, ast.Constant) and pin.value in (False, None))


def ring_allocation(node: ast.expr) -> bool:
    """A list comprehension of pinned allocations, or a literal list or tuple of two or more."""
    if isinstance(node, ast.ListComp):
        return pinned_allocation(node.elt)
    if isinstance(node, (ast.List, ast.Tuple)):
        return len(node.elts) >= 2 and all(pinned_allocation(e) for e in node.elts)
    return False


def pinned_append(node: ast.AST) -> ast.expr | None:
    """The list ``X`` of ``X.append(<pinned allocation>)``: a ring built one slot at a time."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append":
        if len(node.args) == 1 and pinned_allocation(node.args[0]):
            return node.func.value
    return None


def self_attribute(node: ast.expr) -> str | None:
    """``X`` of ``self.X`` / ``cls.X``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
        return node.attr
    return None


def local_values(function: ast.AST) -> dict[str, ast.expr]:
    """The last value assigned to each plain name in ``function``."""
    values: dict[str, ast.expr] = {}
    for node in in_order(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = node.value
    return values


def in_order(root: ast.AST) -> list[ast.AST]:
    """Nodes under ``root`` in source order, nested functions and classes left out."""
    nodes = [n for n in walk(root) if hasattr(n, "lineno")]
    return sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def walk(root: ast.AST) -> Iterator[ast.AST]:
    for child in ast.iter_child_nodes(root):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield child
        yield from walk(child)


class FileRings:
    """Where rings live in one file: attributes of each class, and what functions return."""

    def __init__(self, tree: ast.Module) -> None:
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.attributes: dict[str, dict[str, int]] = {}  # class -> attribute -> allocation line
        self.returns: dict[tuple[str | None, str], dict[int | None, int]] = {}  # (class, function) -> position -> line
        self.rotated: dict[str, set[str]] = {}  # class -> attributes assigned a rotating index
        for owner, function in functions(tree):
            key = owner.name if owner is not None else None
            values = local_values(function)
            appended = {  # local lists pinned tensors are appended to -> line of the first append
                receiver.id: call.lineno for call in reversed(list(walk(function)))
                if isinstance(call, ast.Call) and isinstance(receiver := pinned_append(call), ast.Name)
            }
            for node in walk(function):
                self._note_attribute(key, node, values, appended)
            positions = self._returned(function, values)
            if positions:
                self.returns[(key, function.name)] = positions

    def _note_attribute(self, owner: str | None, node: ast.AST, values: Mapping[str, ast.expr],
                        appended: Mapping[str, int]) -> None:
        """``self.X = <ring>`` (or a local list the function appended pinned tensors to),
        ``self.X.append(<pinned>)``, and ``self.X`` assigned a rotating index."""
        if owner is None:
            return
        if isinstance(node, ast.Assign):
            for target in node.targets:
                attribute = self_attribute(target)
                if attribute is None:
                    continue
                value = values.get(node.value.id, node.value) if isinstance(node.value, ast.Name) else node.value
                if ring_allocation(value):
                    self.attributes.setdefault(owner, {})[attribute] = value.lineno
                elif isinstance(node.value, ast.Name) and node.value.id in appended:
                    self.attributes.setdefault(owner, {})[attribute] = appended[node.value.id]
                if rotating_value(node.value):
                    self.rotated.setdefault(owner, set()).add(attribute)
        elif isinstance(node, ast.Call) and (receiver := pinned_append(node)) is not None:
            attribute = self_attribute(receiver)
            if attribute is not None:
                self.attributes.setdefault(owner, {})[attribute] = node.lineno
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Mod, ast.BitXor)):
            attribute = self_attribute(node.target)
            if attribute is not None:
                self.rotated.setdefault(owner, set()).add(attribute)

    @staticmethod
    def _returned(function: ast.AST, values: Mapping[str, ast.expr]) -> dict[int | None, int]:
        """Positions of the returned tuple that are rings (None: the whole value is one)."""
        positions: dict[int | None, int] = {}
        for node in walk(function):
            if not isinstance(node, ast.Return) or node.value is None:
                continue
            value = node.value
            if isinstance(value, ast.Name):
                value = values.get(value.id, value)
            elements = value.elts if isinstance(value, ast.Tuple) and not ring_allocation(value) else None
            for position, element in [(None, value)] if elements is None else list(enumerate(elements)):
                if isinstance(element, ast.Name):
                    element = values.get(element.id, element)
                if ring_allocation(element):
                    positions[position] = element.lineno
        return positions

    def lineage(self, owner: str | None) -> list[str]:
        """``owner`` and its base classes defined in this file, nearest first."""
        chain: list[str] = []
        while owner is not None and owner in self.classes and owner not in chain:
            chain.append(owner)
            bases = [b.id for b in self.classes[owner].bases if isinstance(b, ast.Name)]
            owner = next((b for b in bases if b in self.classes), None)
        return chain

    def attribute(self, owner: str | None, attribute: str) -> int | None:
        for cls in self.lineage(owner):
            line = self.attributes.get(cls, {}).get(attribute)
            if line is not None:
                return line
        return None

    def called(self, call: ast.Call, owner: str | None) -> dict[int | None, int]:
        """What the function ``call`` reaches returns, when it is defined in this file."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.returns.get((None, func.id), {})
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return {}
        receiver = func.value.id
        classes = self.lineage(owner) if receiver in ("self", "cls") else self.lineage(receiver)
        for cls in classes:
            found = self.returns.get((cls, func.attr))
            if found:
                return found
        return {}


def rotating_value(node: ast.expr) -> bool:
    """``a % n``, ``1 - a`` or ``a ^ 1``: an index that comes back to the same slots."""
    if not isinstance(node, ast.BinOp):
        return False
    if isinstance(node.op, ast.Mod):
        return not isinstance(node.left, ast.Constant) or not isinstance(node.left.value, str)
    if isinstance(node.op, ast.Sub):
        return isinstance(node.left, ast.Constant) and node.left.value == 1
    return isinstance(node.op, ast.BitXor) and isinstance(node.right, ast.Constant) and node.right.value == 1
