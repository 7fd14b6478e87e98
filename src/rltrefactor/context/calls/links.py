"""Calls resolved across the repository, in both directions: what a function calls, and
every call in the repository that may reach a function (by its name).

A function is named ``path::qualname``; ``path::<module>`` stands for what runs when the
module is imported and ``path::<main>`` for its ``if __name__ == "__main__":`` block.
A callee as written resolves, in this order, through: the function's own nested
functions; ``self.m()``/``cls.m()`` in its class and bases; ``self.x.m()`` where the
class types ``x`` (``self.x = C()`` or ``x: C``); a local or parameter typed by an
assignment (``w = C()``) or an annotation; the module's functions, classes and imports
(``from x import f``, ``import x as y; y.f()``, re-exports followed); and, for a method
call no rule resolved, the one method of the repository with that name, where there is
only one and the name is not one that builtin containers also have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, NamedTuple

from ...source.aliases import module_of
from .texts import RevisionTexts
from .facts import ClassFacts, FileFacts, FunctionFacts, type_name

# Bounds on following names through the repository: they stop import and inheritance
# cycles, and real chains are far shorter (a re-export rarely passes more than two modules).
MAX_REEXPORTS = 6  # modules an imported name is followed through
MAX_BASE_CLASSES = 8  # levels of base classes searched for a method


@dataclass(frozen=True)
class FileSummary:
    """What the index needs of every file before it reads any file whole: which names the
    file defines and which it calls. Small enough to keep one pack of them per repository."""

    names: tuple[str, ...]  # the last part of every function's qualname
    methods: tuple[str, ...]  # the same for methods that are not dunders, once per definition
    called: frozenset[str]  # the last part of every callee the file writes, module level included


def summary_of(facts: FileFacts) -> FileSummary:
    called = {callee.rpartition(".")[2] for f in facts.functions for callee in f.calls}
    called.update(callee.rpartition(".")[2] for callee in facts.import_calls + facts.main_calls)
    return FileSummary(
        tuple(f.name for f in facts.functions),
        tuple(f.name for f in facts.functions if f.owner and not f.name.startswith("__")),
        frozenset(called),
    )


class Caller(NamedTuple):
    """One call seen from the callee's side."""

    caller: str  # function id, or ``path::<module>``/``path::<main>``
    callee: str  # as written
    target: str | None  # the function id it resolves to; None where no rule resolves it
    in_loop: bool  # made inside the caller's long-running loop
    gated: bool = False  # made only under a diagnostics gate or a one-time guard (``FunctionFacts.gated_calls``)
    allowed: bool = False  # made only where synchronizations are allowed (``FunctionFacts.allowed_calls``)


# Method names builtin containers, strings, compiled patterns and loggers also have: a call
# by such a name (``_PATTERN.match(k)``, ``logger.debug(...)``) proves nothing about a method
# of the repository.
_COMMON_METHODS = frozenset(
    name for kind in (dict, list, set, str, bytes, tuple, frozenset, re.Pattern, re.Match)
    for name in dir(kind) if not name.startswith("_")
) | frozenset("to cuda cpu item size view run start stop close wait join put send result".split()) | frozenset(
    name for level in ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log")
    for name in (level, f"{level}_once"))


class Repository:
    """Every file's facts, read only where a question needs them, with names resolved
    across files on demand.

    Nothing is parsed up front: which files may define or call a name is read from their
    text (``RevisionTexts``), and only those files are parsed, when a question needs
    them, to decide. ``load`` gives a path's facts."""

    def __init__(self, texts: RevisionTexts, load: Callable[[str], FileFacts],
                 offline: Callable[[str], bool] = lambda path: False) -> None:
        """``offline``: whether a path holds code that runs apart from the program (tests,
        ``cold-paths``): an instance made there runs there, so it hides no other."""
        self.paths = texts.paths
        self.texts = texts
        self._load = load
        self.offline = offline
        self._facts: dict[str, FileFacts] = {}
        self._summaries: dict[str, FileSummary] = {}
        self._functions: dict[str, dict[str, FunctionFacts]] = {}  # path -> qualname -> facts
        self._classes: dict[str, dict[str, ClassFacts]] = {}  # path -> qualname -> facts
        self._imports: dict[str, dict[str, str]] = {}  # path -> local name -> absolute dotted target
        self._attributes: dict[tuple[str, str], dict[str, str]] = {}  # (path, class) -> attribute -> written type
        self._modules: dict[str, list[str]] = {}  # dotted module name (and each suffix) -> paths
        for path in self.paths:
            parts = module_of(path).split(".")
            for start in range(len(parts)):
                self._modules.setdefault(".".join(parts[start:]), []).append(path)
        self._unique: dict[str, str | None] = {}  # method name -> the one file defining it, if one
        self._known = frozenset(self.paths)
        self._edges: dict[str, tuple[tuple[str, str], ...]] = {}
        self._callers: dict[str, tuple[Caller, ...]] = {}
        # path -> last part of a callee -> (caller qualname, its facts, callee as written, in its loop)
        self._written: dict[str, dict[str, list[tuple[str, FunctionFacts | None, str, bool]]]] = {}

    def _summary(self, path: str) -> FileSummary:
        found = self._summaries.get(path)
        if found is None:
            found = self._summaries[path] = summary_of(self.facts(path))
        return found

    def _unique_path(self, name: str) -> str | None:
        """The one file defining a method ``name``, where the repository defines one such
        method; only the files with an indented ``def name`` are parsed to tell."""
        if name not in self._unique:
            count, where = 0, None
            for path in sorted(self.texts.defining_indented(name)):
                defined = self._summary(path).methods.count(name)
                count, where = count + defined, where if not defined else path
            self._unique[name] = where if count == 1 and name not in _COMMON_METHODS else None
        return self._unique[name]

    # -- facts, read on demand ----------------------------------------------------------------

    def facts(self, path: str) -> FileFacts:
        found = self._facts.get(path)
        if found is None:
            found = self._facts[path] = self._load(path)
            self._functions[path] = {f.qualname: f for f in found.functions}
            self._classes[path] = {c.qualname: c for c in found.classes}
            self._imports[path] = {name: _absolute(target, level, path) for name, target, level in found.imports}
            for function in found.functions:
                for name, value in function.locals:
                    if name.startswith("self.") and function.owner:
                        self._attributes.setdefault((path, function.owner), {}).setdefault(name[5:], value)
            for class_facts in found.classes:
                for name, value in class_facts.attributes:
                    self._attributes.setdefault((path, class_facts.qualname), {}).setdefault(name, value)
            self._written[path] = _calls_by_name(found)
        return found

    def call_arguments(self, caller: str, callee: str) -> list[list[bytes]] | None:
        """The arguments, as written, of each call of ``callee``'s last name in the function
        ``caller`` (its nested functions included); None where one cannot be read."""
        function = self.function(caller)
        if function is None:
            return None
        return self.texts.call_arguments(caller.partition("::")[0], callee.rpartition(".")[2],
                                          (function.start_line, function.end_line))

    def function_text(self, function_id: str) -> bytes:
        """The source text of a function, its nested functions included; b"" if unknown."""
        function = self.function(function_id)
        if function is None:
            return b""
        return self.texts.lines_text(function_id.partition("::")[0], (function.start_line, function.end_line))

    def class_facts(self, path: str, qualname: str) -> ClassFacts | None:
        """The facts of the class ``qualname`` of ``path``, its file read if it was not yet:
        what a class is never depends on which files were asked about before."""
        if path not in self._classes and path in self._known:
            self.facts(path)
        return self._classes.get(path, {}).get(qualname)

    def function(self, function_id: str) -> FunctionFacts | None:
        path, _, qualname = function_id.partition("::")
        if path not in self._functions:
            if path not in self._known:
                return None
            self.facts(path)
        return self._functions[path].get(qualname)

    def functions_in(self, path: str) -> tuple[str, ...]:
        return tuple(f"{path}::{f.qualname}" for f in self.facts(path).functions)

    # -- calls -------------------------------------------------------------------------------

    def calls(self, function_id: str) -> tuple[tuple[str, str], ...]:
        """(callee as written, resolved function id) for each call of the function that resolves."""
        found = self._edges.get(function_id)
        if found is None:
            path, _, _ = function_id.partition("::")
            function = self.function(function_id)
            resolved = []
            for callee in dict.fromkeys(function.calls if function is not None else ()):
                target = self._resolve(path, function, callee)
                if target is not None:
                    resolved.append((callee, target))
            found = self._edges[function_id] = tuple(resolved)
        return found

    def callers(self, name: str) -> tuple[Caller, ...]:
        """Every call in the repository whose callee's last part is ``name``, resolved or not;
        import-time and ``__main__`` calls of a file come from ``path::<module>``/``path::<main>``."""
        found = self._callers.get(name)
        if found is None:
            calls: list[Caller] = []
            # A membership test per file, when a name is first asked, costs less than an
            # inverted index of every call of the repository built up front.
            for path in (p for p in self.texts.calling(name) if name in self._summary(p).called):
                self.facts(path)
                for caller, function, callee, in_loop in self._written[path].get(name, ()):
                    gated = function is not None and callee in function.gated_calls
                    allowed = function is not None and callee in function.allowed_calls
                    calls.append(Caller(f"{path}::{caller}", callee, self._resolve(path, function, callee), in_loop, gated,
                                        allowed))
            found = self._callers[name] = tuple(calls)
        return found

    def _resolve(self, path: str, function: FunctionFacts | None, callee: str) -> str | None:
        if not self.texts.defining(callee.rpartition(".")[2]):  # most calls go to other packages
            return None
        parts = callee.split(".")
        found = self._resolve_chain(path, function, parts) if parts[0] != "?" else None
        if found is not None or len(parts) < 2:
            return found
        head = parts[0]
        head_known = head not in ("?", "self", "cls") and (head in self._imports[path] or self._name(path, function, head) is not None)
        if head_known:
            return None
        found = self._unique_method(parts[-1])
        if found is not None and head == "self" and len(parts) == 2 and function is not None and function.owner \
                and self._assigns_attribute(path, function.owner, parts[1]):
            return None  # ``self.pos_embed(...)`` calls the object the class keeps there, not a method of that name
        return found

    def _assigns_attribute(self, path: str, owner: str, name: str) -> bool:
        """A method of the class ``owner`` of ``path``, or of a base the repository
        defines, assigns ``self.<name>``."""
        assigned = re.compile(rb"\bself\." + re.escape(name.encode()) + rb"\s*(:[^=\n]*)?=(?!=)")
        for cls_path, cls in self.lineage(path, owner):
            for method in self.facts(cls_path).functions:
                if method.owner == cls and assigned.search(self.texts.lines_text(cls_path, (method.start_line, method.end_line))):
                    return True
        return False

    def _unique_method(self, name: str) -> str | None:
        """The one method of the repository named ``name``, where there is only one."""
        path = self._unique_path(name)
        for function in self.facts(path).functions if path is not None else ():
            if function.name == name and function.owner:
                return f"{path}::{function.qualname}"
        return None

    def _resolve_chain(self, path: str, function: FunctionFacts | None, parts: list[str]) -> str | None:
        head, rest = parts[0], parts[1:]
        if head in ("self", "cls") and function is not None and function.owner:
            cls: tuple[str, str] | None = (path, function.owner)
            for attribute in rest[:-1]:
                cls = self.attribute_class(cls, attribute) if cls is not None else None
            return self._method(cls, rest[-1]) if cls is not None and rest else None
        typed = self.local_class(path, function, head) if rest else None
        if typed is not None:
            for attribute in rest[:-1]:  # ``runner.model.forward`` through typed attributes
                typed = self.attribute_class(typed, attribute) if typed is not None else None
            return self._method(typed, rest[-1]) if typed is not None else None
        target = self._name(path, function, head)
        return self._member(target, rest) if target is not None else None

    def _member(self, target: tuple[str, str, str], rest: list[str], depth: int = 0) -> str | None:
        kind, path, name = target
        if not rest:
            return f"{path}::{name}" if kind == "function" else None
        if kind == "class":
            return self._method((path, name), rest[0]) if len(rest) == 1 else None
        if kind == "module":
            inner = self._top_level(path, rest[0], depth + 1)
            return self._member(inner, rest[1:], depth + 1) if inner is not None else None
        return None

    # -- names -------------------------------------------------------------------------------

    def _name(self, path: str, function: FunctionFacts | None, name: str) -> tuple[str, str, str] | None:
        """("function" | "class" | "module", path, qualname or "") that ``name`` means in the scope."""
        scope = function
        while scope is not None:
            nested = f"{scope.qualname}.<locals>.{name}"
            if self.function(f"{path}::{nested}") is not None:
                return ("function", path, nested)
            scope = self.function(f"{path}::{scope.parent}") if scope.parent else None
        return self._top_level(path, name)

    def _top_level(self, path: str, name: str, depth: int = 0) -> tuple[str, str, str] | None:
        if self.function(f"{path}::{name}") is not None:
            return ("function", path, name)
        if self.class_facts(path, name) is not None:
            return ("class", path, name)
        target = self._imports.get(path, {}).get(name)
        return self._lookup(target, depth + 1) if target is not None and depth < MAX_REEXPORTS else None

    def _lookup(self, dotted: str, depth: int) -> tuple[str, str, str] | None:
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            paths = self._modules.get(".".join(parts[:end]), [])
            if len(paths) == 1:
                module: tuple[str, str, str] = ("module", paths[0], "")
                found: tuple[str, str, str] | None = module
                for name in parts[end:]:
                    found = self._inside(found, name, depth) if found is not None else None
                return found
        return None

    def _inside(self, target: tuple[str, str, str], name: str, depth: int) -> tuple[str, str, str] | None:
        kind, path, qualname = target
        if kind == "module":
            return self._top_level(path, name, depth)
        if kind == "class" and self.function(f"{path}::{qualname}.{name}") is not None:
            return ("function", path, f"{qualname}.{name}")
        return None

    def _method(self, cls: tuple[str, str], name: str, depth: int = 0) -> str | None:
        path, qualname = cls
        if self.function(f"{path}::{qualname}.{name}") is not None:
            return f"{path}::{qualname}.{name}"
        facts = self.class_facts(path, qualname)
        for base in facts.bases if facts is not None and depth < MAX_BASE_CLASSES else ():
            found = self.class_named(path, None, base)
            if found is not None:
                method = self._method(found, name, depth + 1)
                if method is not None:
                    return method
        return None

    # -- classes ---------------------------------------------------------------------------

    def lineage(self, path: str, qualname: str, depth: int = 0) -> list[tuple[str, str]]:
        """The class and the bases of it the repository defines, nearest first."""
        found = [(path, qualname)]
        facts = self.class_facts(path, qualname)
        for base in facts.bases if facts is not None and depth < MAX_BASE_CLASSES else ():
            defined = self.class_named(path, None, base)
            if defined is not None:
                found.extend(self.lineage(*defined, depth + 1))
        return found

    def derived(self, path: str, qualname: str) -> list[tuple[str, str]]:
        """The repository's classes derived from a class, through any number of levels."""
        dotted = f"{module_of(path)}.{qualname}"
        return [
            (mentioning, c.qualname)
            for mentioning in self.texts.mentioning(qualname.rpartition(".")[2])
            for c in self.facts(mentioning).classes
            if (mentioning, c.qualname) != (path, qualname) and dotted in self.qualified_bases(mentioning, c.qualname)
        ]

    def host_fields(self, markers: tuple[str, ...]) -> frozenset[str]:
        """Input fields the repository's files declare host-side (``RevisionTexts.host_fields``)."""
        return self.texts.host_fields(markers)

    def lineage_names(self, path: str, qualname: str) -> tuple[str, ...]:
        """The class ``qualname`` of ``path`` as a dotted name, then its ``qualified_bases``:
        a framework's class (a diffusion ``ParallelTiledVAE``) is its own nearest base."""
        return (f"{module_of(path)}.{qualname}", *self.qualified_bases(path, qualname))

    def qualified_bases(self, path: str, qualname: str, depth: int = 0) -> tuple[str, ...]:
        """The bases of the class ``qualname`` of ``path``, each as a dotted name qualified
        through its file's imports, and the bases of those the repository defines, in order."""
        facts = self.class_facts(path, qualname)
        found: list[str] = []
        for base in facts.bases if facts is not None and depth < MAX_BASE_CLASSES else ():
            defined = self.class_named(path, None, base)
            if defined is not None:
                found.append(f"{module_of(defined[0])}.{defined[1]}")
                found.extend(self.qualified_bases(*defined, depth + 1))
                continue
            found.append(self.qualify(path, base))
        return tuple(found)

    def qualify(self, path: str, dotted: str) -> str:
        """``dotted`` as written in ``path``, its head qualified through the file's imports
        (relative ones made absolute); as written where the file imports no such name."""
        self.facts(path)
        head, _, rest = dotted.partition(".")
        target = self._imports.get(path, {}).get(head)
        return dotted if target is None else f"{target}.{rest}" if rest else target

    def class_named(self, path: str, function: FunctionFacts | None, written: str) -> tuple[str, str] | None:
        name = type_name(written[5:] if written.startswith("call:") else written)
        if not name:
            return None
        parts = name.split(".")
        found = self._name(path, function, parts[0])
        for part in parts[1:]:
            found = self._inside(found, part, 0) if found is not None else None
        return (found[1], found[2]) if found is not None and found[0] == "class" else None

    def attribute_class(self, cls: tuple[str, str], attribute: str) -> tuple[str, str] | None:
        self.class_facts(*cls)  # its file's attributes are read with its facts
        written = self._attributes.get(cls, {}).get(attribute)
        return self.class_named(cls[0], None, written) if written else None

    def local_class(self, path: str, function: FunctionFacts | None, name: str) -> tuple[str, str] | None:
        if function is None:
            return None
        written = [v for n, v in function.locals if n == name] + [t for n, t in function.params if n == name]
        if len(set(written)) != 1:  # assigned two ways: no one class
            return None
        return self.class_named(path, function, written[0])


def _calls_by_name(facts: FileFacts) -> dict[str, list[tuple[str, FunctionFacts | None, str, bool]]]:
    """The file's distinct calls of each function (and of import time, ``__main__``), by
    the last part of the callee."""
    by_name: dict[str, list[tuple[str, FunctionFacts | None, str, bool]]] = {}
    for pseudo, callees in (("<module>", facts.import_calls), ("<main>", facts.main_calls)):
        for callee in dict.fromkeys(callees):
            by_name.setdefault(callee.rpartition(".")[2], []).append((pseudo, None, callee, False))
    for function in facts.functions:
        loop_calls = set(function.loop_calls)
        for callee in dict.fromkeys(function.calls):
            by_name.setdefault(callee.rpartition(".")[2], []).append((function.qualname, function, callee, callee in loop_calls))
    return by_name


def _absolute(target: str, level: int, path: str) -> str:
    if not level:
        return target
    package = module_of(path).split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, target]) if target else ".".join(base)
