"""What the body of an ``if`` does, read from the file's one tree-sitter parse.

A region (the part of a file LibCST parses for a rule) leaves out the statements of a
branch that hold none of the rule's tokens: the ``return`` after the line that builds
a value, the ``self._x = x`` that keeps it. Whether a body ends by leaving the function
and whether it keeps what it builds are read from the whole file instead, so every
region of a file gets the same answer.

A body **keeps** what it builds when it writes something that outlives the call: an
attribute (``self.x = ...``, ``setattr(...)``), an item of an attribute or of a
module-level container (``self.cache[k] = ...``, ``_CACHE[k] = ...``, or through a
method of the class it calls: ``self._capture(key)`` storing ``self.graphs[key]``), or a
name the function declares ``global`` or ``nonlocal``. Filling a local or a parameter keeps nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from ...source.functions import cleared_once, filled_by_methods
from .base import FileContext

if TYPE_CHECKING:
    from tree_sitter import Node

_EXITS = frozenset({"return_statement", "raise_statement"})
_ASSIGNMENTS = frozenset({"assignment", "augmented_assignment"})
_SCOPES = frozenset({"function_definition", "class_definition", "lambda"})
_TARGET_LISTS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"})


@dataclass(frozen=True)
class GuardBody:
    """What one ``if`` (or ``elif``) body does, its nested functions left out."""

    exits: bool  # its last statement returns or raises
    attributes: frozenset[str]  # attribute names it assigns: ``x`` of ``self.x = ...``
    containers: frozenset[str]  # kept containers whose items it assigns, as written: ``self.cache``, ``_CACHE``
    globals: frozenset[str]  # names it assigns that the function declares global or nonlocal
    calls_setattr: bool
    filled: frozenset[str] = frozenset()  # every container whose items it assigns, locals included
    # Containers that methods called on ``self`` after the ``if``, in its own block, fill:
    # ``if key in self.graphs: return key`` ... ``self._capture(key)``.
    filled_after: frozenset[str] = frozenset()

    @property
    def keeps_state(self) -> bool:
        return bool(self.attributes or self.containers or self.globals or self.calls_setattr)


def guard_body(branch: cst.If, ctx: FileContext) -> GuardBody | None:
    """The body of ``branch``, found in the whole file by where its test starts; None
    when the file's tree has no such branch there."""
    cache: dict[int, GuardBody | None] = ctx.__dict__.setdefault("_guard_bodies", {})
    if id(branch) not in cache:
        cache[id(branch)] = _read(branch, ctx)
    return cache[id(branch)]


def _read(branch: cst.If, ctx: FileContext) -> GuardBody | None:
    span = ctx.span(branch.test)
    # Only ``if``/``elif`` and blanks precede a test on its line: columns are byte columns.
    point = (span.line - 1, span.column - 1)
    node: Node | None = ctx.model.tree.root_node.descendant_for_point_range(point, point)
    while node is not None and node.type not in ("if_statement", "elif_clause"):
        node = node.parent
    if node is None:
        return None
    condition, block = node.child_by_field_name("condition"), node.child_by_field_name("consequence")
    if condition is None or block is None or condition.start_point[0] != point[0]:
        return None
    statements = [child for child in block.named_children if child.type != "comment"]
    attributes: set[str] = set()
    items: list[Node] = []  # containers whose items the body assigns
    names: set[str] = set()
    calls_setattr = False
    for inner in _own_nodes(block):
        if inner.type in _ASSIGNMENTS:
            for target in _targets(inner.child_by_field_name("left")):
                if target.type == "attribute":
                    attributes.add(_text(target.child_by_field_name("attribute")))
                elif target.type == "subscript":
                    container = target.child_by_field_name("value")
                    if container is not None:
                        items.append(container)
                elif target.type == "identifier":
                    names.add(_text(target))
        elif inner.type == "call":
            calls_setattr = calls_setattr or _text(inner.child_by_field_name("function")) == "setattr"
    # The function's own names are read only when the body writes names or items.
    function = _enclosing_function(node) if items or names else None
    declared = _declared_global(function) if function is not None else frozenset()
    local = _bound_names(function) - declared if function is not None and items else frozenset()
    return GuardBody(
        exits=bool(statements) and statements[-1].type in _EXITS,
        attributes=frozenset(attributes),
        # A method the body calls on ``self`` that fills ``self.graphs[key]`` keeps it too.
        containers=frozenset(_text(c) for c in items if _kept_container(c, local)) | filled_by_methods(statements),
        globals=frozenset(names & declared),
        calls_setattr=calls_setattr,
        filled=frozenset(_text(c) for c in items),
        filled_after=filled_by_methods(_following(node)) if statements and statements[-1].type in _EXITS else frozenset(),
    )


def cleared_before_exit(statement: cst.CSTNode, pending: str, ctx: FileContext) -> bool:
    """``statement`` of a function's body and those after it, read in the whole file,
    clear ``pending`` before any exit (``source.functions.cleared_once``): they run on one
    call, which closes a guard before them (``if _save_path is None: return`` ...
    ``_save_path = None``)."""
    span = ctx.span(statement)
    point = (span.line - 1, span.column - 1)
    node: Node | None = ctx.model.tree.root_node.descendant_for_point_range(point, point)
    while node is not None and not (node.parent is not None and node.parent.type == "block"
                                    and node.parent.parent is not None and node.parent.parent.type == "function_definition"):
        node = node.parent
    if node is None or node.parent is None or node.parent.parent is None:
        return False
    statements = []
    sibling: Node | None = node
    while sibling is not None:
        statements.append(sibling)
        sibling = sibling.next_named_sibling
    return cleared_once(statements, pending, node.parent.parent)


def _following(node: Node) -> list[Node]:
    """The statements after the ``if`` statement ``node`` belongs to, in its own block."""
    statement = node if node.type == "if_statement" else node.parent
    found: list[Node] = []
    sibling = statement.next_named_sibling if statement is not None else None
    while sibling is not None:
        found.append(sibling)
        sibling = sibling.next_named_sibling
    return found


def _kept_container(container: Node, local: frozenset[str]) -> bool:
    """An attribute (or an item of one), or a name the function neither takes nor binds."""
    root = container
    while root.type in ("subscript", "attribute"):
        if root.type == "attribute":
            return True
        value = root.child_by_field_name("value")
        if value is None:
            return False
        root = value
    return root.type == "identifier" and _text(root) not in local


def _targets(left: Node | None) -> Iterator[Node]:
    """The single targets of an assignment's left side, tuples and lists unpacked."""
    if left is None:
        return
    if left.type in _TARGET_LISTS:
        for element in left.named_children:
            yield from _targets(element)
    elif left.type == "list_splat_pattern":
        yield from _targets(left.named_children[0] if left.named_children else None)
    else:
        yield left


def _own_nodes(node: Node) -> Iterator[Node]:
    """``node``'s descendants, those of functions, classes and lambdas defined in it left out."""
    for child in node.named_children:
        yield child
        if child.type not in _SCOPES:
            yield from _own_nodes(child)


def _enclosing_function(node: Node) -> Node | None:
    current = node.parent
    while current is not None and current.type != "function_definition":
        current = current.parent
    return current


def _declared_global(function: Node) -> frozenset[str]:
    body = function.child_by_field_name("body")
    return frozenset(
        _text(name) for statement in (_own_nodes(body) if body is not None else ())
        if statement.type in ("global_statement", "nonlocal_statement")
        for name in statement.named_children if name.type == "identifier"
    )


def _bound_names(function: Node) -> frozenset[str]:
    """The function's parameters and the plain names its own code assigns."""
    names: set[str] = set()
    parameters = function.child_by_field_name("parameters")
    for parameter in parameters.named_children if parameters is not None else ():
        name = parameter if parameter.type == "identifier" else parameter.child_by_field_name("name")
        if name is None and parameter.named_children:  # ``*args``, ``**kwargs``
            name = parameter.named_children[0]
        if name is not None and name.type == "identifier":
            names.add(_text(name))
    body = function.child_by_field_name("body")
    for inner in _own_nodes(body) if body is not None else ():
        if inner.type in _ASSIGNMENTS:
            names.update(_text(t) for t in _targets(inner.child_by_field_name("left")) if t.type == "identifier")
    return frozenset(names)


def _text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass") if node is not None else ""
