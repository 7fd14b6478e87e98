"""Kernels a module defines that accumulate into their arguments, read from its content.

A kernel that updates an output with an atomic (``tl.atomic_add(counts_ptr + i, 1)``)
adds to what the buffer holds: the zeros its caller fills the buffer with are its
starting value, not a wasted pass. Read once per file from the tree-sitter tree, so a
matcher looking at one function can ask about a kernel defined elsewhere in the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Mapping

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

# A call whose callee's last part is ``atomic_<op>`` (Triton's ``tl.atomic_add``, CUDA
# Python's ``cuda.atomic.add`` reads as ``atomic.add`` and is matched too).
_ATOMIC_CALLEE = re.compile(r"(?:^|\.)atomic(?:_\w+|\.\w+)$")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class AccumulatingKernel:
    """A top-level function whose body updates some of its parameters atomically."""

    params: tuple[str, ...]  # in order, so positional arguments map onto them
    accumulated: frozenset[str]  # the parameters an atomic call's target mentions


def accumulating_kernels(tree: Tree) -> Mapping[str, AccumulatingKernel]:
    """Top-level functions (decorated or not) with at least one atomic update of a parameter."""
    found: dict[str, AccumulatingKernel] = {}
    for statement in tree.root_node.children:
        function = statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement
        if function is None or function.type != "function_definition":
            continue
        name, params, body = (function.child_by_field_name(f) for f in ("name", "parameters", "body"))
        if name is None or params is None or body is None:
            continue
        names = tuple(_parameter_names(params))
        targets = {word for call in _atomic_calls(body) for word in _IDENTIFIER.findall(_first_argument(call))}
        accumulated = frozenset(targets & set(names))
        if accumulated:
            found[_text(name)] = AccumulatingKernel(names, accumulated)
    return found


def _parameter_names(params: Node) -> Iterator[str]:
    for child in params.named_children:
        if child.type == "identifier":
            yield _text(child)
        else:
            first = child.named_children[0] if child.named_children else None
            if first is not None and first.type == "identifier":
                yield _text(first)


def _atomic_calls(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "call":
            callee = current.child_by_field_name("function")
            if callee is not None and _ATOMIC_CALLEE.search(_text(callee).replace(" ", "")):
                yield current
        stack.extend(current.children)


def _first_argument(call: Node) -> str:
    arguments = call.child_by_field_name("arguments")
    first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    return _text(first) if first is not None else ""


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""
