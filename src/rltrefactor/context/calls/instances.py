"""Where the instances of a class are kept and what runs them, read across the
repository: every ``self.A = C(...)`` that holds an instance,
found from every mention of the class's name, and every function that calls, iterates or
hands on ``self.A``. How often such a class's ``forward`` runs follows from these
(``CallContexts._by_instances``)."""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple

from ...source import treesitter
from .facts import FunctionFacts
from .links import Repository

MAX_DERIVED_LEVELS = 8  # levels of derived classes followed when every instance must be seen


class SeenUses(NamedTuple):
    """The functions seen using the instances one holder keeps, and whether they are all."""

    uses: tuple[str, ...]
    complete: bool  # no call on an object of unknown class may reach the instances


class Instances:
    """The instance questions of one repository, each answered once."""

    def __init__(self, repository: Repository) -> None:
        self._repository = repository
        self._holders: dict[tuple[str, str], tuple[tuple[str, str, str], ...] | None] = {}
        self._uses: dict[tuple[str, str, str], SeenUses | None] = {}
        self._registries: dict[str, dict[str, str]] = {}  # path -> class name -> registry (``_registries``)

    def holders(self, path: str, qualname: str, depth: int = 0) -> tuple[tuple[str, str, str], ...] | None:
        """Where every instance of the class ``qualname`` of ``path``, or of a class derived
        from it, is kept: (holder's path, holder class, attribute), the attribute ending in
        ``[]`` for a container of instances (``self.blocks = nn.ModuleList([Block() ...])``).
        None unless each is seen: every mention of the class's name (or an alias it is
        imported as) in the repository's code (``RevisionTexts.mentions``: comments,
        docstrings and messages are prose) is an import, an annotation, a type test, a
        class definition or a construction, and every construction is the value (or a
        container element) of a ``self.A = ...`` in a method, or what a factory returns
        whose every call is such a value: a function returning ``C(...)``, a class method
        of ``C`` returning ``cls(...)``."""
        if (path, qualname) not in self._holders:
            self._holders[(path, qualname)] = None  # a class derived from itself through a cycle
            self._holders[(path, qualname)] = self._holders_of(path, qualname, depth)
        return self._holders[(path, qualname)]

    def _holders_of(self, path: str, qualname: str, depth: int) -> tuple[tuple[str, str, str], ...] | None:
        if "." in qualname or self._repository.class_facts(path, qualname) is None or depth > MAX_DERIVED_LEVELS:
            return None
        holders: set[tuple[str, str, str]] = set()
        for derived_path, derived in self._repository.derived(path, qualname):  # their instances run this class's methods too
            found = self.holders(derived_path, derived, depth + 1)
            if found is None:
                return None
            holders.update(found)
        names = {qualname}
        local_aliases: set[tuple[str, str]] = set()  # (path, name): ``vision_cls = C`` in a function
        factories: set[tuple[str, str]] = set()  # (path, callee): ``C.from_config(`` of a class method returning ``cls(...)``
        registries: set[tuple[str, str]] = set()  # (path, name): ``REG = {"a": C, ...}``, whose ``REG[k](...)`` makes a C
        for mentioning in self._repository.texts.mentioning(qualname):
            if self._repository.offline(mentioning) or self._another_class(mentioning, qualname, path):
                continue
            facts = self._repository.facts(mentioning)
            aliases = {m.group(1).decode() for _, after in self._repository.texts.mentions(mentioning, qualname)
                       if (m := _ALIAS.match(after)) is not None}
            names.update(aliases)
            imported = any(local in aliases | {qualname} for local, _, _ in facts.imports)
            for name in {qualname} | aliases:
                for before, after in self._repository.texts.mentions(mentioning, name):
                    local = self._local_alias(mentioning, before, after)
                    factory = self._class_factory(path, qualname, after)
                    if local:
                        local_aliases.add((mentioning, local))
                    elif factory:
                        factories.add((mentioning, f"{name}.{factory}"))
                    elif registry := self._registry(mentioning, name, before, after):
                        registries.add((mentioning, registry))
                    elif self._unused_alias(mentioning, before, after):
                        continue
                    elif not (_inert_mention(before, after, imported) or self._static_call(path, qualname, after)):
                        return None
        calls = [call for name in sorted(names) for call in self._repository.callers(name)]
        calls += [call for alias_path, alias in sorted(local_aliases) for call in self._repository.callers(alias)
                  if call.caller.partition("::")[0] == alias_path and call.callee == alias]
        for call in calls:
            caller_path, _, caller_qualname = call.caller.partition("::")
            if self._repository.offline(caller_path):
                continue
            function = self._repository.function(call.caller)
            made = (path, qualname) if (caller_path, call.callee) in local_aliases else \
                self._repository.class_named(caller_path, function, call.callee) if function is not None else None
            if function is None or made is None:
                return None  # at import time, or a name no rule resolves: it may be this class
            if made != (path, qualname):
                continue
            found = _kept_here(caller_path, function, call.callee)
            if found is None and _returns_every(function, call.callee):
                found = self._kept_by_callers(call.caller, function)  # a factory: its callers keep what it makes
            if found is None:
                return None
            holders.update(found)
        for factory_path, callee in sorted(factories):
            for call in self._repository.callers(callee.rpartition(".")[2]):
                if call.callee != callee or call.caller.partition("::")[0] != factory_path:
                    continue
                function = self._repository.function(call.caller)
                found = _kept_here(factory_path, function, callee) if function is not None else None
                if found is None:
                    return None
                holders.update(found)
        for registry_path, registry in sorted(registries):
            found = self._kept_from_registry(registry_path, registry)
            if found is None:
                return None
            holders.update(found)
        return tuple(sorted(holders)) or None

    def _another_class(self, mentioning: str, name: str, path: str) -> bool:
        """In ``mentioning``, ``name`` is, at module scope, a class other than ``path``'s
        (the file defines or imports a class of that name from elsewhere): none of its
        mentions there is of this class, as aliases of it would be imported by another name."""
        found = self._repository.class_named(mentioning, None, name) if mentioning != path else None
        return found is not None and found != (path, name)

    def _registry(self, path: str, name: str, before: bytes, after: bytes) -> str:
        """``REG`` where the mention is a value of a dict written at module level, ``REG =
        {"sdpa": C, ...}`` (a registry of classes by key); "" otherwise."""
        if not (_DICT_VALUE.search(before) and after.strip() in (b"", b",", b"}", b"},")):
            return ""
        if path not in self._registries:
            self._registries[path] = _registries(self._repository.texts.content(path))
        return self._registries[path].get(name, "")

    def _unused_alias(self, path: str, before: bytes, after: bytes) -> bool:
        """The mention is the value of a module-level alias (``Old = C``) that no code
        names anywhere else: an exported spelling through which nothing is made."""
        alias = _MODULE_ALIAS.match(before)
        if alias is None or after.strip():
            return False
        name = alias.group(1).decode()
        return self._repository.texts.mentioning(name) == (path,) and len(self._repository.texts.mentions(path, name)) == 1

    def _kept_from_registry(self, path: str, registry: str) -> tuple[tuple[str, str, str], ...] | None:
        """Where every instance made through ``registry`` (``REG[key](...)``) is kept: each
        function making one keeps it in ``self.A`` or returns it to callers that do. None
        where the registry is read any other way (``REG.get(key)``, handed on, imported
        under another name, made at import time): its classes may be made anywhere."""
        callee = f"{registry}[]"
        found: set[tuple[str, str, str]] = set()
        for mentioning in self._repository.texts.mentioning(registry):
            if self._repository.offline(mentioning):
                continue
            facts = self._repository.facts(mentioning)
            imported = any(local == registry for local, _, _ in facts.imports)
            for before, after in self._repository.texts.mentions(mentioning, registry):
                defined = mentioning == path and not before.strip() and _DEFINED.match(after)
                listed = imported and not before.strip() and after.strip() in (b"", b",", b")", b"),")  # ``from m import (\n    REG,``
                if not (defined or listed or _IMPORT_LINE.match(before) or _ENTRY_CALL.match(after) or _LOOKED_AT.search(before)):
                    return None
            if callee in facts.import_calls:
                return None
            for function in facts.functions:
                if callee not in function.calls:
                    continue
                kept = _kept_here(mentioning, function, callee)
                if kept is None and _returns_every(function, callee):
                    kept = self._kept_by_callers(f"{mentioning}::{function.qualname}", function)
                if kept is None:
                    return None
                found.update(kept)
        return tuple(sorted(found)) or None

    def _class_factory(self, path: str, qualname: str, after: bytes) -> str:
        """``m`` where the mention is ``C.m(`` and ``m`` is a class method of the class that
        returns ``cls(...)``: every call of it makes an instance. "" otherwise."""
        called = _MEMBER_CALL.match(after)
        method = self._repository.function(f"{path}::{qualname}.{called.group(1).decode()}") if called is not None else None
        made = method is not None and "classmethod" in method.decorators and _returns_every(method, "cls")
        return called.group(1).decode() if made and called is not None else ""

    def _kept_by_callers(self, factory_id: str, factory: FunctionFacts) -> tuple[tuple[str, str, str], ...] | None:
        """Where every instance a factory function returns is kept: each call of it, outside
        tests, the value of a ``self.A = ...`` (``self.vit = self._init_backbone(...)``). None
        where one call resolves elsewhere or keeps its result otherwise."""
        found: set[tuple[str, str, str]] = set()
        factory_path = factory_id.partition("::")[0]
        overridden = {f"{path}::{cls}.{factory.name}" for path, cls in self._repository.lineage(factory_path, factory.owner)} \
            if factory.owner else set()
        for call in self._repository.callers(factory.name):
            caller_path = call.caller.partition("::")[0]
            # ``self.init_vision_module(...)`` in a base's ``__init__`` may run this override.
            dispatched = call.target in overridden and call.callee.startswith("self.")
            if (call.target not in (None, factory_id) and not dispatched) or self._repository.offline(caller_path):
                continue  # another function of the name; a test
            if call.target is None and not call.callee.startswith("self."):
                return None  # an unresolved call of the name may be this factory's, kept anywhere
            caller = self._repository.function(call.caller)
            kept = _kept_here(caller_path, caller, call.callee) if caller is not None else None
            if kept is None:
                return None
            found.update(kept)
        return tuple(sorted(found)) or None

    def _local_alias(self, path: str, before: bytes, after: bytes) -> str:
        """The name a function binds the class to (``vision_cls = C`` alone on its line,
        indented, or as one choice of a conditional expression: ``mlp_cls = C8 if fp8 else
        C``), where the file writes that name nowhere but in such bindings and in bare
        calls, one at least: every instance made through it is then a call of it (a class
        attribute is never called bare, so it is no such name). "" otherwise."""
        bound = _LOCAL_ALIAS.match(before)
        if bound is not None and _FIRST_CHOICE.match(after):
            after = b""
        elif bound is None and not after.strip():
            bound = _SECOND_CHOICE.match(before)
        if bound is None or after.strip() or not before[:1].isspace():
            return ""
        alias = bound.group(1).decode()
        uses = self._repository.texts.mentions(path, alias)
        called = [b for b, a in uses if a.lstrip().startswith(b"(") and not b.endswith(b".")]
        bindings = [b for b, a in uses if not b.strip() and _BINDING.match(a)]
        return alias if called and len(called) + len(bindings) == len(uses) else ""

    def kept(self, path: str, qualname: str) -> tuple[tuple[str, str, str], ...]:
        """Where some instance of the class ``qualname`` of ``path`` is kept, as
        ``holders`` says it, without asking that every instance be seen: each
        ``self.A = C(...)`` (or container element) of a method. Other instances may exist;
        what these show holds for these."""
        kept: set[tuple[str, str, str]] = set()
        for call in self._repository.callers(qualname):
            caller_path = call.caller.partition("::")[0]
            function = self._repository.function(call.caller)
            if function is None or not function.owner or self._repository.class_named(caller_path, function, call.callee) != (path, qualname):
                continue
            kept.update((caller_path, function.owner, name[5:]) for name, value in function.locals
                        if name.startswith("self.") and value == f"call:{call.callee}")
        return tuple(sorted(kept))

    def calls_of_kept(self, holder: tuple[str, str, str]) -> tuple[str, ...]:
        """The functions of the holder's class, its bases and the classes derived from it
        that use ``self.A`` as ``uses`` reads a use (call it or a method of it,
        iterate or index it, pass it on), whatever else the instance meets: a use seen is
        made, even where the instance also escapes."""
        path, owner, attribute = holder
        attribute = attribute.removesuffix("[]")
        written = f"self.{attribute}"
        return tuple(sorted(
            f"{class_path}::{function.qualname}"
            for class_path, function in self._methods(self._repository.lineage(path, owner) + self._repository.derived(path, owner))
            if attribute in function.instance_uses or any(c == written or c.startswith(f"{written}.") for c in function.calls)
        ))

    def _methods(self, classes: list[tuple[str, str]]) -> Iterator[tuple[str, FunctionFacts]]:
        """(path, function) of every function defined in one of ``classes`` (path, class)."""
        for class_path, class_name in classes:
            for function in self._repository.facts(class_path).functions:
                if function.qualname.startswith(class_name + "."):
                    yield class_path, function

    def _static_call(self, path: str, qualname: str, after: bytes) -> bool:
        """``C.m(`` where ``m`` is a static method of the class: no instance is made."""
        called = _MEMBER_CALL.match(after)
        method = self._repository.function(f"{path}::{qualname}.{called.group(1).decode()}") if called is not None else None
        return method is not None and "staticmethod" in method.decorators

    def uses(self, holder: tuple[str, str, str]) -> tuple[str, ...] | None:
        """The functions that may run the instances one holder keeps (``holders``):
        each that calls ``self.A(...)`` or any method of it (``self.A.encode(...)`` may call
        its ``forward``), or hands ``self.A`` to a call, a loop or a subscript, in the holder
        class, its bases and the classes derived from it; each that does so to a property
        returning ``self.A``; each that calls ``x.A(...)`` on an ``x`` of those classes.
        None where such a use lets the instance escape, or a call of an ``A`` on an object
        of unknown class may reach it."""
        seen = self.uses_seen(holder)
        return None if seen is None or not seen.complete else seen.uses

    def uses_seen(self, holder: tuple[str, str, str]) -> SeenUses | None:
        """The uses ``uses`` reads, and whether they are all: not where a call of
        an ``A`` on an object of unknown class (``self.image_encoder.visual(...)``) may reach
        the instances too. None where a use lets the instance escape."""
        if holder not in self._uses:
            self._uses[holder] = self._uses_of(holder)
        return self._uses[holder]

    def _uses_of(self, holder: tuple[str, str, str]) -> SeenUses | None:
        path, owner, attribute = holder
        attribute = attribute.removesuffix("[]")
        classes = self._repository.lineage(path, owner) + self._repository.derived(path, owner)
        methods = [function for _, function in self._methods(classes)]
        if any(f"{attribute}!" in function.instance_uses for function in methods):
            return None
        # Returned only by a property (``return self._filterbank`` of ``filterbank``): a use
        # of the property is a use of the instance, where the property's value does not escape.
        # An accessor that no code outside tests names (``get_decoder`` kept for a library's
        # interface) hands the instance to no one.
        properties = [function for function in methods if f"{attribute}^" in function.instance_uses
                      and ("property" in function.decorators or not self._unnamed(function))]
        if any("property" not in function.decorators or f"{function.name}!" in other.instance_uses
               or f"{function.name}^" in other.instance_uses for function in properties for other in methods):
            return None
        uses: set[str] = set()
        complete = True
        for name in (attribute, *(function.name for function in properties)):
            uses.update(self.calls_of_kept((path, owner, name)))
            through = self._calls_through(name, classes)
            if through is None:
                complete = False
            else:
                uses.update(through)
        return SeenUses(tuple(sorted(uses)), complete)

    def _unnamed(self, function: FunctionFacts) -> bool:
        """Whether nothing outside tests names the method but its definitions (``def name``)
        and accessors of the same name handing it on (``def get_decoder(self): return
        self.model.get_decoder()``): no call, reference or string lookup may reach it. A
        dunder method runs unnamed."""
        name = function.name
        if name.startswith("__"):
            return False
        online = [path for path in self._repository.texts.mentioning(name) if not self._repository.offline(path)]
        mentions = [(before, after) for path in online for before, after in self._repository.texts.mentions(path, name)]
        if not all(before.rstrip().endswith(b"def") or after.lstrip().startswith(b"(") for before, after in mentions):
            return False
        callers = [c for c in self._repository.callers(name) if not self._repository.offline(c.caller.partition("::")[0])]
        return all(c.caller.rpartition(".")[2] == name for c in callers)

    def _calls_through(self, attribute: str, classes: list[tuple[str, str]]) -> set[str] | None:
        """The functions calling ``x.A(...)`` with ``x`` an object of one of ``classes``
        (``self.encoder.audio_encoder(...)``); None where such a call is made on an object of
        unknown class, which may be one of these instances."""
        through: set[str] = set()
        for call in self._repository.callers(attribute):
            # A bare ``A(...)`` is a name of its function or module, not this attribute (the
            # instance reaches it only by being handed on, a use ``calls_of_kept`` reads); a
            # test's call runs in the test.
            caller_path = call.caller.partition("::")[0]
            if call.callee != f"self.{attribute}" and call.target is None and "." in call.callee \
                    and not self._repository.offline(caller_path):
                receiver = self._receiver_class(caller_path, self._repository.function(call.caller), call.callee.split(".")[:-1])
                if receiver is None:
                    return None
                if receiver in classes:
                    through.add(call.caller)
        return through

    def _receiver_class(self, path: str, function: FunctionFacts | None, parts: list[str]) -> tuple[str, str] | None:
        """The class of the object a dotted receiver (``self.encoder``, ``runner.model``) names,
        where ``self``'s class or a typed local and the attributes' types place it."""
        if not parts or function is None:
            return None
        if parts[0] in ("self", "cls"):
            cls = (path, function.owner) if function.owner else None
        else:
            cls = self._repository.local_class(path, function, parts[0])
        for attribute in parts[1:]:
            cls = self._repository.attribute_class(cls, attribute) if cls is not None else None
        return cls


_MEMBER_CALL = re.compile(rb"^\.(\w+)\s*\(")
# A module-level alias (``Old = C``, not indented: ``_LOCAL_ALIAS`` reads a function's).
_MODULE_ALIAS = re.compile(rb"^(\w+)\s*=\s*$")
# A registry's value (``"sdpa": C,``), its definition (``REG = {``, ``REG: dict[...] = {``),
# an entry called (``REG[key](``), and reads that make nothing (``key in REG``, ``sorted(REG)``).
_DICT_VALUE = re.compile(rb"^\s*(\"[^\"]*\"|'[^']*'|\w+)\s*:\s*$")
_DEFINED = re.compile(rb"^\s*(:[^=]*)?=\s*\{")
_ENTRY_CALL = re.compile(rb"^\[[^\]\n]*\]\s*\(")
_LOOKED_AT = re.compile(rb"(\bin|\b(sorted|len|list|tuple|set)\()\s*$")
_ALIAS = re.compile(rb"^\s+as\s+(\w+)")
_LOCAL_ALIAS = re.compile(rb"^\s*(\w+)\s*=\s*$")
# The rest of ``alias = C if cond else D`` after ``C``, and what precedes ``D`` in it.
_FIRST_CHOICE = re.compile(rb"^\s+if\s.+\selse\s+[\w.]+\s*$")
_SECOND_CHOICE = re.compile(rb"^\s*(\w+)\s*=\s*[\w.]+\s+if\s.+\selse\s+$")
_BINDING = re.compile(rb"^\s*=(?!=)")
_COMPARED_BEFORE = re.compile(rb"[=!]=\s*[\"']$")
_COMPARED_AFTER = re.compile(rb"^[\"']\s*[=!]=")
# The class's own definition (``class C:``), a class derived from it, an alias.
_DEFINED_OR_ALIASED = re.compile(rb"(^\s*class\s+|\bclass\s+\w+\s*\(.*|\w\s+as\s+)$")
# Transformers' ``PreTrainedModel`` class attributes that list module classes by name for
# a device map (``_no_split_modules``, ``_keep_in_fp32_modules``, ``_skip_keys_device_placement``):
# accelerate reads the names to place modules whole; nothing loads a class through them.
_DEVICE_MAP_LIST = re.compile(
    rb"\b_(no_split_modules|keep_in_fp32_modules(_strict)?|skip_keys_device_placement)\b[^=]*=\s*[\[(]([^\])]*,)?\s*[\"']$")
_IMPORT_LINE = re.compile(rb"^\s*(from\s+\S+\s+)?import\b")
# What precedes a name in a type position: a variable's or parameter's annotation
# (``x: C``, ``(self, x: C``), a return annotation, a subscript of a name (``Optional[C]``),
# a union, a type test or cast; optionally opening a forward reference (``x: "C"``).
_TYPE_POSITION = re.compile(
    rb"((^|[(,])\s*\*{0,2}[\w.]+\s*:|->|\w\[|\||\bisinstance\(.*,|\bissubclass\(.*,|\bcast\()\s*\(?\s*[\"']?$")


def _kept_here(path: str, function: FunctionFacts, callee: str) -> tuple[tuple[str, str, str], ...] | None:
    """Where a method keeps what each of its calls of ``callee`` makes: every such call the
    value of a ``self.A = ...`` (or a container element of one). None where one is not."""
    kept = [name for name, value in function.locals if name.startswith("self.") and value == f"call:{callee}"]
    if not function.owner or not kept or function.calls.count(callee) != len(kept):
        return None
    return tuple((path, function.owner, name[5:]) for name in kept)


def _returns_every(function: FunctionFacts, callee: str) -> bool:
    """Whether each call of ``callee`` in the function is what one of its ``return``s returns,
    itself or moved and cast (``return resampler.to(dtype)``)."""
    made = function.calls.count(callee)
    return made > 0 and function.returns.count(f"call:{callee}") + function.returns.count(f"made:{callee}") == made


def _inert_mention(before: bytes, after: bytes, imported: bool) -> bool:
    """A mention of a class's name (the text before and after it on its line) that makes
    or hands on no instance, other than a construction (``C(``), which the facts place:
    an import, an annotation, a type test, a class definition, a comment, a device map's
    list of module names. Any other string that is no annotation (a registry's ``"C"``) may
    name a class loaded by ``getattr``: not inert."""
    if after.lstrip().startswith(b"(") or b"#" in before:
        return True
    if _IMPORT_LINE.match(before) or (imported and not before.strip() and after.strip() in (b"", b",", b")", b"),")):
        return True
    if _COMPARED_BEFORE.search(before) or _COMPARED_AFTER.match(after):
        return True  # a string compared with another (``arch == "C"``) names no class to load
    if _DEVICE_MAP_LIST.search(before):
        return True  # ``_no_split_modules = ["C"]``: a device map's unit, no class to load
    if _ALIAS.match(after) or _DEFINED_OR_ALIASED.search(before):
        return True  # imported under another name, which is searched too; a derived class, placed by its bases
    return bool(_TYPE_POSITION.search(before)) or after.lstrip().startswith(b"|")


def _registries(text: bytes) -> dict[str, str]:
    """Each class name a module-level dict literal holds as a value, and the dict's name:
    ``REG = {"sdpa": C, "eager": D}`` gives ``{"C": "REG", "D": "REG"}``."""
    found: dict[str, str] = {}
    for statement in treesitter.parse_bytes(text).root_node.named_children:
        assignment = statement.named_children[0] if statement.type == "expression_statement" and statement.named_children else None
        if assignment is None or assignment.type != "assignment":
            continue
        left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier" or right.type != "dictionary":
            continue
        for pair in right.named_children:
            value = pair.child_by_field_name("value") if pair.type == "pair" else None
            if value is not None and value.type == "identifier" and value.text is not None:
                found.setdefault(value.text.decode(), (left.text or b"").decode())
    return found
