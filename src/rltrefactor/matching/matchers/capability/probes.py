"""Capability-selection matchers: branches on probed facts (import fallbacks: ``fallbacks``)."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter, whole_word
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..companions import probe_targets
from ..context import subtree, unpacked
from ..imports import dotted_name
from ..options import Option

_STRING_TESTS = frozenset({"startswith", "endswith", "lower", "upper", "find", "__contains__"})
# What may stand before the ``=`` of an assignment (``major, minor = ...``); greedy, so
# matching never backtracks.



def _only_rejects(branch: cst.If) -> bool:
    """An ``if`` with no ``else`` whose body does nothing but raise."""
    if branch.orelse is not None:
        return False
    body = branch.body.body
    statements = [s for line in body for s in (line.body if isinstance(line, cst.SimpleStatementLine) else [line])]
    return bool(statements) and all(isinstance(s, cst.Raise) for s in statements)


def _enclosing_scope(node: cst.CSTNode, ctx: FileContext) -> int:
    function = ctx.enclosing_function(node)
    return id(function) if function is not None else 0


class ComparedProbe:
    """A comparison with (or test of) a probed device, version or package fact; by default only in branch conditions."""

    reach = MatcherReach(reads="header", companions=probe_targets)

    OPTIONS: ClassVar[dict[str, Option]] = {
        "calls": Option("strings", (), "last names of probing calls, such as get_device_capability"),
        "attributes": Option("strings", (), "qualified names of probed values, such as torch.version.cuda"),
        "truthiness": Option("bool", False, "also report a probe used directly as a condition or tested against None"),
        "branches-only": Option("bool", True, "only comparisons inside if/while/conditional-expression conditions"),
        "skip-functions": Option("regex", "", "functions whose purpose is the probe (is_hopper, check_version); empty = none"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.calls = frozenset(options["calls"])
        self.attributes = frozenset(options["attributes"])
        self.truthiness = options["truthiness"]
        self.branches_only = options["branches-only"]
        self.attribute_names = frozenset(name.rpartition(".")[2] for name in self.attributes)
        self.skip = re.compile(options["skip-functions"]) if options["skip-functions"] else None
        tokens = [*(whole_word(call) for call in sorted(self.calls)), *(t for name in sorted(self.attributes) for t in _attribute_tokens(name))]
        self.prefilter: Prefilter = tuple(dict.fromkeys(tokens))

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for match in self._matches(ctx):
            function = ctx.enclosing_function(match.node)
            skipped = self.skip is not None and function is not None and self.skip.search(function.name.value)
            if not skipped and not defines_flag(match.node, ctx):
                yield match

    def _matches(self, ctx: FileContext) -> Iterator[Match]:
        derived = self._derived_names(ctx)
        if not self.branches_only:
            yield from self._anywhere(ctx, derived)
            return
        kind: type[cst.If | cst.While | cst.IfExp]
        for kind in (cst.If, cst.While, cst.IfExp):
            for branch in ctx.nodes(kind):
                if isinstance(branch, cst.If) and _only_rejects(branch):
                    continue  # a requirement checked (``if v < MIN: raise``) selects no path
                scope = _enclosing_scope(branch, ctx)
                hit = self._in_condition(branch.test, ctx, derived.get(scope, frozenset()))
                if hit is not None:
                    yield Match(hit, {"PROBE": ctx.code(hit)})

    def _anywhere(self, ctx: FileContext, derived: dict[int, frozenset[str]]) -> Iterator[Match]:
        for comparison in ctx.nodes(cst.Comparison):
            if not self.truthiness and _compares_with_none(comparison):
                continue
            names = derived.get(_enclosing_scope(comparison, ctx), frozenset())
            if self._probing_comparison(comparison, ctx, names):
                yield Match(comparison, {"PROBE": ctx.code(comparison)})

    def _probing_comparison(self, comparison: cst.Comparison, ctx: FileContext, names: frozenset[str]) -> bool:
        """A comparison of a probe; a membership test in a probed mapping (``"triton" in
        sys.modules``) only when its key names another package."""
        for test in comparison.comparisons:
            mapping = test.comparator
            if isinstance(test.operator, (cst.In, cst.NotIn)) and isinstance(mapping, (cst.Name, cst.Attribute)) \
                    and self._attribute(mapping, ctx):
                return _names_other_package(comparison.left, ctx)
        operands = [comparison.left, *(t.comparator for t in comparison.comparisons)]
        return any(self._probe(o, ctx, names) for o in operands)

    def _in_condition(self, test: cst.BaseExpression, ctx: FileContext, names: frozenset[str]) -> cst.CSTNode | None:
        for node in subtree(test):
            if isinstance(node, cst.Comparison) and (self.truthiness or not _compares_with_none(node)):
                if self._probing_comparison(node, ctx, names):
                    return node
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                if node.func.attr.value in _STRING_TESTS and self._probe(node.func.value, ctx, names):
                    return node
        if self.truthiness:
            keyed = {id(m) for m in _looked_up(test)}  # decided by their keys, above
            for node in subtree(test):
                if isinstance(node, (cst.Call, cst.Attribute, cst.Name)) and id(node) not in keyed \
                        and self._probe(node, ctx, names):
                    return node
        return None

    def _probe(self, expr: cst.CSTNode, ctx: FileContext, names: frozenset[str]) -> bool:
        """Whether ``expr`` is a probe, or is built from one (index, attribute, wrapper call)."""
        current: cst.CSTNode | None = expr
        while True:
            if isinstance(current, (cst.Name, cst.Attribute)) and names and dotted_name(current) in names:
                return True
            if isinstance(current, (cst.Name, cst.Attribute)) and self._attribute(current, ctx):
                return True
            if isinstance(current, cst.Call):
                last = (dotted_name(current.func) or "").rpartition(".")[2]
                if last in self.calls:
                    return True
                lookup = current.func.value if isinstance(current.func, cst.Attribute) and last == "get" else None
                if isinstance(lookup, (cst.Name, cst.Attribute)) and self._attribute(lookup, ctx):
                    return bool(current.args) and _names_other_package(current.args[0].value, ctx)
                # A one-argument wrapper: version.parse(torch.__version__), int(cap[0]).
                if len(current.args) == 1 and self._probe(current.args[0].value, ctx, names):
                    return True
                current = current.func.value if isinstance(current.func, cst.Attribute) else None
            elif isinstance(current, cst.Subscript) and isinstance(current.value, (cst.Name, cst.Attribute)) \
                    and self._attribute(current.value, ctx):
                key = current.slice[0].slice if len(current.slice) == 1 else None
                return isinstance(key, cst.Index) and _names_other_package(key.value, ctx)
            elif isinstance(current, (cst.Subscript, cst.Attribute)):
                current = current.value
            else:
                return False
            if current is None:
                return False

    def _attribute(self, node: cst.Name | cst.Attribute, ctx: FileContext) -> bool:
        last = node.attr.value if isinstance(node, cst.Attribute) else node.value
        if last not in self.attribute_names and not (isinstance(node, cst.Name) and last in ctx.imports.aliases):
            return False
        return ctx.qualified_name(node) in self.attributes

    def _derived_names(self, ctx: FileContext) -> dict[int, frozenset[str]]:
        """Per function: names and attributes assigned straight from a probe
        (``major, _ = probe()``, ``self.cap = probe()``)."""
        found: dict[int, set[str]] = {}
        for assign in ctx.nodes(cst.Assign):  # source order: earlier names feed later ones
            scope = found.setdefault(_enclosing_scope(assign, ctx), set())
            if not self._probe(assign.value, ctx, frozenset(scope)):
                continue
            for target in assign.targets:
                scope.update(_target_names(target.target))
        return {key: frozenset(value) for key, value in found.items()}


_CONSTRUCTORS = frozenset({"__init__", "__post_init__"})


def defines_flag(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` lies in the value of the assignment that defines a capability flag once:
    a name at module or class level (``HAS_FP8 = probe() >= (8, 9)``), or ``self.x`` in
    ``__init__``; the decided-once place the capability rules recommend."""
    statement = next((a for a in ctx.ancestors(node) if isinstance(a, cst.BaseSmallStatement)), None)
    if isinstance(statement, cst.Assign):
        targets = [t.target for t in statement.targets]
    elif isinstance(statement, cst.AnnAssign) and statement.value is not None:
        targets = [statement.target]
    else:
        return False
    function = ctx.enclosing_function(statement)
    if function is None:
        return all(isinstance(t, cst.Name) for t in targets)
    return function.name.value in _CONSTRUCTORS and all(
        isinstance(t, cst.Attribute) and dotted_name(t.value) == "self" for t in targets
    )


def _looked_up(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """Mappings ``test`` looks a key up in: ``k in m``, ``m[k]``, ``m.get(k)``."""
    for node in subtree(test):
        if isinstance(node, cst.Comparison):
            yield from (t.comparator for t in node.comparisons if isinstance(t.operator, (cst.In, cst.NotIn)))
        elif isinstance(node, cst.Subscript):
            yield node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get":
            yield node.func.value
            yield node.func


def _names_other_package(key: cst.BaseExpression, ctx: FileContext) -> bool:
    """A key of a probed mapping that names a package by a literal, other than the one the
    file belongs to: a computed key (``sys.modules[name]``) reads a cache of modules loaded
    so far, and the reviewed package's own modules are installed with it."""
    if not isinstance(key, cst.SimpleString):
        return False
    package = key.evaluated_value
    top = package.partition(".")[0] if isinstance(package, str) else ""
    parts = ctx.path.split("/")
    own = parts[1] if parts[0] == "src" and len(parts) > 2 else parts[0]
    return bool(top) and top != own


def _compares_with_none(comparison: cst.Comparison) -> bool:
    """``x is None`` or ``x is not None``: whether a probe has a value at all, which is a
    truth test of it (``torch.version.hip is not None`` asks for a ROCm build, not a
    version)."""
    if not all(isinstance(t.operator, (cst.Is, cst.IsNot)) for t in comparison.comparisons):
        return False
    operands = [comparison.left, *(t.comparator for t in comparison.comparisons)]
    return any(isinstance(o, cst.Name) and o.value == "None" for o in operands)


def _target_names(target: cst.BaseExpression) -> Iterator[str]:
    """Dotted names an assignment target binds (``x``, ``self.x``; ``d[k]`` binds none)."""
    for single in unpacked(target):
        name = dotted_name(single) if isinstance(single, (cst.Name, cst.Attribute)) else None
        if name is not None:
            yield name


def _attribute_tokens(qualified: str) -> "tuple[str | re.Pattern[str], ...]":
    """What every use of a probed attribute writes: ``torch.version.cuda`` is spelled
    ``<x>.version.cuda`` (aliases of ``torch.version`` are added by the engine) or, after
    ``from torch.version import cuda``, a bare name ``cuda`` (neither an attribute nor
    the text of a string such as ``"cuda"``); ``sys.modules`` writes ``modules``
    without calling it."""
    parts = qualified.split(".")
    last = re.escape(parts[-1])
    if len(parts) >= 3:
        return (whole_word(parts[-2]), re.compile(rf"{last}(?<![\w.'\"]{last})(?![\w'\"])"))
    return (re.compile(rf"{last}(?<![\w]{last})(?![\w])(?!\s*\()"),)


# Accelerator backends of torch and its out-of-tree extensions; "cpu" is a residency
# question, not a capability one, and is never reported.
ACCELERATORS = ("cuda", "npu", "xpu", "hpu", "mps", "musa", "mlu", "xla", "ipu", "dcu", "rocm", "hip")


class AcceleratorProbe:
    """A branch that asks which accelerator is present or which one a device is."""

    reach = MatcherReach(reads="header")

    OPTIONS: ClassVar[dict[str, Option]] = {
        "backends": Option("strings", ACCELERATORS, "accelerator names whose probes choose an execution path"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.backends = frozenset(options["backends"])
        names = "|".join(sorted(self.backends))
        # Every probe names a backend in a string (``hasattr(torch, "npu")``, ``== "cuda"``,
        # ``.startswith("xpu")``) or asks ``is_available()``.
        self.prefilter: Prefilter = ("is_available(", re.compile(rf"""['"](?:{names})"""))
        self._backend = re.compile(rf"""^['"]({names})(:\d+)?['"]$""")
        self._prefix = re.compile(rf"""^['"]({names})""")

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for kind in (cst.If, cst.While, cst.IfExp):
            for branch in ctx.nodes(kind):
                if isinstance(branch, cst.IfExp) and _names_only(branch):
                    continue  # picks a name (``"cuda" if ... else "cpu"``), not a path
                for node in subtree(branch.test):  # type: ignore[attr-defined]  # If, While and IfExp all have a test
                    if self._probe(node, ctx):
                        if not defines_flag(node, ctx):
                            yield Match(node, {"PROBE": ctx.code(node)})
                        break

    def _probe(self, node: cst.CSTNode, ctx: FileContext) -> bool:
        if isinstance(node, cst.Call):
            name = ctx.qualified_name(node.func) or dotted_name(node.func) or ""
            if name == "hasattr" and len(node.args) == 2:
                return dotted_name(node.args[0].value) == "torch" and self._names_backend(node.args[1].value, prefix=False)
            root, _, leaf = name.rpartition(".")
            if leaf == "is_available" and root.startswith("torch.") and root.split(".")[1] in self.backends:
                return True
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "startswith" and node.args:
                return _is_str_of(node.func.value, ctx) and self._names_backend(node.args[0].value, prefix=True)
        if isinstance(node, cst.Comparison):
            operands = [node.left, *(t.comparator for t in node.comparisons)]
            if any(self._names_backend(o, prefix=False) for o in operands):
                return any(_is_device_type(o) or _is_str_of(o, ctx) for o in operands)
        return False

    def _names_backend(self, expr: cst.BaseExpression, *, prefix: bool) -> bool:
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return any(self._names_backend(e.value, prefix=prefix) for e in expr.elements)
        if not isinstance(expr, cst.SimpleString):
            return False
        return bool((self._prefix if prefix else self._backend).match(expr.value))


def _names_only(choice: cst.IfExp) -> bool:
    return isinstance(choice.body, cst.SimpleString) and isinstance(choice.orelse, cst.SimpleString)


def _is_device_type(expr: cst.BaseExpression) -> bool:
    """``device.type``, ``x.device.type``: the kind of a device."""
    return isinstance(expr, cst.Attribute) and expr.attr.value == "type" and "device" in (dotted_name(expr.value) or "")


def _is_str_of(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """``str(device)`` or ``str(x.device)``."""
    return (
        isinstance(expr, cst.Call) and ctx.qualified_name(expr.func) == "str" and len(expr.args) == 1
        and "device" in (dotted_name(expr.args[0].value) or "")
    )
