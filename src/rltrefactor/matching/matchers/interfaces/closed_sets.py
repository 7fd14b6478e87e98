"""Whether a compared value is declared to be one of a closed set of strings.

``status == "new"`` is no stringly-typed state when ``status`` is declared ``Literal``
(the type checker knows its values) or was checked against a fixed collection before.
The answer is read from declarations (``declarations``), never from names:

- a name: its annotation in the functions around the comparison (parameters, annotated
  locals), the container a loop over it iterates (``for s, n in counts.items()`` with
  ``counts: dict[Status, int]``), a check the function made before (``if s not in
  (...): raise``), or a module-level annotation;
- ``obj.attr``: the field of the class ``obj`` is known to be (the enclosing class for
  ``self``, the annotated class of a parameter), else every declaration of ``attr`` in
  the classes of this module and of the repository modules it imports: all of them
  must be closed. A class that sets ``self.attr`` from a checked parameter (and never
  to a string constant) closes it too.

Where the declarations leave the repository (a field typed by another package's
``Literal``, ``openai``'s ``ResponseStatus``) or the value comes from a call, the type
engine's answer closes it when it is a ``Literal`` of strings (``typed_closed``).

Types resolve through aliases and imports: ``from .types import Status`` reads
``types.py`` of the same repository (at the reviewed revision, through
``FileContext.sources``), only its top-level declarations, parsed once per review.
An import that leaves the repository, or a module that does not parse, closes nothing.
Nothing is parsed unless ``repository_modules.may_close`` finds, in the text, a
``Literal`` and a declaration of the field's name, or a check of it.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable

import libcst as cst

from ....change.contents import ModuleTexts
from ..base import FileContext
from .declarations import ELEMENT_KEY, ClassFacts, ModuleFacts, loop_elements, module_facts
from .repository_modules import may_close, module_paths

_TYPING = frozenset({"typing", "typing_extensions"})
_WRAPPERS = frozenset({"Annotated", "Final", "ClassVar", "Required", "NotRequired", "ReadOnly"})
_MAX_DEPTH = 6  # aliases of aliases, across modules


def declared_closed(ctx: FileContext, field: cst.BaseExpression, values: frozenset[str]) -> bool:
    """``field`` is declared (or checked) to hold one of a closed set of strings, and
    ``values`` are all in it. A value outside the set is a probable typo: not closed."""
    if not values:
        return False
    return _declared_in_repository(ctx, field, values) or typed_closed(ctx, field, values)


def _declared_in_repository(ctx: FileContext, field: cst.BaseExpression, values: frozenset[str]) -> bool:
    if ctx.sources is None:
        return False
    word = _last_name(field)
    if word is None or not may_close(ctx, ctx.sources, word):
        return False
    sets = ClosedSets(ctx.sources)
    own = sets.facts(ctx.path)
    if own is None:
        return False
    allowed = _field_values(sets, own, ctx, field)
    return allowed is not None and values <= allowed


def _last_name(field: cst.BaseExpression) -> str | None:
    if isinstance(field, cst.Attribute):
        return field.attr.value
    return field.value if isinstance(field, cst.Name) else None


class ClosedSets:
    """Module facts by repository path, and type resolution across them."""

    def __init__(self, texts: ModuleTexts) -> None:
        self._texts = texts

    def facts(self, path: str, mentioning: str = "") -> ModuleFacts | None:
        """The module at ``path``; with ``mentioning``, only if its text holds that word
        (a module that never says ``status`` declares no ``status`` field: not parsed)."""
        text = self._texts.read(path)
        if text is None or mentioning not in text:
            return None
        return module_facts(path, text)

    def values(self, module: ModuleFacts, node: ast.expr, depth: int = 0) -> frozenset[str] | None:
        """The strings a type allows, when it is a closed set of strings; None otherwise."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, ast.Constant):
            if node.value is None:
                return frozenset()
            if isinstance(node.value, str):  # a forward reference: ``"Status"``
                try:
                    return self.values(module, ast.parse(node.value, mode="eval").body, depth + 1)
                except SyntaxError:
                    return None
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return _union(self.values(module, part, depth + 1) for part in (node.left, node.right))
        if isinstance(node, ast.Subscript):
            return self._subscripted(module, node, depth)
        target = self.definition(module, node)
        if target is None:
            return None
        if (alias := target[0].aliases.get(target[1])) is not None:
            return self.values(target[0], alias, depth + 1)
        if target[1] in target[0].imports and target[0] is not module:  # re-exported: ``from .types import Status``
            return self.values(target[0], ast.Name(target[1]), depth + 1)
        return None

    def _subscripted(self, module: ModuleFacts, node: ast.Subscript, depth: int) -> frozenset[str] | None:
        construct = self._typing_name(module, node.value)
        arguments = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if construct == "Literal":
            found: set[str] = set()
            for argument in arguments:
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    found.add(argument.value)
                elif not (isinstance(argument, ast.Constant) and argument.value is None):
                    inner = self.values(module, argument, depth + 1)
                    if inner is None:
                        return None
                    found |= inner
            return frozenset(found)
        if construct in ("Union", "Optional"):
            return _union(self.values(module, a, depth + 1) for a in arguments)
        if construct in _WRAPPERS:
            return self.values(module, arguments[0], depth + 1)
        return None

    def element(self, module: ModuleFacts, node: ast.expr, which: str, depth: int = 0) -> frozenset[str] | None:
        """The closed set of a container type's keys (or items) or values: ``dict[Status, int]``."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and depth <= _MAX_DEPTH:
            try:
                return self.element(module, ast.parse(node.value, mode="eval").body, which, depth + 1)
            except SyntaxError:
                return None
        if isinstance(node, ast.Subscript) and depth <= _MAX_DEPTH:
            arguments = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            if self._typing_name(module, node.value) in _WRAPPERS:
                return self.element(module, arguments[0], which, depth + 1)
            real = [a for a in arguments if not (isinstance(a, ast.Constant) and a.value is Ellipsis)]
            if real:
                return self.values(module, real[0] if which == ELEMENT_KEY else real[-1], depth + 1)
        target = self.definition(module, node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if target is not None and (alias := target[0].aliases.get(target[1])) is not None:
            return self.element(target[0], alias, which, depth + 1)
        return None

    def _typing_name(self, module: ModuleFacts, node: ast.expr) -> str | None:
        """``Literal``, ``Union``, ... when ``node`` names that construct of ``typing``."""
        if isinstance(node, ast.Name):
            imported = module.imports.get(node.id)
            if imported is not None and imported.level == 0 and imported.module in _TYPING:
                return imported.name
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            imported = module.imports.get(node.value.id)
            if imported is not None and imported.level == 0 and not imported.name and imported.module in _TYPING:
                return node.attr
        return None

    def definition(self, module: ModuleFacts, node: ast.expr) -> tuple[ModuleFacts, str] | None:
        """The module that defines what ``node`` (``Name`` or ``module.Name``) names, and the
        name there; through one import of a repository module at each step."""
        if isinstance(node, ast.Name):
            if node.id in module.aliases or node.id in module.class_names:
                return module, node.id
            imported = module.imports.get(node.id)
            if imported is None or not imported.name:
                return None
            for path in module_paths(module.path, imported.level, imported.module):
                target = self.facts(path)
                if target is not None:
                    return target, imported.name
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            imported = module.imports.get(node.value.id)
            if imported is None:
                return None
            dotted = f"{imported.module}.{imported.name}" if imported.name and imported.module else imported.module or imported.name
            for path in module_paths(module.path, imported.level, dotted):
                target = self.facts(path)
                if target is not None:
                    return target, node.attr
        return None

    def class_named(self, module: ModuleFacts, node: ast.expr) -> tuple[ModuleFacts, ClassFacts] | None:
        found = self.definition(module, node)
        cls = found[0].class_facts(found[1]) if found is not None else None
        return (found[0], cls) if found is not None and cls is not None else None

    def imported_modules(self, module: ModuleFacts, mentioning: str) -> list[ModuleFacts]:
        """The repository modules ``module`` imports (``from . import m`` included) whose
        text holds ``mentioning``."""
        found: dict[str, ModuleFacts] = {}
        for imported in module.imports.values():
            dotted = [imported.module] + ([f"{imported.module}.{imported.name}" if imported.module else imported.name]
                                          if imported.name else [])
            for name in dotted:
                for path in module_paths(module.path, imported.level, name):
                    if path in found or path == module.path:
                        break
                    facts = self.facts(path, mentioning)
                    if facts is not None:
                        found[path] = facts
                        break
        return list(found.values())


def _union(parts: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    found: set[str] = set()
    for part in parts:
        if part is None:
            return None
        found |= part
    return frozenset(found)


def _field_values(sets: ClosedSets, own: ModuleFacts, ctx: FileContext, field: cst.BaseExpression) -> frozenset[str] | None:
    line = ctx.span(field).line
    try:
        expression = ast.parse(ctx.code(field).strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(expression, ast.Name):
        return _name_values(sets, own, ctx, field, expression.id, line)
    if isinstance(expression, ast.Attribute):
        return _attribute_values(sets, own, expression, line)
    return None


def _name_values(sets: ClosedSets, own: ModuleFacts, ctx: FileContext, field: cst.BaseExpression,
                 name: str, line: int) -> frozenset[str] | None:
    functions = own.functions_at(line)
    for comprehension in _comprehensions(ctx, field):
        bound = loop_elements(*comprehension)
        if name in bound:
            container, which = bound[name]
            annotation = next((f.annotations[container] for f in functions if container in f.annotations), None)
            return sets.element(own, annotation, which) if annotation is not None else None
    for function in functions:
        checked = [c for c in function.checks if c.expression == name and c.line <= line]  # the check itself too
        if checked:
            return checked[-1].values
        if name in function.annotations:
            return sets.values(own, function.annotations[name])
        if name in function.iterated:
            container, which = function.iterated[name]
            annotation = next((f.annotations[container] for f in functions if container in f.annotations), None)
            return sets.element(own, annotation, which) if annotation is not None else None
        if name in function.parameters:
            return None
    annotation = own.names.get(name)
    return sets.values(own, annotation) if annotation is not None else None


def _comprehensions(ctx: FileContext, field: cst.BaseExpression) -> Iterable[tuple[ast.expr, ast.expr]]:
    """(target, iterable) of the comprehensions around ``field`` in its statement, innermost first."""
    for ancestor in ctx.ancestors(field):
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return
        if isinstance(ancestor, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            clause: cst.CompFor | None = ancestor.for_in
            while clause is not None:
                try:
                    target = ast.parse(ctx.code(clause.target).strip(), mode="eval").body
                    iterable = ast.parse(ctx.code(clause.iter).strip(), mode="eval").body
                except SyntaxError:
                    break
                yield target, iterable
                clause = clause.inner_for_in


def _attribute_values(sets: ClosedSets, own: ModuleFacts, expression: ast.Attribute, line: int) -> frozenset[str] | None:
    owner, attribute = expression.value, expression.attr
    functions = own.functions_at(line)
    if isinstance(owner, ast.Name) and functions:
        method = next((f for f in functions if f.receiver is not None), None)
        if method is not None and method.receiver == owner.id and method.owner is not None:
            cls = own.class_facts(method.owner)
            if cls is not None:
                checked = _checked(cls, attribute)
                if checked is not None:
                    return checked
                if attribute in cls.fields:
                    return sets.values(own, cls.fields[attribute])
                if attribute in cls.transitions:
                    return None  # the class moves it through string constants: its own string state
        annotation = next((f.annotations[owner.id] for f in functions if owner.id in f.annotations), None)
        found = sets.class_named(own, annotation) if annotation is not None else None
        if found is not None and (checked := _checked(found[1], attribute)) is not None:
            return checked
        if found is not None and attribute in found[1].fields:
            return sets.values(found[0], found[1].fields[attribute])
    return _declared_anywhere(sets, own, attribute)


def _declared_anywhere(sets: ClosedSets, own: ModuleFacts, attribute: str) -> frozenset[str] | None:
    """Every declaration of ``attribute`` in the classes of this module and of the
    repository modules it imports, when there is one and each is a closed set."""
    declared = []
    for module in (own, *sets.imported_modules(own, attribute)):
        for owner, annotation in module.fields_of(attribute):
            cls = module.class_facts(owner) if owner is not None else None
            checked = _checked(cls, attribute) if cls is not None else None
            declared.append(checked if checked is not None else sets.values(module, annotation))
    return _union(declared) if declared else None


def _checked(cls: ClassFacts, attribute: str) -> frozenset[str] | None:
    """What the class's construction checks ``self.<attribute>`` against, if it does."""
    checked = [c.values for c in cls.checks if c.expression == f"self.{attribute}"]
    return _union(checked) if checked else None


# A type engine's answer made only of string ``Literal``s, and ``None``.
_LITERAL_UNION = re.compile(r"^(?:Literal\[[^\]]*\]|None)(?: \| (?:Literal\[[^\]]*\]|None))*$")
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'" + r'|"((?:[^"\\]|\\.)*)"')


def typed_closed(ctx: FileContext, field: cst.BaseExpression, values: frozenset[str]) -> bool:
    """The type engine types ``field`` as a ``Literal`` of strings holding every one of ``values``."""
    allowed = typed_literal(ctx, field)
    return bool(allowed) and values <= allowed


def typed_literal(ctx: FileContext, field: cst.BaseExpression) -> frozenset[str]:
    """The strings of the ``Literal`` the type engine types ``field`` as; empty when it
    gives no such type."""
    answer = ctx.value_type(field) if isinstance(field, (cst.Name, cst.Attribute)) else None
    if answer is None or not _LITERAL_UNION.match(answer.strip()):
        return frozenset()
    return frozenset(single or double for single, double in _QUOTED.findall(answer))
