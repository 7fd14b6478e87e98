"""Where the host has already waited for the device before a statement of a function.

``copy_done.synchronize()``, ``torch.cuda.synchronize()``, ``stream.synchronize()``: the
host blocks there until the device work queued before it is done. A read after it, in the
same function and on every path to the read, of a value that existed before the wait,
adds no wait of its own: the engine chose where the host waits, as SGLang's result
processing does after the step's copies (``if result.copy_done is not None:
result.copy_done.synchronize()``, then ``result.next_token_ids.tolist()``).

A value assigned from a call between the wait and the read is new work the read may wait
for, and so is one a loop around the read assigns from a call; an alias (``ids =
result.next_token_ids``) is not. A wait under a condition counts only when the condition
tests what is waited on (``if done is not None: done.synchronize()``): under any other
condition (a debug flag) the read is not covered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

_FUNCTIONS = frozenset({"function_definition", "decorated_definition", "lambda", "class_definition"})
_LOOPS = frozenset({"for_statement", "while_statement"})
_BLOCKS = frozenset({"block", "module"})


def waited_before(tree: Tree, line: int, byte_column: int, roots: frozenset[str]) -> bool:
    """Whether the host waits for the device on every path of the enclosing function to
    the statement at ``line`` (1-based) and ``byte_column`` (0-based) before it runs, with
    none of ``roots`` (the names the read starts from) assigned from a call since."""
    point = (line - 1, byte_column)
    statement = _statement(tree.root_node.descendant_for_point_range(point, point))
    while statement is not None:
        sibling = statement.prev_named_sibling
        while sibling is not None:
            if _waits(sibling):
                return True
            if _assigns_from_call(sibling, roots):
                return False
            sibling = sibling.prev_named_sibling
        statement = _statement(statement.parent)
        if statement is None or statement.type in _FUNCTIONS:
            return False
        if statement.type in _LOOPS and _assigns_from_call(statement, roots):
            return False  # a later iteration reads what the last one made
    return False


def _statement(node: Node | None) -> Node | None:
    """The statement holding ``node``: the nearest node whose parent is a block."""
    while node is not None and (node.parent is None or node.parent.type not in _BLOCKS):
        node = node.parent
    return node if node is not None and node.parent is not None else None


def _waits(statement: Node) -> bool:
    receiver = _synchronized(statement)
    if receiver is not None:
        return True
    if statement.type != "if_statement" or statement.child_by_field_name("alternative") is not None:
        return False
    condition, body = statement.child_by_field_name("condition"), statement.child_by_field_name("consequence")
    if condition is None or body is None:
        return False
    tested = _text(condition)
    return any((receiver := _synchronized(inner)) is not None and receiver in tested for inner in body.named_children)


def _synchronized(statement: Node) -> str | None:
    """The receiver of ``receiver.synchronize()`` when the statement is only that call."""
    if statement.type != "expression_statement" or statement.named_child_count != 1:
        return None
    call = statement.named_children[0]
    if call.type != "call":
        return None
    function, arguments = call.child_by_field_name("function"), call.child_by_field_name("arguments")
    if function is None or function.type != "attribute" or arguments is None or arguments.named_child_count:
        return None
    name, receiver = function.child_by_field_name("attribute"), function.child_by_field_name("object")
    if name is None or receiver is None or _text(name) != "synchronize":
        return None
    return _text(receiver)


def _assigns_from_call(node: Node, roots: frozenset[str]) -> bool:
    """Some assignment in ``node`` binds one of ``roots`` to a value holding a call."""
    for assignment in _assignments(node):
        left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
        if left is None or right is None or not _has_call(right):
            continue
        if any(_text(name) in roots for name in _identifiers(left)):
            return True
    return False


def _assignments(node: Node) -> Iterator[Node]:
    if node.type in ("assignment", "augmented_assignment"):
        yield node
    for child in node.named_children:
        if child.type not in _FUNCTIONS:
            yield from _assignments(child)


def _identifiers(target: Node) -> Iterator[Node]:
    """The names a target binds: ``a``, ``a, b``, ``(a, [b, c])``; not ``a.x`` or ``a[i]``."""
    if target.type == "identifier":
        yield target
    elif target.type in ("pattern_list", "tuple_pattern", "list_pattern", "expression_list", "tuple", "list", "list_splat_pattern"):
        for child in target.named_children:
            yield from _identifiers(child)


def _has_call(node: Node) -> bool:
    return node.type == "call" or any(_has_call(child) for child in node.named_children)


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""
