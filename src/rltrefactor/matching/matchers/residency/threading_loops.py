"""The loops that thread a state through the calls they make, as the tree-sitter tree shows them.

Shared by ``layer_loops`` (helpers called by name) and ``module_stacks`` (modules called as
the elements of a stack): a loop runs its callee once per element and hands each call's
result to the next one when the call's result rebinds a name given to it directly
(``h = f(block, h)``, ``a, b = layer(a, b)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node


@dataclass(frozen=True)
class LayerLoop:
    """Why a function runs once per iteration: the loop that calls it, directly or through helpers."""

    caller: str  # qualified name of the function holding the loop
    iterable: str  # the loop's iterable, as written
    carried: tuple[str, ...]  # the names the threading call rebinds
    through: tuple[str, ...]  # the per-iteration helpers between the loop and the function
    hands_element: bool = True  # the call is given the loop's element (``block``, ``blocks[i]``)



def threading_targets(call: Node) -> tuple[str, ...]:
    """The names ``call``'s result rebinds that are also given to it directly: ``x = f(..., x, ...)``,
    ``a, b = f(a, b=b)``; empty when the call is not the whole right side of an assignment."""
    statement = call.parent
    if statement is None or statement.type != "assignment" or statement.child_by_field_name("right") != call:
        return ()
    targets = names(statement.child_by_field_name("left"))
    arguments = call.child_by_field_name("arguments")
    given: set[str] = set()
    for argument in arguments.named_children if arguments is not None else []:
        value = argument.child_by_field_name("value") if argument.type == "keyword_argument" else argument
        if value is not None and value.type == "identifier":
            given.add(node_text(value))
    return tuple(name for name in targets if name in given)


def names(target: Node | None) -> list[str]:
    """The plain names a binding target binds (``x``, ``a, b``, ``(a, b)``); none for subscripts or attributes."""
    if target is None:
        return []
    if target.type == "identifier":
        return [node_text(target)]
    if target.type in ("pattern_list", "tuple_pattern", "expression_list", "tuple"):
        return [name for child in target.named_children for name in names(child)]
    return []


def enclosing_function(node: Node) -> Node | None:
    current = node.parent
    while current is not None:
        if current.type == "function_definition":
            return current
        if current.type == "class_definition":
            return None
        current = current.parent
    return None


def node_text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""
