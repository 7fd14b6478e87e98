"""Whether code iterates a recurrence: the evidence that a change touches a looped
(recurrent-depth) engine, for the PR summary's loop-semantics checklist.

Evidence is structural, never a name: a ``for ... in range(...)`` or ``while`` loop whose
body passes a value to the same block each time round and replaces that value with the
block's result, directly or through one name (``for d in range(n): h = block(h)``;
``out = block(h); h = torch.where(done, h, out)``). Left alone: a
layer stack (``for layer in layers: h = layer(h)``, ``self.layers[i](h)``: the callee
changes with the loop), accumulators (``buf = torch.cat([buf, x])``, ``best = max(best,
s)``: library functions and builtins are not blocks), methods of the value itself
(``x = x.view(...)``), writes into a buffer slot (``out[i] = model(x[i])``), a counter
passed along (``Query(i, offset=offset); offset += n``), and keywords such as ``depth=32``.
"""

from __future__ import annotations

import ast
import builtins
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_BUILTINS = frozenset(dir(builtins))


def recurrence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Line spans (first, last) of the definitions holding a recurrence loop, or of the
    loop itself at module level; () for a file that does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    modules = _module_names(tree)
    spans: list[tuple[int, int]] = []
    for holder, loop in _loops(tree, None):
        if _is_recurrence(loop, modules):
            node = holder if holder is not None else loop
            spans.append((node.lineno, node.end_lineno or node.lineno))
    return tuple(spans)


def changes_recurrence(
    files: Iterable[tuple[str, frozenset[int] | None]], *, tree_of: Callable[[str], Tree] | None = None
) -> bool:
    """Whether a changed line of one of ``files`` (text, changed lines; None: every line)
    lies in a definition that iterates a recurrence. ``tree_of``: the tree-sitter tree of
    a text, where the caller already has it (parsed here otherwise)."""
    for text, lines in files:
        focus = text if lines is None else _around(text, lines, tree_of(text) if tree_of is not None else None)
        for first, last in recurrence_spans(focus):
            if lines is None or any(first <= line <= last for line in lines):
                return True
    return False


def _around(text: str, lines: frozenset[int], tree: Tree | None = None) -> str:
    """``text`` with only the imports and the top-level statements (in a class: the
    members) holding ``lines`` left; every other line is emptied, so line numbers hold.
    A definition holding no changed line cannot make the change touch a recurrence."""
    from ..source.syntax import parse_tree

    keep: set[int] = set()
    for node in (tree if tree is not None else parse_tree(text)).root_node.children:
        first, last = node.start_point[0] + 1, node.end_point[0] + 1
        if node.type in ("import_statement", "import_from_statement", "future_import_statement"):
            keep.update(range(first, last + 1))
        elif any(first <= line <= last for line in lines):
            keep.update(_kept_rows(node, lines))
    return "\n".join(line if number in keep else "" for number, line in enumerate(text.split("\n"), 1))


def _kept_rows(node: "Node", lines: frozenset[int]) -> range | set[int]:
    """Rows of a top-level statement to keep: a class's header and its members holding
    ``lines`` (the whole class when none does), anything else whole."""
    first, last = node.start_point[0] + 1, node.end_point[0] + 1
    holder = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
    body = holder.child_by_field_name("body") if holder is not None and holder.type == "class_definition" else None
    if body is None:
        return range(first, last + 1)
    members = [(m.start_point[0] + 1, m.end_point[0] + 1) for m in body.children]
    touched = [(a, b) for a, b in members if any(a <= line <= b for line in lines)]
    if not touched:
        return range(first, last + 1)
    kept = set(range(first, body.start_point[0] + 1))  # decorators and the class line
    for a, b in touched:
        kept.update(range(a, b + 1))
    return kept


_Holder = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
_Loop = ast.For | ast.AsyncFor | ast.While


def _loops(node: ast.AST, holder: _Holder | None) -> Iterable[tuple[_Holder | None, _Loop]]:
    """Every loop, with the innermost function or class holding it (None: the module)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _LOOPS):
            yield holder, child
        yield from _loops(child, child if isinstance(child, _SCOPES) else holder)


def _module_names(tree: ast.Module) -> frozenset[str]:
    """Names bound by ``import x`` / ``import x.y as z``: calls through them are library
    functions (``torch.cat``), not the engine's blocks."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


def _is_recurrence(loop: _Loop, modules: frozenset[str]) -> bool:
    """Whether a block call in the loop takes a value that its own result then replaces:
    ``h = block(h)``, or through one name, ``out = block(h); h = where(done, h, out)``."""
    if isinstance(loop, ast.While):
        loop_names: set[str] = set()
    elif _counts(loop.iter):
        loop_names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    else:
        return False  # a loop over items: a layer stack or a batch, not depths
    assignments = [
        (_bare_targets(node), node.value)
        for stmt in loop.body for node in _walk_scope(stmt)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None
    ]
    for targets, value in assignments:
        fed = set().union(*(_fed(call, loop_names, modules) for call in ast.walk(value) if isinstance(call, ast.Call)))
        # The names that then carry the block's result: its targets, and names set from them.
        carried = targets | {name for later, later_value in assignments if _names(later_value) & targets for name in later}
        if fed & carried - loop_names:
            return True
    return False


def _fed(call: ast.Call, loop_names: set[str], modules: frozenset[str]) -> set[str]:
    """Names a call passes to a block: the same callee each time round, not a library
    function, a builtin or a method of the value passed."""
    root = _root(call.func)
    callee = _names(call.func)
    if root is None or callee & loop_names or root in modules or root in _BUILTINS:
        return set()
    return _names(*call.args, *(keyword.value for keyword in call.keywords)) - {root}


def _bare_targets(node: ast.Assign | ast.AugAssign | ast.AnnAssign) -> set[str]:
    """Names an assignment rebinds (``h``, ``h, cache``), not names inside ``x[i] = ...``."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    found: set[str] = set()
    for target in targets:
        stack = [target]
        while stack:
            item = stack.pop()
            if isinstance(item, ast.Name):
                found.add(item.id)
            elif isinstance(item, (ast.Tuple, ast.List)):
                stack.extend(item.elts)
            elif isinstance(item, ast.Starred):
                stack.append(item.value)
    return found


def _names(*nodes: ast.AST) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _counts(iterable: ast.expr) -> bool:
    """``range(...)``: a loop that counts (depths, steps), not one over items."""
    return isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range"


def _walk_scope(node: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk`` that does not enter nested functions, classes or lambdas."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, _SCOPES):
            yield from _walk_scope(child)


def _root(func: ast.expr) -> str | None:
    """The name a call's callee starts from: ``self`` of ``self.model.run``."""
    while isinstance(func, (ast.Attribute, ast.Subscript, ast.Call)):
        func = func.func if isinstance(func, ast.Call) else func.value
    return func.id if isinstance(func, ast.Name) else None
