"""Responsibilities-and-state matchers: who owns which attribute and container."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import DEL_KEYWORD, GuardedRegex, Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..companions import SELF_NAMES, SELF_PRIVATE_WRITE, foreign_receivers, written_self_names
from ..context import enclosing_functions, in_setup_function, is_setup_name, is_target
from ..imports import dotted_name
from ..options import Option
from ..residency.type_names import known_alternatives

MUTATORS = (
    "append", "appendleft", "extend", "extendleft", "insert", "remove", "pop", "popleft",
    "popitem", "clear", "discard", "add", "update", "setdefault", "sort", "reverse",
)  # fmt: skip
# Attribute names that are public API despite the underscore (namedtuple, enum).
UNDERSCORE_API = ("_replace", "_asdict", "_fields", "_make", "_field_defaults", "_value_", "_name_", "_missing_")
# ``x._name`` where ``x`` is not the bare name ``self`` or ``cls`` and ``_name`` is not a
# dunder (``__doc__``): every foreign access.
# (Regexes start with a literal so that ``re`` can skip ahead: several times faster.)
_PRIVATE = r"\._(?<!(?<![\w.])self\._)(?<!(?<![\w.])cls\._)(?!_\w*__(?!\w))\w*"
_FOREIGN_PRIVATE = re.compile(_PRIVATE)
# ...and every way such an access is written to: (augmented) assignment, possibly through
# attributes or subscripts of it (``x._p.size = 1``) or inside a target's subscript, as
# part of a tuple target (also one element per line), annotation, loop target, ``del``
# and mutating calls.
_FOREIGN_PRIVATE_WRITE = (
    re.compile(
        _PRIVATE
        + r"(?:\s*\.\s*\w+|\s*\[[^\]\n]*\])*[)\]]*\s*(?:(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)|:|\s+in\b|,[^\n]*[^=!<>]=(?!=)|,[ \t]*(?:#[^\n]*)?(?:\n|$))"
    ),
    re.compile(_PRIVATE + r"\s*\.\s*(?:" + "|".join(MUTATORS) + r")\s*\("),
    # A deletion names the attribute on its own line, or opens a parenthesised list.
    re.compile(DEL_KEYWORD + r"\b(?:[^\n#]*\._|[ \t]*\()"),
)
# Modules, parameters and tensors that engines use as namespaces for attached state
# (``layer._scale = ...`` while processing weights): no component owns invariants there.
OWNER_WORDS = (
    "manager", "scheduler", "pool", "allocator", "runner", "worker", "engine", "executor",
    "tracker", "coordinator", "registry", "connector", "cache", "store",
)  # fmt: skip
# snake_case, CamelCase and UPPER_CASE spellings, literally, so the prefilter is exact and fast.
OWNER_REGEX = "(" + "|".join(w for word in OWNER_WORDS for w in (word, word.capitalize(), word.upper())) + ")[sS]?$"
NAMESPACE_RECEIVERS = r"(?i)^(m|mod|t|w|layer|module|submodule|model|param|parameter|weight|tensor)$|_(layer|module|model|param|weight|tensor)$"
_CONSTRUCTORS = re.compile(r"^(cls|type\(self\)|self\.__class__|copy\.(deep)?copy|object\.__new__|cls\.__new__|super\(\)\.__new__)\b")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _head(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        expr = expr.value if not isinstance(expr, cst.Call) else expr.func
    return expr


class ForeignPrivateAttribute:
    """Reading or writing an underscore attribute of another object."""

    # Receivers are told apart by where they were assigned (``own = cls()``), and
    # nothing is reported in set-up methods.
    reach = MatcherReach(reads="header", companions=foreign_receivers, companion_lines="assignments", never_in_setup=True)

    OPTIONS = {
        "writes": Option("bool", True, "report assignments, deletions and mutating calls through the attribute"),
        "reads": Option("bool", False, "report reads and calls"),
        "allowed": Option("strings", UNDERSCORE_API, "underscore names that are public API"),
        "namespace-receivers": Option("regex", NAMESPACE_RECEIVERS, "last names of receivers used as namespaces (modules, parameters, tensors)"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.report_writes, self.report_reads = options["writes"], options["reads"]
        self.allowed = frozenset(options["allowed"])
        self.namespace = re.compile(options["namespace-receivers"])
        self.prefilter: Prefilter = (_FOREIGN_PRIVATE,) if self.report_reads else _FOREIGN_PRIVATE_WRITE

    def find(self, ctx: FileContext) -> Iterator[Match]:
        owned = _owned_locals(ctx)
        for node in ctx.nodes(cst.Attribute):
            name = node.attr.value
            if not _is_private(name) or name in self.allowed or self._own(node.value, ctx, owned):
                continue
            if self.namespace.search(_last_name(node.value)) or in_setup_function(node, ctx):
                continue  # state attached to a module/tensor, or wiring done during construction
            write = _is_write(node, ctx)
            if (write and self.report_writes) or (not write and self.report_reads):
                yield Match(node, {"OWNER": ctx.code(node.value), "NAME": name})

    def _own(self, receiver: cst.BaseExpression, ctx: FileContext, own: set[tuple[int, str]]) -> bool:
        if isinstance(receiver, cst.Name):
            if receiver.value in SELF_NAMES or receiver.value in ctx.imports.aliases:
                return True  # self, or a module/class this file imports (module-private API)
            function = ctx.enclosing_function(receiver)
            if function is not None and function.name.value.startswith("__") and function.name.value not in ("__init__", "__call__"):
                return True  # comparison/copy protocols read the other instance by design
            return (id(function), receiver.value) in own
        if isinstance(receiver, cst.Call):
            return ctx.code(receiver.func) in ("super", "type")
        dotted = dotted_name(receiver)  # torch._C._flag: a path inside an imported module
        return dotted is not None and dotted.split(".")[0] in ctx.imports.aliases


def _last_name(expr: cst.BaseExpression) -> str:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return expr.value if isinstance(expr, cst.Name) else ""


def _is_write(node: cst.Attribute, ctx: FileContext) -> bool:
    if is_target(node, ctx):
        return True
    parent = ctx.parent(node)
    if isinstance(parent, cst.Subscript) and parent.value is node and is_target(parent, ctx):
        return True
    if isinstance(parent, cst.Attribute) and parent.attr.value in MUTATORS:
        call = ctx.parent(parent)
        return isinstance(call, cst.Call) and call.func is parent
    return False


def _owned_locals(ctx: FileContext) -> set[tuple[int, str]]:
    """(function, local name) pairs the function owns: names bound to a new instance of
    the enclosing class, and the functions and classes it defines (a decorator tags the
    wrapper it returns: ``wrapper._is_task = True``). Module-level definitions do not
    count: planning keeps a companion definition in the token's region only inside one
    function."""
    own: set[tuple[int, str]] = set()
    definitions: list[cst.FunctionDef | cst.ClassDef] = [*ctx.nodes(cst.FunctionDef), *ctx.nodes(cst.ClassDef)]
    for definition in definitions:
        function = ctx.enclosing_function(definition)
        if function is not None:
            own.add((id(function), definition.name.value))
    for assign in ctx.nodes(cst.Assign):
        if not isinstance(assign.value, cst.Call):
            continue
        callee = ctx.code(assign.value.func)
        cls = ctx.enclosing_class(assign)
        if not (_CONSTRUCTORS.match(callee) or (cls is not None and callee == cls.name.value)):
            continue
        function = ctx.enclosing_function(assign)
        for target in assign.targets:
            if isinstance(target.target, cst.Name):
                own.add((id(function), target.target.value))
    return own


class CollaboratorContainerMutation:
    """Mutating a container that another component owns, instead of calling its operation."""

    reach = MatcherReach(reads="header")

    OPTIONS = {
        "mutators": Option("strings", MUTATORS, "container methods that change the container"),
        "owner-regex": Option(
            "regex",
            OWNER_REGEX,
            "names of components that own state (the attribute or parameter holding the container)",
        ),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.mutators = frozenset(options["mutators"])
        self.owner = re.compile(options["owner-regex"])
        calls = tuple(f".{m}(" for m in sorted(self.mutators))
        # The owner's line also calls a mutator, opens a subscript or deletes.
        owner = tuple(GuardedRegex(regex, (*calls, "[", "del ")) for regex in _owner_prefilter(options["owner-regex"]))
        self.prefilter: Prefilter = owner or calls + ("] =", "del ")

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in self.mutators:
                owner = self._foreign_owner(func.value, ctx)
                if owner is not None and not _in_construction(call, ctx) and not _typed_other_than_container(func.value, ctx):
                    yield Match(call, {"CONTAINER": ctx.code(func.value), "OWNER": owner, "OP": func.attr.value})
        for sub in ctx.nodes(cst.Subscript):
            if is_target(sub, ctx):
                owner = self._foreign_owner(sub.value, ctx)
                if owner is not None and not _in_construction(sub, ctx) and not _typed_other_than_container(sub.value, ctx):
                    yield Match(sub, {"CONTAINER": ctx.code(sub.value), "OWNER": owner, "OP": "item assignment"})

    def _foreign_owner(self, container: cst.BaseExpression, ctx: FileContext) -> str | None:
        """The owning component's name when ``container`` is ``<component>.<container>``."""
        if not isinstance(container, cst.Attribute) or container.attr.value.startswith("_"):
            return None  # a private container is foreign-private-state-write's finding
        owner = container.value
        if isinstance(owner, cst.Attribute) and isinstance(head := _head(owner), cst.Name) and head.value == "self":
            name = owner.attr.value
        elif isinstance(owner, cst.Name) and owner.value not in SELF_NAMES and _is_parameter(owner, ctx):
            name = owner.value
        else:
            return None
        return name if self.owner.search(name) else None


# Python's own containers, as the type engine names them (``builtins.dict[str, Request]``).
_CONTAINER_TYPES = frozenset(
    "dict list set deque OrderedDict defaultdict Counter Dict List Set Deque MutableMapping MutableSequence MutableSet".split())


def _typed_other_than_container(container: cst.BaseExpression, ctx: FileContext) -> bool:
    """The type engine says what ``container`` is, and it is no Python container: a tensor
    written by index, or a component whose own method (``client.discard``) does its own
    bookkeeping. Unknown is no answer."""
    known = known_alternatives(ctx.value_type(container))
    return bool(known) and not any(alt.partition("[")[0].rpartition(".")[2] in _CONTAINER_TYPES for alt in known)


def _in_construction(node: cst.CSTNode, ctx: FileContext) -> bool:
    """Setup code other than ``reset*``: a reset runs at run time, between requests or
    steps, so changing a collaborator's containers there is the same hazard as in a step."""
    return any(
        is_setup_name(f.name.value) and "reset" not in f.name.value.lower().split("_")
        for f in enclosing_functions(node, ctx)
    )


def _owner_prefilter(owner_regex: str) -> "tuple[re.Pattern[str], ...]":
    """The owner's name followed by ``.``: every reported container is ``<owner>.<name>``.

    Derived only from a regex anchored at its end and nowhere else."""
    if not owner_regex.endswith("$") or re.search(r"\^|\$.|\\\$|\(\?[=!<]", owner_regex):
        return ()
    return (re.compile(owner_regex[:-1] + r"\s*\."),)


def _is_parameter(name: cst.Name, ctx: FileContext) -> bool:
    function = ctx.enclosing_function(name)
    if function is None:
        return False
    params = function.params
    every = (*params.posonly_params, *params.params, *params.kwonly_params)
    return any(p.name.value == name.value for p in every)




class PerCallTemporaryOnSelf:
    """An attribute set and read within one method call only: a local kept on ``self``."""

    OPTIONS: ClassVar[dict[str, Option]] = {}
    # A temporary is an attribute no other method touches, so every use of a written
    # name is read (``companions``); writes in setup methods are never temporaries, so
    # they select nothing.
    reach = MatcherReach(reads="header", never_in_setup=True, companions=written_self_names)

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        # Every finding is the plain write that starts the temporary's life.
        self.prefilter: Prefilter = (SELF_PRIVATE_WRITE,)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        uses: dict[tuple[int, str], list[tuple[cst.FunctionDef, cst.Attribute, bool]]] = {}
        for node in ctx.nodes(cst.Attribute):  # source order
            if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
                continue
            cls, method = _class_and_method(node, ctx)
            if cls is not None and method is not None:
                uses.setdefault((id(cls), node.attr.value), []).append((method, node, _plain_write(node, ctx)))
        declared = _declared_attributes(ctx)
        by_name = _named_by_string(ctx)
        for (cls_id, name), seen in uses.items():
            if not name.startswith("_") or name.startswith("__"):
                continue  # public attributes may be read by other objects; mangled names are rare
            method, first, first_is_write = seen[0]
            # A temporary: written first, read back, and never touched by another method.
            if not first_is_write or all(write for _, _, write in seen):
                continue
            if len(seen) > 1 and _statement(seen[1][1], ctx) is _statement(first, ctx):
                continue  # ``self.x = wrap(self.x)`` reads the previous value first
            if name in declared.get(cls_id, ()) or any(m is not method for m, _, _ in seen):
                continue
            if any(m is not method for m in by_name.get((cls_id, name), ())):
                continue  # ``getattr(self, "_x", None)`` in another method reads it too
            if _conditional(first, method, ctx):
                continue  # ``if self._buf is None or too small: self._buf = ...``: a cache kept across calls
            if not is_setup_name(method.name.value) and not _is_property(method):
                yield Match(first, {"NAME": name, "METHOD": method.name.value})


def _named_by_string(ctx: FileContext) -> dict[tuple[int, str], list[cst.FunctionDef]]:
    """Per (class, attribute): the methods that reach ``self``'s attribute by its name in a
    string (``getattr(self, "_x", None)``, ``hasattr``, ``setattr``, ``delattr``)."""
    found: dict[tuple[int, str], list[cst.FunctionDef]] = {}
    for call in ctx.nodes(cst.Call):
        if not (isinstance(call.func, cst.Name) and call.func.value in ("getattr", "hasattr", "setattr", "delattr")
                and len(call.args) >= 2 and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "self"
                and isinstance(call.args[1].value, cst.SimpleString)):
            continue
        name = call.args[1].value.evaluated_value
        cls, method = _class_and_method(call, ctx)
        if isinstance(name, str) and cls is not None and method is not None:
            found.setdefault((id(cls), name), []).append(method)
    return found


def _conditional(node: cst.CSTNode, method: cst.FunctionDef, ctx: FileContext) -> bool:
    for ancestor in ctx.ancestors(node):
        if ancestor is method:
            return False
        if isinstance(ancestor, cst.If):
            return True
    return False


def _plain_write(node: cst.Attribute, ctx: FileContext) -> bool:
    """Assigned without reading the old value (``self.x += 1`` reads it first, and so
    does ``self.x.size = 1``, which changes the object it holds)."""
    parent = ctx.parent(node)
    if isinstance(parent, (cst.Attribute, cst.Subscript)) and parent.value is node:
        return False
    return is_target(node, ctx) and not isinstance(parent, cst.AugAssign)


def _statement(node: cst.CSTNode, ctx: FileContext) -> cst.CSTNode | None:
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.BaseSmallStatement):
            return ancestor
    return None


def _class_and_method(node: cst.CSTNode, ctx: FileContext) -> tuple[cst.ClassDef | None, cst.FunctionDef | None]:
    method = None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef):
            method = ancestor
        elif isinstance(ancestor, cst.ClassDef):
            return ancestor, method
    return None, None


def _is_property(function: cst.FunctionDef) -> bool:
    for decorator in function.decorators:
        name = dotted_name(decorator.decorator) or ""
        if "property" in name or name.endswith((".setter", ".deleter")):
            return True
    return False


def _declared_attributes(ctx: FileContext) -> dict[int, set[str]]:
    """Per class: names set in setup methods or declared in the class body."""
    declared: dict[int, set[str]] = {}
    for cls in ctx.nodes(cst.ClassDef):
        names = declared.setdefault(id(cls), set())
        for statement in cls.body.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
                    targets += [small.target] if isinstance(small, cst.AnnAssign) else []
                    names.update(t.value for t in targets if isinstance(t, cst.Name))
    for node in ctx.nodes(cst.Attribute):
        if isinstance(node.value, cst.Name) and node.value.value == "self" and is_target(node, ctx):
            owner, method = _class_and_method(node, ctx)
            if owner is not None and method is not None and is_setup_name(method.name.value):
                declared.setdefault(id(owner), set()).add(node.attr.value)
    return declared
