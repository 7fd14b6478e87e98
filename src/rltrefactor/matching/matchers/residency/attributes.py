"""Every value a class assigns to one of its attributes: the facts residency follows
through ``self.<name>``.

An attribute read as ``self.<name>`` holds, at any time, one of the values the class
assigns it. Only assignments through ``self`` inside the class body are seen, and only
where that is the whole story: the attribute is never assigned through another receiver
(``runner.<name> = ...``), by unpacking (``self.a, self.b = ...``), by ``setattr`` or by
another class anywhere in the file. ``None`` placeholders hold no tensor and are left out.
Anything else, or no assignment at all, is unknown (``None``): a subclass in another
file may assign it too, and that is not proof either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from ..base import FileContext
from ..context import subtree


@dataclass(frozen=True)
class AttributeValue:
    value: cst.BaseExpression
    method: str  # the method that assigns it: "__init__"


def self_attribute(expr: cst.CSTNode) -> str | None:
    """``name`` of ``self.name``; None for anything else."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


def attribute_values(expr: cst.CSTNode, ctx: FileContext) -> list[AttributeValue] | None:
    """The values the enclosing class assigns ``self.<name>`` (``expr``), when those are
    all of them; None when the attribute is not a ``self`` attribute of a class or may be
    assigned some other way."""
    name = self_attribute(expr)
    owner = ctx.enclosing_class(expr) if name is not None else None
    if name is None or owner is None:
        return None
    elsewhere = _assigned_elsewhere(ctx)
    if name in elsewhere or "*" in elsewhere or not _only_in(owner, name, ctx):
        return None
    return _class_assignments(owner, ctx).get(name) or None


def _only_in(owner: cst.ClassDef, name: str, ctx: FileContext) -> bool:
    """Every ``self.<name> = ...`` of the whole file lies in ``owner``: no other class of
    the file (a subclass, a sibling sharing the name) assigns it too."""
    lines: dict[str, list[int]] | None = ctx.model.__dict__.get("_self_assignment_lines")
    if lines is None:
        lines, line, offset, text = {}, 1, 0, ctx.model.text
        for match in _SELF_ASSIGNMENT.finditer(text):
            line += text.count("\n", offset, match.start())
            offset = match.start()
            lines.setdefault(match.group(1), []).append(line)
        ctx.model.__dict__["_self_assignment_lines"] = lines
    span = ctx.span(owner)
    return all(span.line <= line <= span.end_line for line in lines.get(name, ()))


def _class_assignments(owner: cst.ClassDef, ctx: FileContext) -> dict[str, list[AttributeValue]]:
    """Per attribute, its assignments through ``self`` in the class; an attribute assigned
    by unpacking maps to an empty list (unknown). Built once per class and file context."""
    cache: dict[int, dict[str, list[AttributeValue]]] = ctx.__dict__.setdefault("_attribute_values", {})
    found = cache.get(id(owner))
    if found is not None:
        return found
    found = {}
    unpacked: set[str] = set()
    for node in subtree(owner.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                name = self_attribute(target.target)
                if name is not None:
                    _add(found, name, node.value, node, ctx)
                elif isinstance(target.target, (cst.Tuple, cst.List)):
                    unpacked.update(n for e in target.target.elements if (n := self_attribute(e.value)))
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            name = self_attribute(node.target)
            if name is not None:
                _add(found, name, node.value, node, ctx)
        elif isinstance(node, cst.AugAssign):
            name = self_attribute(node.target)
            if name is not None:  # ``self.x += y`` keeps the place ``self.x`` has
                found.setdefault(name, [])
    for name in unpacked:
        found[name] = []
    cache[id(owner)] = found
    return found


def _add(found: dict[str, list[AttributeValue]], name: str, value: cst.BaseExpression, node: cst.CSTNode,
         ctx: FileContext) -> None:
    values = found.setdefault(name, [])
    if isinstance(value, cst.Name) and value.value == "None":
        return
    function = ctx.enclosing_function(node)
    values.append(AttributeValue(value, function.name.value if function is not None else "<class body>"))


def _assigned_elsewhere(ctx: FileContext) -> frozenset[str]:
    """Attributes the whole file assigns through a receiver other than ``self`` (read from
    its text: a region may leave the assigning function out), and ``"*"`` when it calls
    ``setattr`` with a name that is not a literal."""
    cache: dict[str, frozenset[str]] = ctx.model.__dict__.setdefault("_attributes_assigned_elsewhere", {})
    found = cache.get("names")
    if found is None:
        text = ctx.model.text
        names = {attribute for receiver, attribute in _ATTRIBUTE_ASSIGNMENT.findall(text) if receiver != "self"}
        for literal in _SETATTR.findall(text):
            names.add(literal or "*")
        found = cache["names"] = frozenset(names)
    return found


_SELF_ASSIGNMENT = re.compile(r"^[ \t]*self\.([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?[-+*/|&]?=(?!=)", re.M)
# ``obj.attr = ...`` or ``obj.attr: T = ...`` at a statement's start (not ``==``, not ``+=``).
_ATTRIBUTE_ASSIGNMENT = re.compile(r"^[ \t]*([A-Za-z_][\w.]*)\.([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
_SETATTR = re.compile(r"""\bsetattr\(\s*[^,()]+,\s*(?:["'](\w+)["']|)""")
