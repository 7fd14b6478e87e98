"""Modules of a file built as a stack and run by a loop that threads a state through them.

``self.layers = nn.ModuleList([Block(cfg, i) for i in range(n)])`` and, in the same file,
``for layer in self.layers: h = layer(h)``: each ``Block`` of the stack is called once per
iteration, so ``Block``'s ``__call__`` (its ``forward`` when it defines none, as
``torch.nn.Module`` dispatches) runs once per layer. The file must show that every
``Block`` it builds is an element of such a stack (a ``Block`` built elsewhere, as a final
layer say, runs once per step), and that no element is called outside a threading loop
(``self.layers[0](h)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Mapping

from ....source import treesitter
from .threading_loops import LayerLoop, enclosing_function, names, node_text, threading_targets

if TYPE_CHECKING:
    from tree_sitter import Node

    from ....context.filemodel import FileModel


def stack_entry_loops(model: FileModel, function_nodes: dict[int, str]) -> dict[str, list[LayerLoop]]:
    """Qualified name of a stacked class's entry method -> the threading loops that call its elements."""
    text = model.text
    if "for " not in text or "self." not in text:
        return {}
    classes = {site.name: site for site in model.definitions.sites if site.definition.kind == "class"}
    if not classes:
        return {}
    captured = _captures(model.tree.root_node)
    stacks: dict[str, str] = {}  # attribute -> class name of its elements
    mixed: set[str] = set()
    built_in_stacks: dict[str, int] = {}
    for attribute, element_class in _stack_assignments(captured, classes):
        if stacks.setdefault(attribute, element_class) != element_class:
            mixed.add(attribute)
        built_in_stacks[element_class] = built_in_stacks.get(element_class, 0) + 1
    for attribute in mixed:
        del stacks[attribute]
    if not stacks:
        return {}
    captured.update(_captures(model.tree.root_node, _SELF_QUERY))
    loops: dict[str, list[LayerLoop]] = {}
    for attribute, element_class in stacks.items():
        if _instances(captured, element_class) != built_in_stacks.get(element_class, 0):
            continue  # built outside a stack too
        found = list(_element_calls(captured, attribute, function_nodes))
        if not found or any(loop is None for loop in found):
            continue
        entry = _entry(model, classes[element_class].definition.qualname)
        if entry is not None:
            loops.setdefault(entry, []).extend(loop for loop in found if loop is not None)
    return loops


def _stack_assignments(captured: Mapping[str, list[Node]], classes: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    """(attribute, class) for each ``self.attribute = ...[Class(...) for ...]...`` of the file."""
    for node in captured.get("comprehension", []):
        body = node.child_by_field_name("body")
        if body is None or body.type != "call":
            continue
        function = body.child_by_field_name("function")
        if function is None or function.type != "identifier" or node_text(function) not in classes:
            continue
        statement = node.parent
        while statement is not None and statement.type in ("argument_list", "call", "list", "parenthesized_expression"):
            statement = statement.parent
        if statement is None or statement.type != "assignment":
            continue
        target = statement.child_by_field_name("left")
        if target is not None and target.type == "attribute" and node_text(target.child_by_field_name("object")) == "self":
            yield node_text(target.child_by_field_name("attribute")), node_text(function)


def _instances(captured: Mapping[str, list[Node]], class_name: str) -> int:
    """How many calls of ``class_name`` the file makes."""
    return sum(1 for node in captured.get("called", []) if node_text(node) == class_name)


def _element_calls(captured: Mapping[str, list[Node]], attribute: str, function_nodes: dict[int, str]) -> Iterator[LayerLoop | None]:
    """For each call of an element of ``self.attribute``: the threading loop it is made in, or None."""
    for node in captured.get("self_attribute", []):
        if node_text(node.child_by_field_name("attribute")) != attribute:
            continue
        parent = node.parent
        if parent is not None and parent.type == "subscript" and parent.parent is not None and parent.parent.type == "call" \
                and parent.parent.child_by_field_name("function") == parent:
            yield None  # ``self.layers[0](h)``: one element, once
            continue
        loop = _walking_loop(node)
        if loop is None:
            continue
        element = _element_name(loop)
        body = loop.child_by_field_name("body")
        for function in captured.get("called", []):
            if element is None or body is None or not body.start_byte <= function.start_byte < body.end_byte \
                    or node_text(function) != element or function.parent is None:
                continue
            call = function.parent
            holder = enclosing_function(call)
            caller = function_nodes.get(holder.id) if holder is not None else None
            carried = threading_targets(call)
            yield LayerLoop(caller, node_text(loop.child_by_field_name("right")), carried, (), True) \
                if caller is not None and carried else None


def _walking_loop(attribute: Node) -> Node | None:
    """The ``for`` statement whose iterable is ``self.x``, ``enumerate(self.x)`` or ``self.x[a:b]``."""
    node = attribute.parent
    if node is not None and node.type == "subscript":
        node = node.parent
    if node is not None and node.type == "argument_list" and node.parent is not None \
            and node_text(node.parent.child_by_field_name("function")) == "enumerate":
        node = node.parent.parent
    elif node is not None and node.type != "for_statement":
        return None
    if node is None or node.type != "for_statement":
        return None
    iterable = node.child_by_field_name("right")
    return node if iterable is not None and iterable.start_byte <= attribute.start_byte < iterable.end_byte else None


def _element_name(loop: Node) -> str | None:
    """The loop variable bound to the element: ``layer`` in ``for layer in`` or ``for i, layer in enumerate(...)``."""
    bound = names(loop.child_by_field_name("left"))
    return bound[-1] if bound else None


def _entry(model: FileModel, class_qualname: str) -> str | None:
    """The method a call of an instance runs: ``__call__``, else ``forward``."""
    methods = {site.name: site.definition.qualname for site in model.definitions.functions if site.owner == class_qualname}
    return methods.get("__call__") or methods.get("forward")


_QUERY = """
(list_comprehension body: (call function: (identifier))) @comprehension
(generator_expression body: (call function: (identifier))) @comprehension
(call function: (identifier) @called)
"""
# Asked only of files that build a stack: the predicate runs in Python, per attribute.
_SELF_QUERY = """(attribute object: (identifier) @_self (#eq? @_self "self")) @self_attribute"""


def _captures(root: Node, source: str = _QUERY) -> dict[str, list[Node]]:
    """The nodes of the file's tree captured by the query ``source``, by capture name, in source order."""
    found = treesitter.captures(source, root)
    return {name: sorted(nodes, key=lambda node: node.start_byte) for name, nodes in found.items()}
