"""Dataclass and NamedTuple fields that hold host tensors, read from every place the
repository gives them a value.

A field is on the host when every value it can hold is shown on the host:
- every construction of its class, by its name or as ``cls(...)`` in the class's own
  methods, passes it a host value, or leaves it to a default that holds no tensor
  (``None``, a literal, ``field(default_factory=list)``); a construction in an engine's
  CPU backend (``host-backend-paths``) passes host values whatever it passes;
- every write of an attribute of that name anywhere in the repository (``batch.lens =
  ...``, ``replace(meta, lens=...)``) is a host value, or ``None``, or a literal, unless
  its receiver is shown to be another class (``self`` in another class's method, a
  parameter annotated as one): a receiver of unknown class may be this one;
- at least one of those is a host value (a field nothing fills is not proof).
A construction in the class's own method that passes the field its own value, or a slice
of it (``Meta(lens=self.lens[indices])``), adds no place of its own.

Anything unseen is unknown and proves nothing: a construction no rule resolves to the
class, one that unpacks its arguments (``Meta(**kw)``) or is made at import time, a
subclass (whose instances the field's readers may hold), ``setattr`` with a computed
name in a file that names the field, a default that may hold a tensor.
"""

from __future__ import annotations

import re
from typing import Callable

from .facts import ClassFacts
from .links import Repository
from ...source.aliases import module_of

# ``.name`` not followed by ``(``: an attribute read, not a method call.
_READ = re.compile(rb"\.([A-Za-z_]\w*)\b(?!\s*\()")


class HostFields:
    """Which dataclass fields a file reads are proven to hold host tensors."""

    def __init__(self, repository: Repository, host_backend: Callable[[str], bool]) -> None:
        self.repository = repository
        self._host_backend = host_backend
        self._classes: dict[str, list[tuple[str, ClassFacts]]] = {}  # field name -> its dataclasses
        self._proven: dict[tuple[str, str, str], bool] = {}
        self._constructions: dict[tuple[str, str], list[tuple[str | None, list[bytes] | None]] | None] = {}

    def read_in(self, path: str) -> frozenset[str]:
        """``module.Class.field`` of each host field whose name ``path`` reads as an attribute."""
        declared = self.repository.texts.tensor_field_files()
        read = {match.group(1).decode("ascii", "replace") for match in _READ.finditer(self.repository.texts.content(path))}
        return frozenset(
            f"{module_of(where)}.{cls.qualname}.{name}"
            for name in sorted(read & declared.keys())
            for where, cls in self._declaring(name, declared[name])
            if self.on_host(where, cls, name)
        )

    def _declaring(self, name: str, paths: frozenset[str]) -> list[tuple[str, ClassFacts]]:
        """The dataclasses that declare ``name`` a tensor field, among the files whose text
        may (``RevisionTexts.tensor_field_files``): only those files are parsed."""
        if name not in self._classes:
            self._classes[name] = [(where, cls) for where in sorted(paths) for cls in self.repository.facts(where).classes
                                   if name in cls.tensor_fields]
        return self._classes[name]

    def on_host(self, path: str, cls: ClassFacts, name: str) -> bool:
        key = (path, cls.qualname, name)
        if key not in self._proven:
            self._proven[key] = self._proven_on_host(path, cls, name)
        return self._proven[key]

    def _proven_on_host(self, path: str, cls: ClassFacts, name: str) -> bool:
        # Cheapest first: most fields fail at their constructions, which a class shares.
        if f"{name}!" in cls.fields or "<locals>" in cls.qualname:
            return False
        constructed = self._constructed(path, cls, name)
        if constructed is None:
            return False
        host_written = False
        lineage = set(self.repository.lineage(path, cls.qualname))
        for mentioning in self.repository.texts.mentioning(name):
            for attribute, kind, qualname, receiver in self.repository.facts(mentioning).field_writes:
                if attribute not in (name, "*") or self._elsewhere(mentioning, qualname, receiver, lineage):
                    continue
                if kind != "h":
                    return False
                host_written = True
        return (constructed or host_written) and not self.repository.derived(path, cls.qualname)

    def _elsewhere(self, path: str, qualname: str, receiver: str, lineage: set[tuple[str, str]]) -> bool:
        """A write whose receiver is shown to be of a class of the repository other than
        the field's own and its bases: ``self`` in another class's method, a parameter or
        local annotated or built as another class. Unknown receivers may be the class."""
        function = self.repository.function(f"{path}::{qualname}")
        if function is None or not receiver:
            return False
        if receiver == "self":
            return bool(function.owner) and (path, function.owner) not in lineage
        written = next((t for n, t in function.params if n == receiver), None) or \
            next((t for n, t in function.locals if n == receiver), None)
        found = self.repository.class_named(path, function, written) if written else None
        return found is not None and found not in lineage

    def _constructed(self, path: str, cls: ClassFacts, name: str) -> bool | None:
        """Whether some construction passes ``name`` a host value (False: none passes it
        one, every one leaves it to its default); None where one may pass anything else."""
        sites = self._sites(path, cls)
        if sites is None:
            return None
        fields = [entry.rstrip("!") for entry in cls.fields]
        host = False
        for arguments, written in sites:
            if arguments is None:  # a construction in a CPU backend
                host = True
                continue
            passed = _passed(arguments, fields, name)
            if passed is None and not (written is not None and _keeps_own(written, fields, name)):
                return None
            host = host or bool(passed)
        return host

    def _sites(self, path: str, cls: ClassFacts) -> list[tuple[str | None, list[bytes] | None]] | None:
        """Every construction of the class, once per class: its arguments as
        ``FunctionFacts.call_args`` writes them (None in a CPU backend) and, in the class's own
        methods, as written; None where a construction cannot be read or resolved."""
        key = (path, cls.qualname)
        if key not in self._constructions:
            self._constructions[key] = self._read_sites(path, cls)
        return self._constructions[key]

    def _read_sites(self, path: str, cls: ClassFacts) -> list[tuple[str | None, list[bytes] | None]] | None:
        class_name = cls.qualname.rpartition(".")[2]
        calls = [(call.caller, call.callee) for call in self.repository.callers(class_name)]
        calls += [(f"{path}::{f.qualname}", "cls") for f in self.repository.facts(path).functions
                  if f.owner == cls.qualname and "cls" in f.calls]
        found: list[tuple[str | None, list[bytes] | None]] = []
        for caller_id, callee in calls:
            caller_path = caller_id.partition("::")[0]
            caller = self.repository.function(caller_id)
            if caller is None:
                return None  # import time: a module-level instance nothing reads here
            if callee != "cls":
                resolved = self.repository.class_named(caller_path, caller, callee)
                if resolved is None:
                    return None  # a call of the name no rule resolves: it may build this class
                if resolved != (path, cls.qualname):
                    continue  # another class of the name
            if self._host_backend(caller_path):
                found.append((None, None))
                continue
            sites = [arguments for written, arguments in caller.call_args if written == callee]
            if not sites:
                return None
            texts = self.repository.call_arguments(caller_id, callee) if caller.owner == cls.qualname else None
            aligned = texts is not None and len(texts) == len(sites)
            found.extend((arguments, texts[index] if aligned and texts is not None else None) for index, arguments in enumerate(sites))
        return found


def _keeps_own(written: list[bytes], fields: list[str], name: str) -> bool:
    """A site in the class's own method that passes the field its own value, or a part
    of it (``Meta(lens=self.lens[indices])`` in ``__getitem__``): it adds no place."""
    own = re.compile(rb"self\." + re.escape(name.encode()) + rb"(\[[^\]]*\])?")
    for index, item in enumerate(written):
        keyword = re.match(rb"\s*(\w+)\s*=(?!=)", item)
        if (keyword and keyword.group(1).decode() == name) or (not keyword and index < len(fields) and fields[index] == name):
            value = item[keyword.end():] if keyword else item
            return own.fullmatch(value.strip()) is not None
    return False


def _passed(arguments: str, fields: list[str], name: str) -> bool | None:
    """True where one site (``FunctionFacts.call_args``) passes ``name`` a host value,
    False where it leaves it to its default, None where it passes anything else or may
    (an unpacking)."""
    for index, item in enumerate(arguments.split(",") if arguments else ()):
        keyword, equals, value = item.partition("=")
        if item == "*":
            return None
        if equals and keyword == name:
            return True if value == "h" else None
        if not equals and index < len(fields) and fields[index] == name:
            return True if item == "h" else None
    return False
