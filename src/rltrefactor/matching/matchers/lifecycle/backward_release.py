"""Module-level tables whose entries are added on every forward call and removed only
by code that runs in the backward pass.

A forward function (a custom op's implementation, ``autograd.Function.forward``, a
module's ``forward``) stores an object in a module-level dict under a new key, and the
only code that removes entries is a backward function: the one handed to
``register_autograd``, the ``backward`` of an ``autograd.Function`` subclass, or a
gradient hook (``register_hook`` and its relatives). Backward runs only when autograd
records the call and a loss is back-propagated through it: inference, ``no_grad``,
evaluation and activation-checkpoint recomputation run forward alone, and every such
call leaves one entry behind.

The evidence is read from the whole module (one ``ast`` parse per file text, cached),
since the table, the writer and the remover are separate top-level statements; the
hit is the store, in whatever region holds it. Where a value comes from is read from
calls and imports, never from names:

- the module imports ``torch`` (a plugin system's ``register_hook`` runs no backward);
- a table is a top-level name bound to ``{}``, ``dict()``, ``defaultdict(...)`` or
  ``OrderedDict()``;
- backward code is a function passed to ``torch.library.register_autograd`` (or a
  custom op's ``register_autograd`` method) as the backward, a method named
  ``backward`` of a class whose base resolves to ``torch.autograd.Function``, a
  function or lambda (or ``functools.partial`` of a function) passed to a gradient
  hook registration, and a module function every call of which lies in backward code;
- a table is reported only when it has removals (``pop``, ``popitem``, ``clear``,
  ``del t[k]``, a rebinding under ``global``) and every one of them lies in backward
  code;
- a store is ``t[key] = value`` inside a function that is not backward code and not a
  ``setup_context`` (which runs only when autograd records the call), with a key that
  is not a constant (a constant key bounds the table), and not only once a test of
  grad mode (``requires_grad``, ``is_grad_enabled``, ``needs_input_grad``,
  ``is_inference_mode_enabled``) passed: under such a test, or after an early
  ``return``/``raise`` on one, the entry is stored only when backward will run.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..options import Option

_TABLE_FACTORIES = frozenset({"dict", "collections.defaultdict", "collections.OrderedDict"})
_FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
_LIBRARY_REGISTRATION = "torch.library.register_autograd"
_GRADIENT_HOOKS = frozenset({
    "register_hook", "register_full_backward_hook", "register_backward_hook",
    "register_full_backward_pre_hook", "register_post_accumulate_grad_hook", "register_multi_grad_hook",
})  # fmt: skip
_GRAD_FACTS = frozenset({"requires_grad", "is_grad_enabled", "needs_input_grad", "is_inference_mode_enabled"})
_PARTIAL = frozenset({"functools.partial", "partial"})
_REMOVING_METHODS = frozenset({"pop", "popitem", "clear"})
_CODE_UNITS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# Words a module must hold for any of its code to run only in backward.
_BACKWARD_WORDS = ("autograd", "_hook")
# The end of ``name[...] = ...``: on the statement's last line when its key is wrapped.
_STORE = ("] =", "]=")


@dataclass(frozen=True)
class BackwardOnlyStore:
    """A store into a module-level table whose entries only backward code removes."""

    line: int  # file line of the ``table[key] = value`` statement
    table: str
    removers: tuple[str, ...]  # the backward functions that remove entries, in source order


# A top-level name bound to an empty dict or a dict factory, as written at column 0: most
# modules have none, and they are spared the whole-module parse.
_TOP_LEVEL_TABLE = re.compile(r"^[A-Za-z_]\w*[ \t]*(?::[^=\n]*)?=[ \t]*(?:\{[ \t]*\}|[\w.]*(?:dict|Dict)[ \t]*\()", re.MULTILINE)


def backward_only_stores(text: str) -> dict[int, BackwardOnlyStore]:
    """The stores of ``text``'s module that only backward code undoes, by file line."""
    if not any(word in text for word in _BACKWARD_WORDS) or _TOP_LEVEL_TABLE.search(text) is None:
        return {}
    return _stores(text)


@functools.lru_cache(maxsize=16)
def _stores(text: str) -> dict[int, BackwardOnlyStore]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    module = _Module(tree)
    if not module.imports_torch:  # ``register_hook`` of a plugin system runs no backward
        return {}
    found: dict[int, BackwardOnlyStore] = {}
    for table in module.tables:
        removers = module.backward_removers(table)
        if not removers:
            continue
        for store in module.stores(table):
            found[store.lineno] = BackwardOnlyStore(store.lineno, table, removers)
    return found


class _Module:
    """One parsed module: its import aliases, top-level tables and backward code."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.parents: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self.aliases = _aliases(tree)
        self.imports_torch = any(origin.split(".", 1)[0] == "torch" for origin in self.aliases.values())
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.tables = [name for statement in tree.body if (name := self._table(statement)) is not None]
        self.backward: dict[int, ast.AST] = {}
        self.recorded: set[int] = set()  # setup_context functions: run only when autograd records
        self._find_backward()

    def dotted(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def _table(self, statement: ast.stmt) -> str | None:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            return None
        if not isinstance(target, ast.Name):
            return None
        empty_literal = isinstance(value, ast.Dict) and not value.keys
        factory = isinstance(value, ast.Call) and self.dotted(value.func) in _TABLE_FACTORIES
        return target.id if empty_literal or factory else None

    def _find_backward(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef) and any(self.dotted(base) in _FUNCTION_BASES for base in node.bases):
                for member in node.body:
                    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name == "backward":
                        self.backward[id(member)] = member
            elif isinstance(node, ast.Call):
                self._registered(node)
        self._add_helpers_of_backward()

    def _registered(self, call: ast.Call) -> None:
        """Backward functions (and setup contexts) that ``call`` registers."""
        callee = self.dotted(call.func)
        last = callee.rsplit(".", 1)[-1] if callee is not None else None
        if last == "register_autograd":
            # torch.library.register_autograd(op, backward, ...); op.register_autograd(backward, ...)
            positional = call.args[1:2] if callee == _LIBRARY_REGISTRATION else call.args[:1]
            callbacks = [*positional, *(k.value for k in call.keywords if k.arg == "backward")]
            for keyword in call.keywords:
                if keyword.arg == "setup_context" and (unit := self._callback(keyword.value)) is not None:
                    self.recorded.add(id(unit))
        elif last in _GRADIENT_HOOKS:
            callbacks = [*call.args, *(k.value for k in call.keywords if k.arg in ("hook", "fn"))]
        else:
            return
        for argument in callbacks:
            if (unit := self._callback(argument)) is not None:
                self.backward[id(unit)] = unit

    def _callback(self, node: ast.expr) -> ast.AST | None:
        if isinstance(node, ast.Lambda):
            return node
        if isinstance(node, ast.Name):
            return self.functions.get(node.id)
        if isinstance(node, ast.Call) and self.dotted(node.func) in _PARTIAL and node.args:
            return self._callback(node.args[0])
        return None

    def _add_helpers_of_backward(self) -> None:
        """Module functions called only from backward code run only in backward."""
        uses: dict[str, list[ast.Name]] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id in self.functions:
                uses.setdefault(node.id, []).append(node)
        changed = True
        while changed:
            changed = False
            for name, function in self.functions.items():
                if id(function) in self.backward or not uses.get(name):
                    continue
                if all(self._is_call(use) and self.in_backward(use) for use in uses[name]):
                    self.backward[id(function)] = function
                    changed = True

    def _is_call(self, name: ast.Name) -> bool:
        parent = self.parents.get(id(name))
        return isinstance(parent, ast.Call) and parent.func is name

    def units(self, node: ast.AST) -> Iterator[ast.AST]:
        """The functions and lambdas around ``node``, innermost first."""
        current = self.parents.get(id(node))
        while current is not None:
            if isinstance(current, _CODE_UNITS):
                yield current
            current = self.parents.get(id(current))

    def in_backward(self, node: ast.AST) -> bool:
        return any(id(unit) in self.backward for unit in self.units(node))

    def backward_removers(self, table: str) -> tuple[str, ...]:
        """The backward functions removing ``table``'s entries, when only they do."""
        removers: list[str] = []
        for node in ast.walk(self.tree):
            if not self._removes(node, table):
                continue
            units = [unit for unit in self.units(node) if id(unit) in self.backward]
            if not units:
                return ()
            name = getattr(units[0], "name", "a gradient hook")
            if name not in removers:
                removers.append(name)
        return tuple(removers)

    def _removes(self, node: ast.AST, table: str) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return node.func.attr in _REMOVING_METHODS and _is_name(node.func.value, table)
        if isinstance(node, ast.Delete):
            return any(isinstance(t, ast.Subscript) and _is_name(t.value, table) for t in node.targets)
        if isinstance(node, ast.Global):  # rebinding the table from a function
            return table in node.names and self._rebinds(node, table)
        return False

    def _rebinds(self, declaration: ast.Global, table: str) -> bool:
        function = next(self.units(declaration), None)
        return function is not None and any(
            isinstance(n, ast.Assign) and any(_is_name(t, table) for t in n.targets) for n in ast.walk(function)
        )

    def stores(self, table: str) -> Iterator[ast.Assign]:
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Assign):
                continue
            keys = [t.slice for t in node.targets if isinstance(t, ast.Subscript) and _is_name(t.value, table)]
            if not keys or all(isinstance(key, ast.Constant) for key in keys):
                continue
            units = list(self.units(node))
            if not units or any(id(u) in self.backward or id(u) in self.recorded for u in units):
                continue
            if not self._grad_mode_guarded(node, units[0]):
                yield node

    def _grad_mode_guarded(self, store: ast.Assign, function: ast.AST) -> bool:
        """``store`` runs only when a test of grad mode passed: it sits under one, or
        after an ``if <grad test>: return`` (or ``raise``) earlier in ``function``."""
        current = self.parents.get(id(store))
        while current is not None and current is not function:
            if isinstance(current, (ast.If, ast.While)) and _reads_grad_mode(current.test):
                return True
            current = self.parents.get(id(current))
        body = getattr(function, "body", [])
        for statement in body if isinstance(body, list) else []:
            if statement.lineno >= store.lineno:
                break
            exits = isinstance(statement, ast.If) and isinstance(statement.body[-1], (ast.Return, ast.Raise))
            if exits and _reads_grad_mode(statement.test):
                return True
        return False


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _reads_grad_mode(test: ast.expr) -> bool:
    """``test`` reads whether autograd records the call (or will run backward)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute) and node.attr in _GRAD_FACTS:
            return True
        if isinstance(node, ast.Name) and node.id in _GRAD_FACTS:
            return True
    return False


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted origin, for the module's absolute imports."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    aliases[alias.asname] = alias.name
                else:
                    head = alias.name.split(".", 1)[0]
                    aliases[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module is not None and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


class EntryRemovedOnlyInBackward:
    """``table[key] = value`` on a forward path of a module-level table whose entries only backward code removes."""

    OPTIONS: ClassVar[dict[str, Option]] = {}
    # Every piece of evidence but the store is read from the whole file's text.
    reach = MatcherReach(reads="statement", hits_at_tokens=True)

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.prefilter: Prefilter = _STORE

    def find(self, ctx: FileContext) -> Iterator[Match]:
        stores = backward_only_stores(ctx.model.text)
        if not stores:
            return
        tables = {store.table for store in stores.values()}
        for assign in ctx.nodes(cst.Assign):
            if not any(_subscripted_name(t.target) in tables for t in assign.targets):
                continue
            store = stores.get(ctx.span(assign).line)
            if store is not None:
                removers = ", ".join(f"`{name}`" for name in store.removers)
                yield Match(assign, {"TABLE": store.table, "REMOVERS": removers})


def _subscripted_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
        return node.value.value
    return None
