"""What one module declares about the strings a value can hold, read from its whole text.

A value is closed to a set of strings when its declared type is a ``Literal`` (or an
alias of one), or when the code checks it against a fixed collection and raises
otherwise (``if mode not in ("a", "b"): raise ValueError(...)``). This module only
records, per module, the declarations such an answer starts from: type aliases,
imports, class fields (class-level annotations, ``self.x: T`` in methods, properties'
return types), each function's annotated parameters and locals, the containers its
loops iterate, and the checks it makes. Resolving them, across modules too, is
``closed_sets``'s job.

Read with the standard ``ast`` module: declarations are a small part of a module, and
a module that does not parse declares nothing (its comparisons keep being reported).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from typing import Iterator, Mapping

# Methods that construct the object: a check there fixes an option for its lifetime.
_CONSTRUCTION = frozenset({"__init__", "__post_init__"})
# What a loop reads from a container: its keys (iteration, ``keys()``, an ``items()``
# pair's first name) or its values (``values()``, an ``items()`` pair's second name).
ELEMENT_KEY, ELEMENT_VALUE = "key", "value"


@dataclass(frozen=True)
class Imported:
    """``from <level dots><module> import <name>`` (``name`` empty for ``import module``)."""

    level: int
    module: str
    name: str


@dataclass(frozen=True)
class Checked:
    """``expression`` is checked against ``values`` at ``line`` and the code raises otherwise."""

    expression: str  # as ``ast.unparse`` writes it
    line: int
    values: frozenset[str]


@dataclass(frozen=True)
class FunctionFacts:
    start: int
    end: int
    owner: str | None  # the class whose body defines the function
    receiver: str | None  # the first parameter of a method (``self``/``cls``), not of a staticmethod
    annotations: Mapping[str, ast.expr]  # parameters and annotated local names
    parameters: frozenset[str]  # every parameter, annotated or not: it hides a module-level name
    iterated: Mapping[str, tuple[str, str]]  # loop name -> (container name, ELEMENT_KEY or ELEMENT_VALUE)
    checks: tuple[Checked, ...]


@dataclass(frozen=True)
class ClassFacts:
    name: str
    fields: Mapping[str, ast.expr]  # attribute -> its declared type
    checks: tuple[Checked, ...]  # ``self.x`` set from a checked parameter and never to a string constant
    transitions: frozenset[str] = frozenset()  # attributes a method sets to a string constant


class ModuleFacts:
    """One module's declarations. Its top-level statements and class bodies are read at
    once; the functions around a line, a class's own facts and the declarations of one
    attribute when first asked for (a large module is never walked whole)."""

    def __init__(self, path: str, text: str, tree: ast.Module) -> None:
        self.path = path
        self._text = text
        self._tree = tree
        top = list(_top_level(tree.body))
        self.constants = _constants(top)
        self.aliases = _aliases(top)
        self.imports = _imports(top)
        self.names = {n.target.id: n.annotation for n in top if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        self._classes: dict[str, ast.ClassDef] = {}
        stack = [n for n in top if isinstance(n, ast.ClassDef)]
        while stack:
            cls = stack.pop()
            self._classes.setdefault(cls.name, cls)
            stack.extend(n for n in cls.body if isinstance(n, ast.ClassDef))
        self._function_facts: dict[int, FunctionFacts] = {}
        self._class_facts: dict[str, ClassFacts] = {}
        self._fields: dict[str, list[tuple[str | None, ast.expr]]] = {}

    @property
    def class_names(self) -> frozenset[str]:
        return frozenset(self._classes)

    def functions_at(self, line: int) -> list[FunctionFacts]:
        """The functions holding ``line``, innermost first: found by descending only into
        the statements whose lines hold it."""
        found: list[FunctionFacts] = []
        owner: str | None = None
        nodes: list[ast.AST] = list(self._tree.body)
        while nodes:
            holding = next((n for n in nodes if _holds(n, line)), None)
            if holding is None:
                break
            if isinstance(holding, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append(self._function(holding, owner))
            owner = holding.name if isinstance(holding, ast.ClassDef) else None
            nodes = list(ast.iter_child_nodes(holding))
        return found[::-1]

    def class_facts(self, name: str) -> ClassFacts | None:
        node = self._classes.get(name)
        if node is None:
            return None
        if name not in self._class_facts:
            self._class_facts[name] = _class_facts(node, self.constants)
        return self._class_facts[name]

    def fields_of(self, attribute: str) -> list[tuple[str | None, ast.expr]]:
        """Every declared type of ``attribute`` in the module, with the class declaring it
        (None for ``obj.x: T`` outside a class body): class-level annotations, properties'
        return types, and ``obj.x: T`` anywhere (looked for only where the text has one)."""
        if attribute not in self._fields:
            found: list[tuple[str | None, ast.expr]] = []
            for name, cls in self._classes.items():
                for item in cls.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id == attribute:
                        found.append((name, item.annotation))
                    elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == attribute \
                            and item.returns is not None and _is_property(item):
                        found.append((name, item.returns))
            if re.search(rf"\.\s*{re.escape(attribute)}\s*:(?!=)", self._text):
                found += [(None, node.annotation) for node in ast.walk(self._tree)
                          if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute)
                          and node.target.attr == attribute]
            self._fields[attribute] = found
        return self._fields[attribute]

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None) -> FunctionFacts:
        if id(node) not in self._function_facts:
            self._function_facts[id(node)] = _function_facts(node, owner, self.constants)
        return self._function_facts[id(node)]


def _holds(node: ast.AST, line: int) -> bool:
    if not isinstance(node, (ast.stmt, ast.expr)):
        return False
    decorators = node.decorator_list if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else []
    first = min([node.lineno, *(d.lineno for d in decorators)])
    return first <= line <= (node.end_lineno or node.lineno)


def module_facts(path: str, text: str) -> ModuleFacts | None:
    tree = _parsed(text)
    return _facts(path, text, tree) if tree is not None else None


@functools.lru_cache(maxsize=64)
def _facts(path: str, text: str, tree: ast.Module) -> ModuleFacts:
    return ModuleFacts(path, text, tree)


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> ast.Module | None:
    """One parse per text: the same module seen under two paths is parsed once."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _is_property(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(_decorator_name(d) in ("property", "cached_property") for d in function.decorator_list)


def strings(node: ast.expr, constants: Mapping[str, frozenset[str]]) -> frozenset[str] | None:
    """The strings of a tuple, list or set display of string constants (or of a module
    constant holding one, or of ``frozenset(...)``/``set(...)``/``tuple(...)`` of one)."""
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple") \
            and len(node.args) == 1 and not node.keywords:
        return strings(node.args[0], constants)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
        values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return frozenset(values) if len(values) == len(node.elts) else None
    return None


def _constants(top: list[ast.stmt]) -> dict[str, frozenset[str]]:
    found: dict[str, frozenset[str]] = {}
    for node in top:
        target, value = _single_assignment(node)
        if target is not None and value is not None and (values := strings(value, found)) is not None:
            found[target] = values
    return found


def _single_assignment(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return node.target.id, node.value
    return None, None


def _aliases(top: list[ast.stmt]) -> dict[str, ast.expr]:
    found: dict[str, ast.expr] = {}
    for node in top:
        type_alias = getattr(ast, "TypeAlias", None)  # ``type X = ...`` (Python 3.12)
        if type_alias is not None and isinstance(node, type_alias):
            found[node.name.id] = node.value
            continue
        target, value = _single_assignment(node)
        # Only expressions that can spell a type: a string constant is a value, not a type.
        if target is not None and isinstance(value, (ast.Subscript, ast.BinOp, ast.Name, ast.Attribute)):
            found[target] = value
    return found


def _imports(top: list[ast.stmt]) -> dict[str, Imported]:
    """The module-level imports, ``if TYPE_CHECKING:`` ones included."""
    found: dict[str, Imported] = {}
    for node in top:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    found[alias.asname or alias.name] = Imported(node.level, node.module or "", alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    found[alias.asname] = Imported(0, alias.name, "")
                else:
                    package = alias.name.split(".")[0]
                    found.setdefault(package, Imported(0, package, ""))
    return found


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, those under a top-level ``if``/``try`` included."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body + node.orelse + node.finalbody)
        else:
            yield node


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions or classes nested in it."""
    stack: list[ast.AST] = list(reversed(function.body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _receiver(function: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None) -> str | None:
    if owner is None or any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list):
        return None
    positional = function.args.posonlyargs + function.args.args
    return positional[0].arg if positional else None


def _function_facts(function: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None,
                    constants: Mapping[str, frozenset[str]]) -> FunctionFacts:
    arguments = function.args
    annotations: dict[str, ast.expr] = {
        a.arg: a.annotation for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs) if a.annotation is not None
    }
    iterated: dict[str, tuple[str, str]] = {}
    for node in _own_nodes(function):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            annotations[node.target.id] = node.annotation
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            iterated.update(loop_elements(node.target, node.iter))
    # A checked name the function also sets to a string constant is a state it moves
    # through, not an option: only names never so assigned keep their check.
    moved = {t.id for node in _own_nodes(function) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
             and isinstance(node.value.value, str) for t in node.targets if isinstance(t, ast.Name)}
    checks = tuple(c for node in _own_nodes(function) for c in _checks(node, constants)
                   if c.expression.isidentifier() and c.expression not in moved)
    end = function.end_lineno or function.lineno
    parameters = frozenset(a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                           *(v for v in (arguments.vararg, arguments.kwarg) if v is not None)))
    return FunctionFacts(function.lineno, end, owner, _receiver(function, owner), annotations, parameters, iterated, checks)


def loop_elements(target: ast.expr, iterable: ast.expr) -> dict[str, tuple[str, str]]:
    """``for k in d`` / ``d.keys()``: k is a key of ``d``; ``for v in d.values()``: a value;
    ``for k, v in d.items()``: both."""
    how = ""
    container = iterable
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and not iterable.args:
        how, container = iterable.func.attr, iterable.func.value
    if not isinstance(container, ast.Name):
        return {}
    name = container.id
    if how in ("", "keys") and isinstance(target, ast.Name):
        return {target.id: (name, ELEMENT_KEY)}
    if how == "values" and isinstance(target, ast.Name):
        return {target.id: (name, ELEMENT_VALUE)}
    if how == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        key, value = target.elts
        found = {key.id: (name, ELEMENT_KEY)} if isinstance(key, ast.Name) else {}
        if isinstance(value, ast.Name):
            found[value.id] = (name, ELEMENT_VALUE)
        return found
    return {}


def _checks(node: ast.AST, constants: Mapping[str, frozenset[str]]) -> Iterator[Checked]:
    """``if x not in (...): raise`` and ``assert x in (...)``: past them, x is one of the values."""
    operator: type[ast.cmpop]
    if isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body):
        test, operator = node.test, ast.NotIn
    elif isinstance(node, ast.Assert):
        test, operator = node.test, ast.In
    else:
        return
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], operator):
        values = strings(test.comparators[0], constants)
        if values is not None:
            yield Checked(ast.unparse(test.left), node.lineno, values)


def _class_facts(cls: ast.ClassDef, constants: Mapping[str, frozenset[str]]) -> ClassFacts:
    fields: dict[str, ast.expr] = {}
    checks: list[Checked] = []
    transitions: set[str] = set()
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            fields[item.target.id] = item.annotation
        elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            receiver = _receiver(item, cls.name)
            if item.returns is not None and _is_property(item):
                fields.setdefault(item.name, item.returns)
            if receiver is not None:
                fields.update(_receiver_fields(item, receiver))
                checks.extend(_receiver_checks(item, receiver, constants))
                transitions.update(_assigned_strings(item, receiver))
    kept = tuple(c for c in checks if c.expression[len("self."):] not in transitions)
    return ClassFacts(cls.name, fields, kept, frozenset(transitions))


def _decorator_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _receiver_fields(method: ast.FunctionDef | ast.AsyncFunctionDef, receiver: str) -> dict[str, ast.expr]:
    return {
        node.target.attr: node.annotation for node in _own_nodes(method)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute)
        and isinstance(node.target.value, ast.Name) and node.target.value.id == receiver
    }


def _receiver_checks(method: ast.FunctionDef | ast.AsyncFunctionDef, receiver: str,
                     constants: Mapping[str, frozenset[str]]) -> Iterator[Checked]:
    """A parameter checked, then stored in ``self.x``, or ``self.x`` checked where the
    object is constructed (``__init__``, a dataclass's ``__post_init__``): an option fixed
    at construction. (Elsewhere a check on ``self.x`` is a state machine's transition
    guard, not that.)"""
    checked = {c.expression: c for node in _own_nodes(method) for c in _checks(node, constants)}
    if method.name in _CONSTRUCTION:
        for expression, check in checked.items():
            if expression.startswith(f"{receiver}.") and expression[len(receiver) + 1:].isidentifier():
                yield Checked("self" + expression[len(receiver):], check.line, check.values)
    for node in _own_nodes(method):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in checked:
            check = checked[node.value.id]
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == receiver:
                    yield Checked(f"self.{target.attr}", check.line, check.values)


def _assigned_strings(method: ast.FunctionDef | ast.AsyncFunctionDef, receiver: str) -> Iterator[str]:
    """Attributes the method sets to a string constant: ``self.state = "done"`` is a transition."""
    for node in _own_nodes(method):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == receiver:
                    yield target.attr
