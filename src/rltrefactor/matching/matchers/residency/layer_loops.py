"""Functions of a file that run once per iteration of a loop that threads a state through them.

A loop such as ``for block in blocks: hidden = self._block(block, hidden)`` runs the
callee once per element and hands each call's result to the next one: a stack of layers
(or of any repeated stage) applied to one carried value. Work inside the callee that
depends neither on the loop element nor on the carried values is the same in every
iteration, and belongs before the loop.

A function is **per-iteration** when the file shows it so (callers in other modules may
also run it once per step; the loop the file shows still runs it once per element):

- the file never names it except to call it (``self._block(...)`` / ``_block(...)``):
  a function handed on as a value (``checkpoint(self._block, h)``) runs where the
  receiver decides;
- it is called at least once, and each call is either the threading call of a ``for``
  loop of its caller (``x = f(..., x, ...)``, ``a, b = f(..., a, b)``: the call's result
  rebinds a name given to it directly), the call of an element of a module stack
  (``module_stacks``: the entry method of the stacked class), or made by a per-iteration
  function;
- one of those loops hands the call the element it walks (``f(block, h)`` in ``for block in
  blocks``, ``f(blocks[i], h)``): the loop applies a sequence of stages, not a number of
  steps (``for _ in range(n): tokens = decode(tokens)``, whose state may grow each time).

Read from the file's one tree-sitter tree (``FileModel.tree``), so a matcher that sees a
region of the file still knows every caller. Methods are keyed ``Class.name`` (called as
``self.name``/``cls.name`` from that class), module functions by their name; nested
functions and dunders (but a stacked class's ``__call__``) are never per-iteration.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from .module_stacks import stack_entry_loops
from .threading_loops import LayerLoop, enclosing_function, names, node_text, threading_targets

if TYPE_CHECKING:
    from tree_sitter import Node

    from ....context.filemodel import FileModel


_CACHE: "weakref.WeakKeyDictionary[FileModel, Mapping[str, LayerLoop]]" = weakref.WeakKeyDictionary()
_WORD = re.compile(rb"[A-Za-z_]\w*")
_TOO_DEEP = 8  # helper chains longer than this are not followed


def per_iteration_functions(model: FileModel) -> Mapping[str, LayerLoop]:
    """Qualified name -> the loop that runs it, for every per-iteration function of the file."""
    found = _CACHE.get(model)
    if found is None:
        found = _CACHE[model] = _find(model)
    return found


@dataclass
class _Site:
    caller: str | None  # qualified name of the calling function; None at module or class level
    loop: LayerLoop | None  # set when the call threads a state through a loop of the caller


def _find(model: FileModel) -> Mapping[str, LayerLoop]:
    if "for " not in model.text:
        return {}
    keys: dict[str, str] = {}  # callee key -> qualified name
    function_nodes: dict[int, str] = {}  # function_definition node id -> qualified name
    for site in model.definitions.functions:
        function_nodes[site.node.id] = site.definition.qualname
        if site.parent is not None or (site.name.startswith("__") and site.name.endswith("__")):
            continue
        keys[f"{site.owner}.{site.name}" if site.owner else site.name] = site.definition.qualname
    stacked = stack_entry_loops(model, function_nodes)
    for qualname in stacked:
        keys[qualname] = qualname  # a method's key is its class's qualified name and its own
    if not keys:
        return {}
    sites: dict[str, list[_Site]] = {key: [] for key in keys}
    escaped: set[str] = set()
    _read_references(model.tree.root_node, keys, sites, escaped, function_nodes)
    for qualname, element_loops in stacked.items():
        sites[qualname].extend(_Site(loop.caller, loop) for loop in element_loops)
    loops: dict[str, LayerLoop] = {}
    for key, qualname in keys.items():
        loop = _loop_of(key, sites, escaped, keys, 0)
        if loop is not None:
            loops[qualname] = loop
    return loops


def _loop_of(key: str, sites: dict[str, list[_Site]], escaped: set[str], keys: dict[str, str], depth: int) -> LayerLoop | None:
    """The loop every call of ``key`` runs in (the first caller's, for the evidence); None when one does not."""
    calls = sites.get(key, [])
    if key in escaped or not calls or depth > _TOO_DEEP:
        return None
    found: list[LayerLoop] = []
    for site in calls:
        loop = site.loop
        if loop is None and site.caller is not None:
            caller_key = next((k for k, q in keys.items() if q == site.caller), None)
            inner = _loop_of(caller_key, sites, escaped, keys, depth + 1) if caller_key is not None else None
            if inner is not None:
                loop = LayerLoop(inner.caller, inner.iterable, inner.carried, (*inner.through, site.caller))
        if loop is None:
            return None
        found.append(loop)
    return next((loop for loop in found if loop.hands_element), None)


def _read_references(root: Node, keys: dict[str, str], sites: dict[str, list[_Site]], escaped: set[str],
                     function_nodes: dict[int, str]) -> None:
    """Every mention of a candidate in the file: a call (with its caller and loop) or an escape."""
    method_keys: dict[str, list[str]] = {}
    for candidate in keys:
        if "." in candidate:
            method_keys.setdefault(candidate.rpartition(".")[2], []).append(candidate)
    for node in _named_identifiers(root, {name.rpartition(".")[2] for name in keys}):
        if node.parent is not None and node.parent.type == "attribute" and node.parent.child_by_field_name("attribute") == node:
            node = node.parent
        key, others = _reference_key(node, keys, method_keys)
        escaped.update(others)
        if key is None:
            continue
        parent = node.parent
        if parent is not None and parent.type == "call" and parent.child_by_field_name("function") == node:
            function = enclosing_function(parent)
            caller = function_nodes.get(function.id) if function is not None else None
            sites[key].append(_Site(caller, _threading_loop(parent, function, caller)))
        elif not _is_definition_name(node):
            escaped.add(key)


def _named_identifiers(root: Node, names: set[str]) -> list[Node]:
    """Every identifier of the tree spelled as one of ``names``: found in the text, then placed in
    the tree (walking every node in Python costs far more on a large file)."""
    source = root.text or b""
    wanted = {name.encode() for name in names}
    offset = root.start_byte  # the module node starts at its first token, not at byte 0
    found = []
    for match in _WORD.finditer(source):  # one pass over the words: an alternation of many names backtracks
        if match.group() not in wanted:
            continue
        start, end = offset + match.start(), offset + match.end()
        node = root.named_descendant_for_byte_range(start, end)
        if node is not None and node.type == "identifier" and node.start_byte == start:
            found.append(node)
    return found


def _reference_key(node: Node, keys: dict[str, str], method_keys: dict[str, list[str]]) -> tuple[str | None, list[str]]:
    """The candidate ``node`` names (``self.m``/``cls.m`` inside a method of the class, a bare name of a module
    function), and the candidates it may name but not surely (``x.m`` of any other receiver: they escape)."""
    if node.type == "attribute":
        name = node_text(node.child_by_field_name("attribute"))
        if name not in method_keys:
            return None, []
        receiver = node.child_by_field_name("object")
        if receiver is not None and receiver.type == "identifier" and node_text(receiver) in ("self", "cls"):
            owner = _enclosing_class(node)
            if owner is not None and f"{owner}.{name}" in keys:
                return f"{owner}.{name}", []
        return None, method_keys[name]
    if node.type == "identifier" and node_text(node) in keys and (node.parent is None or node.parent.type != "attribute"
                                                              or node.parent.child_by_field_name("object") == node):
        return node_text(node), []
    return None, []


def _is_definition_name(node: Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "function_definition" and parent.child_by_field_name("name") == node


def _threading_loop(call: Node, function: Node | None, caller: str | None) -> LayerLoop | None:
    """The ``for`` loop of ``function`` whose body holds ``call`` as ``x = f(..., x, ...)``; None otherwise."""
    if function is None or caller is None:
        return None
    carried = threading_targets(call)
    statement = call.parent
    if not carried or statement is None:
        return None
    arguments = call.child_by_field_name("arguments")
    node = statement.parent
    while node is not None and node.id != function.id:
        if node.type == "for_statement":
            body = node.child_by_field_name("body")
            if body is not None and body.start_byte <= call.start_byte < body.end_byte:
                iterable = node.child_by_field_name("right")
                element = _hands_element(arguments, set(names(node.child_by_field_name("left"))), iterable)
                return LayerLoop(caller, node_text(iterable), carried, (), element)
        if node.type in ("function_definition", "lambda", "class_definition"):
            return None
        node = node.parent
    return None


def _hands_element(arguments: Node | None, element_names: set[str], iterable: Node | None) -> bool:
    """The call is given an element of the collection the loop walks: the loop variable itself
    (``for block in blocks: f(block, h)``), or anything indexed by it (``f(blocks[i], h)``). A
    ``range`` loop's counter alone is a number, not an element (``for step in range(n)``)."""
    counting = iterable is not None and iterable.type == "call" and node_text(iterable.child_by_field_name("function")) == "range"
    for argument in arguments.named_children if arguments is not None else []:
        value = argument.child_by_field_name("value") if argument.type == "keyword_argument" else argument
        if value is None:
            continue
        if value.type == "identifier" and not counting and node_text(value) in element_names:
            return True
        if value.type == "subscript" and any(
            child.type == "identifier" and node_text(child) in element_names
            for child in value.children_by_field_name("subscript")
        ):
            return True
    return False


def _enclosing_class(node: Node) -> str | None:
    """The name of the class whose method holds ``node`` (its own, not a nested function's)."""
    current = node.parent
    in_function = False
    while current is not None:
        if current.type == "function_definition":
            if in_function:
                return None  # a nested function's ``self`` is not the method's
            in_function = True
        if current.type == "class_definition":
            names = []
            outer: Node | None = current
            while outer is not None:
                if outer.type == "class_definition":
                    names.append(node_text(outer.child_by_field_name("name")))
                outer = outer.parent
            return ".".join(reversed(names))
        current = current.parent
    return None


