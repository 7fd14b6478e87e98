"""Calls resolved across the repository, and the contexts and residency they carry.

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
from collections import Counter
from typing import Iterable, Iterator, Mapping

from .callfacts import ClassFacts, FileFacts, FunctionFacts, type_name
from .execution import verdict_by_name
from .names import Names

# Bounds on following names through the repository: they stop import and inheritance
# cycles, and real chains are far shorter (a re-export rarely passes more than two modules).
MAX_REEXPORTS = 6  # modules an imported name is followed through
MAX_BASE_CLASSES = 8  # levels of base classes searched for a method

Contexts = dict[str, tuple[str, str]]  # function id -> (kind, evidence)

# Method names builtin containers and strings also have: a call by such a name proves nothing.
_COMMON_METHODS = frozenset(
    name for kind in (dict, list, set, str, bytes, tuple, frozenset) for name in dir(kind) if not name.startswith("_")
) | frozenset("to cuda cpu item size view run start stop close wait join put send result".split())
_CHAIN_SHOWN = 6
_COLD = ("one-time", "offline")


class Repository:
    """Every file's facts, with names resolved across files on demand."""

    def __init__(self, facts: Mapping[str, FileFacts]) -> None:
        self.facts = facts
        self.functions: dict[str, tuple[str, FunctionFacts]] = {}
        self._classes: dict[tuple[str, str], ClassFacts] = {}
        self._modules: dict[str, list[str]] = {}  # dotted module name (and each suffix) -> paths
        self._imports: dict[str, dict[str, str]] = {}  # path -> local name -> absolute dotted target
        methods: dict[str, list[str]] = {}
        for path, file_facts in facts.items():
            for function in file_facts.functions:
                function_id = f"{path}::{function.qualname}"
                self.functions[function_id] = (path, function)
                if function.owner and not function.name.startswith("__"):
                    methods.setdefault(function.name, []).append(function_id)
            for cls in file_facts.classes:
                self._classes[(path, cls.qualname)] = cls
            module = _module_of(path)
            parts = module.split(".")
            for start in range(len(parts)):
                self._modules.setdefault(".".join(parts[start:]), []).append(path)
            self._imports[path] = {name: _absolute(target, level, path) for name, target, level in file_facts.imports}
        self._names = {function.name for _, function in self.functions.values()}
        self._unique = {name: ids[0] for name, ids in methods.items() if len(ids) == 1 and name not in _COMMON_METHODS}
        self._attributes: dict[tuple[str, str], dict[str, str]] = {}
        for path, function in self.functions.values():
            for name, value in function.locals:
                if name.startswith("self.") and function.owner:
                    self._attributes.setdefault((path, function.owner), {}).setdefault(name[5:], value)
        for (path, qualname), cls in self._classes.items():
            for name, value in cls.attributes:
                self._attributes.setdefault((path, qualname), {}).setdefault(name, value)
        self._edges: dict[str, tuple[tuple[str, str], ...]] = {}
        self._unresolved: dict[str, tuple[str, ...]] = {}

    # -- calls -------------------------------------------------------------------------------

    def calls(self, function_id: str) -> tuple[tuple[str, str], ...]:
        """(callee as written, resolved function id) for each call that resolves."""
        if function_id not in self._edges:
            self._resolve_all(function_id)
        return self._edges[function_id]

    def pseudo_calls(self, path: str) -> Iterator[tuple[str, str, str]]:
        """(pseudo id, callee, target) for import-time and ``__main__`` calls of a file."""
        for pseudo, callees in (("<module>", self.facts[path].import_calls), ("<main>", self.facts[path].main_calls)):
            for callee in callees:
                target = self._resolve(path, None, callee)
                if target is not None:
                    yield f"{path}::{pseudo}", callee, target

    def resolved_calls(self) -> Iterator[tuple[str, str, str]]:
        for function_id in self.functions:
            for callee, target in self.calls(function_id):
                yield function_id, callee, target

    def unresolved_names(self, function_id: str) -> tuple[str, ...]:
        """Names of the calls of the function that no rule resolved."""
        if function_id not in self._unresolved:
            self._resolve_all(function_id)
        return self._unresolved[function_id]

    def _resolve_all(self, function_id: str) -> None:
        path, function = self.functions[function_id]
        resolved: list[tuple[str, str]] = []
        unresolved: list[str] = []
        for callee in dict.fromkeys(function.calls):
            target = self._resolve(path, function, callee)
            if target is not None:
                resolved.append((callee, target))
            else:
                unresolved.append(callee.rpartition(".")[2])
        self._edges[function_id] = tuple(resolved)
        self._unresolved[function_id] = tuple(unresolved)

    def _resolve(self, path: str, function: FunctionFacts | None, callee: str) -> str | None:
        if callee.rpartition(".")[2] not in self._names:  # most calls go to other packages
            return None
        parts = callee.split(".")
        found = self._resolve_chain(path, function, parts) if parts[0] != "?" else None
        if found is not None or len(parts) < 2:
            return found
        head = parts[0]
        head_known = head not in ("?", "self", "cls") and (head in self._imports[path] or self._name(path, function, head) is not None)
        return None if head_known else self._unique.get(parts[-1])

    def _resolve_chain(self, path: str, function: FunctionFacts | None, parts: list[str]) -> str | None:
        head, rest = parts[0], parts[1:]
        if head in ("self", "cls") and function is not None and function.owner:
            cls: tuple[str, str] | None = (path, function.owner)
            for attribute in rest[:-1]:
                cls = self._attribute_class(cls, attribute) if cls is not None else None
            return self._method(cls, rest[-1]) if cls is not None and rest else None
        typed = self._local_class(path, function, head) if rest else None
        if typed is not None:
            return self._method(typed, rest[0]) if len(rest) == 1 else None
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
            if f"{path}::{nested}" in self.functions:
                return ("function", path, nested)
            scope = self.functions[f"{path}::{scope.parent}"][1] if scope.parent and f"{path}::{scope.parent}" in self.functions else None
        return self._top_level(path, name)

    def _top_level(self, path: str, name: str, depth: int = 0) -> tuple[str, str, str] | None:
        if f"{path}::{name}" in self.functions:
            return ("function", path, name)
        if (path, name) in self._classes:
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
        if kind == "class" and f"{path}::{qualname}.{name}" in self.functions:
            return ("function", path, f"{qualname}.{name}")
        return None

    def _method(self, cls: tuple[str, str], name: str, depth: int = 0) -> str | None:
        path, qualname = cls
        if f"{path}::{qualname}.{name}" in self.functions:
            return f"{path}::{qualname}.{name}"
        facts = self._classes.get(cls)
        for base in facts.bases if facts is not None and depth < MAX_BASE_CLASSES else ():
            found = self._class_named(path, None, base)
            if found is not None:
                method = self._method(found, name, depth + 1)
                if method is not None:
                    return method
        return None

    def _class_named(self, path: str, function: FunctionFacts | None, written: str) -> tuple[str, str] | None:
        name = type_name(written[5:] if written.startswith("call:") else written)
        if not name:
            return None
        parts = name.split(".")
        found = self._name(path, function, parts[0])
        for part in parts[1:]:
            found = self._inside(found, part, 0) if found is not None else None
        return (found[1], found[2]) if found is not None and found[0] == "class" else None

    def _attribute_class(self, cls: tuple[str, str], attribute: str) -> tuple[str, str] | None:
        written = self._attributes.get(cls, {}).get(attribute)
        return self._class_named(cls[0], None, written) if written else None

    def _local_class(self, path: str, function: FunctionFacts | None, name: str) -> tuple[str, str] | None:
        if function is None:
            return None
        written = [v for n, v in function.locals if n == name] + [t for n, t in function.params if n == name]
        if len(set(written)) != 1:  # assigned two ways: no one class
            return None
        return self._class_named(path, function, written[0])


def _module_of(path: str) -> str:
    stem = path[:-3] if path.endswith(".py") else path
    parts = [p for p in stem.split("/") if p]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _absolute(target: str, level: int, path: str) -> str:
    if not level:
        return target
    package = _module_of(path).split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, target]) if target else ".".join(base)


# -- contexts ----------------------------------------------------------------------------------


def _patterns(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    return re.compile("(?:" + "|".join(f"(?:{p})" for p in patterns) + ")") if patterns else None


def classify(
    repository: Repository, names: Names, declared: tuple[tuple[str, ...], tuple[str, ...]], offline_files: frozenset[str]
) -> Contexts:
    """Context of every function the index can place (see the ``callindex`` docstring).
    ``names``: the name lists, as configured; ``declared``: the configuration's
    (``hot-functions``, ``cold-functions``)."""
    roots, hard, soft = _roots(repository, names, declared, offline_files)
    contexts: Contexts = {}
    # Structural roots first: a function they reach shows that chain, not its own name.
    named = {r for r, evidence in roots.items() if evidence.endswith("` runs per step")}
    chains = _spread(repository, {r: e for r, e in roots.items() if r not in named}, blocked=hard.keys())
    later = _spread(repository, {r: roots[r] for r in named if r not in chains}, blocked=set(hard) | set(chains))
    chains.update(later)
    for function_id, chain in chains.items():
        contexts[function_id] = ("per-step", "per step: " + _shown(chain) if len(chain) > 1 else roots[function_id])
    for function_id, verdict in {**soft, **hard}.items():
        if function_id not in contexts or function_id in hard:
            contexts[function_id] = verdict
    _cold_by_callers(repository, contexts)
    return contexts


def _roots(
    repository: Repository, names: Names, declared: tuple[tuple[str, ...], tuple[str, ...]], offline_files: frozenset[str]
) -> tuple[dict[str, str], Contexts, Contexts]:
    """Per-step roots (id -> evidence); cold verdicts no chain overrides (the
    configuration, construction, caches); and cold verdicts read from a name alone."""
    hot, cold = _patterns(declared[0]), _patterns(declared[1])
    cached = names.regex("one-time-decorators")
    roots: dict[str, str] = {}
    hard: Contexts = {}
    soft: Contexts = {}
    for function_id, (path, function) in repository.functions.items():
        name = function.name
        parent = repository.functions.get(f"{path}::{function.parent}")
        if cold is not None and cold.fullmatch(name):
            hard[function_id] = ("one-time", f"`{name}` matches `cold-functions` in the configuration")
        elif path in offline_files:
            hard[function_id] = ("offline", "the file is a test or under cold-paths")
        elif hot is not None and hot.fullmatch(name):
            roots[function_id] = f"`{name}` is named in hot-functions"
        elif name.startswith("__") and name[2:-2] in names.entry("set-up-dunders").values:
            hard[function_id] = ("one-time", f"`{name}` names construction, loading, warm-up or teardown")
        elif cached.search(function.decorators):
            hard[function_id] = ("one-time", "a cached function runs once per argument set")
        elif parent is not None and cached.search(parent[1].decorators) and f"name:{name}" in parent[1].returns:
            roots[function_id] = f"returned by the cached factory `{parent[1].qualname}`, runs on every call"
        elif (cold_name := verdict_by_name(function.name, function.owner, names)) is not None:
            soft[function_id] = cold_name
        elif name in ("forward", "__call__") and function.owner:
            roots[function_id] = f"{name} of {function.owner} runs per step"
        elif names.regex("per-step-functions").fullmatch(name) and name not in ("forward", "__call__"):
            roots[function_id] = f"`{name}` runs per step"
        elif names.regex("per-step-decorators").search(function.decorators):
            roots[function_id] = "a compiled kernel or inference-mode function"
        elif function.loop_calls:
            roots[function_id] = f"`{function.qualname}` runs a long-running loop"
    return roots, hard, soft


def _spread(repository: Repository, roots: Mapping[str, str], blocked: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The shortest chain from a per-step root to every function it reaches."""
    stopped = set(blocked)
    chains: dict[str, tuple[str, ...]] = {r: (repository.functions[r][1].qualname,) for r in sorted(roots)}
    queue = list(chains)
    while queue:
        following: list[str] = []
        for caller in queue:
            _, function = repository.functions[caller]
            loop_only = function.loop_calls and len(chains[caller]) == 1 and "long-running loop" in roots.get(caller, "")
            for callee, target in repository.calls(caller):
                if target in chains or target in stopped or (loop_only and callee not in function.loop_calls):
                    continue
                chains[target] = chains[caller] + (repository.functions[target][1].qualname,)
                following.append(target)
        queue = following
    return chains


def _cold_by_callers(repository: Repository, contexts: Contexts) -> None:
    """A function every resolved caller of which is one-time or offline is so too, unless
    a call the index could not resolve, from code not known cold, may reach it by name."""
    callers: dict[str, list[str]] = {}
    for caller, _, target in repository.resolved_calls():
        callers.setdefault(target, []).append(caller)
    for path in repository.facts:
        for pseudo, _, target in repository.pseudo_calls(path):
            callers.setdefault(target, []).append(pseudo)
            contexts.setdefault(pseudo, ("one-time", "runs at import") if pseudo.endswith("<module>") else ("offline", "a script's `__main__` block"))
    chains: dict[str, tuple[str, ...]] = {f: (f.partition("::")[2],) for f in contexts}
    # How many functions not known cold make an unresolved call by each name.
    warm: Counter[str] = Counter()
    for function_id in repository.functions:
        if contexts.get(function_id, ("",))[0] not in _COLD:
            warm.update(set(repository.unresolved_names(function_id)))
    named: dict[str, list[str]] = {}
    for function_id in callers:
        named.setdefault(repository.functions[function_id][1].name, []).append(function_id)
    queue = sorted(callers)
    while queue:
        again: set[str] = set()
        for function_id in queue:
            seen = callers[function_id]
            if function_id in contexts or warm[repository.functions[function_id][1].name] > 0:
                continue
            kinds = [contexts.get(c, ("",))[0] for c in seen]
            if not all(k in _COLD for k in kinds):
                continue
            kind = "one-time" if "one-time" in kinds else "offline"
            first = min(c for c in seen if contexts[c][0] == kind)
            chains[function_id] = chains[first] + (function_id.partition("::")[2],)
            contexts[function_id] = (kind, f"{kind}, only called from code that is: {_shown(chains[function_id])}")
            # What it calls, and what its unresolved calls no longer keep warm, may be cold now.
            again.update(target for _, target in repository.calls(function_id))
            for name in set(repository.unresolved_names(function_id)):
                warm[name] -= 1
                again.update(named.get(name, ()))
        queue = sorted(again & callers.keys())
    for pseudo in [f for f in contexts if f.endswith(("::<module>", "::<main>"))]:
        del contexts[pseudo]


def _shown(chain: tuple[str, ...]) -> str:
    names = [f"`{q}`" for q in chain]
    if len(names) > _CHAIN_SHOWN:
        names = names[:2] + ["…"] + names[-(_CHAIN_SHOWN - 3):]
    return " → ".join(names)


# -- residency ---------------------------------------------------------------------------------


def host_returning(repository: Repository) -> frozenset[str]:
    """Functions every return of which is a host tensor, directly or through a call to another such function."""
    pending = {f: fn.returns for f, (_, fn) in repository.functions.items() if fn.returns and any(r != "none" for r in fn.returns)}
    host: set[str] = set()
    changed = True
    while changed:
        changed = False
        for function_id, returns in pending.items():
            if function_id in host:
                continue
            targets = dict(repository.calls(function_id))
            if all(r in ("host", "none") or (r.startswith("call:") and targets.get(r[5:]) in host) for r in returns):
                host.add(function_id)
                changed = True
    return frozenset(host)
