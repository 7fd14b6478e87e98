"""Whether a matched value is what its function delivers, in code nothing places.

A function whose result *is* the flagged value (``return x.cuda()``, or ``t = ...``
then ``return t``) does the costly step because that is its job: how often the step
runs is decided by its callers. When the execution stage places the function per
step, the whole function is the problem and a rule still reports; when nothing places
it (``unknown``) and the file never mentions it beyond its ``def``, the callers are in
other files, the fix belongs at them, and the definition is not the place to report it.
Callers in the file keep the finding: they show the value is made there, however often.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .base import FileContext

if TYPE_CHECKING:
    from tree_sitter import Node


def returned_where_unplaced(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` is its function's returned value, nothing places the function, and nothing
    in the file mentions it but its ``def``: its callers, elsewhere, decide how often it runs."""
    found = ctx.function_at(node)
    if found is None or found.kind != "unknown" or not _returned(node, found.start_line, ctx):
        return False
    # Its callers are in this file otherwise: they show the value is made there.
    return ctx.model.mentions(found.qualname.rpartition(".")[2]) == 1


def _returned(node: cst.CSTNode, start_line: int, ctx: FileContext) -> bool:
    """``return node``, or ``name = node`` in a function that returns ``name`` (starting at ``start_line``)."""
    parent = ctx.parent(node)
    if isinstance(parent, cst.Return):
        return parent.value is node
    if not isinstance(parent, cst.Assign) or parent.value is not node or len(parent.targets) != 1:
        return False
    target = parent.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    # The region parsed for the match may leave the function's other statements out:
    # its returns are read from the whole file's tree.
    site = next((s for s in ctx.model.definitions.functions if s.definition.start_line == start_line), None)
    body = site.node.child_by_field_name("body") if site is not None else None
    return body is not None and target.value in _returned_names(body)


def _returned_names(node: Node) -> set[str]:
    """Names returned bare (``return name``) by a function body's own ``return``
    statements, not by functions, lambdas or classes defined in it."""
    found: set[str] = set()
    for child in node.named_children:
        if child.type == "return_statement":
            value = child.named_children[0] if child.named_children else None
            if value is not None and value.type == "identifier" and value.text is not None:
                found.add(value.text.decode("utf-8", "replace"))
        elif child.type not in ("function_definition", "class_definition", "decorated_definition", "lambda"):
            found |= _returned_names(child)
    return found
