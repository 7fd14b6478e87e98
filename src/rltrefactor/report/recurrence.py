"""Whether code iterates a recurrence: the evidence that a change touches a looped
(recurrent-depth) engine, for the PR summary's loop-semantics checklist.

Evidence is structural, never a name: a ``for ... in range(...)`` or ``while`` loop whose
body passes a value it also assigns to the same block each time round, the value carried
from one iteration into the next (``for d in range(n): h = block(h)``). Left alone: a
layer stack (``for layer in layers: h = layer(h)``, ``self.layers[i](h)``: the callee
changes with the loop), accumulators (``buf = torch.cat([buf, x])``, ``best = max(best,
s)``: library functions and builtins are not blocks), methods of the value itself
(``x = x.view(...)``), a value made afresh each time round, and keywords such as
``depth=32`` outside any loop.
"""

from __future__ import annotations

import ast
import builtins
from typing import Iterable

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


def changes_recurrence(files: Iterable[tuple[str, frozenset[int] | None]]) -> bool:
    """Whether a changed line of one of ``files`` (text, changed lines; None: every line)
    lies in a definition that iterates a recurrence."""
    for text, lines in files:
        for first, last in recurrence_spans(text):
            if lines is None or any(first <= line <= last for line in lines):
                return True
    return False


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
    if isinstance(loop, ast.While):
        loop_names: set[str] = set()
    elif _counts(loop.iter):
        loop_names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    else:
        return False  # a loop over items: a layer stack or a batch, not depths
    body = [node for stmt in loop.body for node in _walk_scope(stmt)]
    assigned = _first_assignments(body)
    for call in (node for node in body if isinstance(node, ast.Call)):
        callee = {n.id for n in ast.walk(call.func) if isinstance(n, ast.Name)}
        root = _root(call.func)
        if root is None or callee & loop_names or root in modules or root in _BUILTINS:
            continue
        for name in _argument_names(call):
            # Read here, written at or after this point: last iteration's value comes in.
            if name in assigned and name != root and assigned[name] >= call.lineno:
                return True
    return False


def _counts(iterable: ast.expr) -> bool:
    """``range(...)``: a loop that counts (depths, steps), not one over items."""
    return isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range"


def _walk_scope(node: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk`` that does not enter nested functions, classes or lambdas."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, _SCOPES):
            yield from _walk_scope(child)


def _first_assignments(body: list[ast.AST]) -> dict[str, int]:
    """Line of each name's first assignment in the loop body."""
    first: dict[str, int] = {}
    for node in body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for name in (n for n in ast.walk(target) if isinstance(n, ast.Name)):
                first[name.id] = min(first.get(name.id, node.lineno), node.lineno)
    return first


def _argument_names(call: ast.Call) -> set[str]:
    values = [*call.args, *(keyword.value for keyword in call.keywords)]
    return {n.id for value in values for n in ast.walk(value) if isinstance(n, ast.Name)}


def _root(func: ast.expr) -> str | None:
    """The name a call's callee starts from: ``self`` of ``self.model.run``."""
    while isinstance(func, (ast.Attribute, ast.Subscript, ast.Call)):
        func = func.func if isinstance(func, ast.Call) else func.value
    return func.id if isinstance(func, ast.Name) else None
