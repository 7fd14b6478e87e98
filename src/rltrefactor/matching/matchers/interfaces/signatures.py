"""Interface matchers: flags passed by position, stringly-typed states, wide tuples."""

from __future__ import annotations

import re
from typing import Any, Iterator, TypeGuard

import libcst as cst

from ...prefilter import GuardedRegex, Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..companions import residency_companions
from ..imports import dotted_name
from ..options import Option
from ..walk import subtree
from ..residency.type_names import known_alternatives
from .closed_sets import declared_closed, typed_literal

BOOLS = ("True", "False")
# Callees whose boolean argument is a value, not a mode switch.
VALUE_TAKING = (
    "getattr", "setattr", "get", "pop", "setdefault", "append", "insert", "extend", "add", "put",
    "fill", "fill_", "full", "full_like", "new_full", "masked_fill", "masked_fill_", "index_fill",
    "index_fill_", "tensor", "as_tensor", "where", "__setitem__", "partial", "cast", "replace",
    "_replace", "eq", "ne", "assertEqual", "assertIs", "assert_called_with", "dict", "field",
)  # fmt: skip
_SKIP_DECORATORS = re.compile(r"(^|\.)(override|overload|setter|property|cached_property)$")
# A parameter annotated ``bool`` or defaulting to True/False.
_BOOL_PARAMETER = re.compile(r":\s*bool\b|=\s*(?:True|False)\b")
# True/False right after an opening parenthesis or a comma (comments and line
# continuations may stand between): every bare positional boolean argument.
_BARE_BOOL = re.compile(r"[(,](?:\s|\\\n|#[^\n]*\n)*(?:True|False)\b")
# Libraries whose signatures the project does not own (``torch.ops.vllm.op(x, True)``).
EXTERNAL_CALLEES = ("torch.", "np.", "numpy.", "F.", "triton.", "tl.")


_PLAIN_BASES = frozenset({"object", "ABC", "abc.ABC", "Protocol", "typing.Protocol", "Generic"})


def _may_override(function: cst.FunctionDef, ctx: FileContext) -> bool:
    """A method of a class with a base class other than object/ABC/Protocol."""
    block = ctx.parent(function)
    cls = ctx.parent(block) if block is not None else None
    if not isinstance(cls, cst.ClassDef):
        return False
    bases = [dotted_name(arg.value) or "" for arg in cls.bases]
    return any(base.partition("[")[0] not in _PLAIN_BASES for base in bases)


def _flag_prefilter(regex: str) -> "tuple[re.Pattern[str], ...]":
    """A flag name at the start of a word, followed by a ``bool`` annotation or a
    True/False default, possibly after another annotation (``Constexpr[bool] = True``):
    what the matcher requires of a parameter it reports.

    Derived only from a regex anchored at its start and nowhere else."""
    if not regex.startswith("^") or re.search(r"\^|\$|\(\?[=!<]", regex[1:]):
        return ()
    return (re.compile(r"(?<![\w.])(?:" + regex[1:] + r")\w*\s*(?::\s*bool\b|(?::[^=\n]*)?=\s*(?:True|False)\b)"),)


def _is_bool(node: cst.BaseExpression | None) -> TypeGuard[cst.Name]:
    return isinstance(node, cst.Name) and node.value in BOOLS


class PositionalBooleanParameter:
    """A public function's boolean mode flag that callers can pass by position."""

    reach = MatcherReach(reads="header")

    OPTIONS = {
        "flag-regex": Option(
            "regex",
            r"^(is|use|enable|disable|skip|force|allow|do|with|has|need|should)_",
            "names of parameters that switch behaviour (data-like flags such as keepdim are left alone)",
        ),
        "methods-only": Option(
            "bool", True, "only methods of classes, the interfaces other components call (not module-level or nested functions)"
        ),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.flag = re.compile(options["flag-regex"])
        self.methods_only = options["methods-only"]
        # Every reported parameter's line says bool, True or False.
        self.prefilter: Prefilter = tuple(
            GuardedRegex(regex, ("bool", "True", "False")) for regex in _flag_prefilter(options["flag-regex"]) or (_BOOL_PARAMETER,)
        )

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for function in ctx.nodes(cst.FunctionDef):
            name = function.name.value
            if name.startswith("_") or any(_SKIP_DECORATORS.search(dotted_name(d.decorator) or "") for d in function.decorators):
                continue
            body = ctx.parent(function)
            if self.methods_only and (body is None or not isinstance(ctx.parent(body), cst.ClassDef)):
                continue  # not a method: the parent is the class body, whose parent is the class
            if _may_override(function, ctx):
                continue  # the signature may belong to a base class (``FusedMoEMethodBase.apply``)
            params = [*function.params.posonly_params, *function.params.params]
            if params and params[0].name.value in ("self", "cls") and ctx.enclosing_class(function) is not None:
                params = params[1:]
            if len(params) < 2:
                continue  # a setter's single flag reads fine at the call site
            for param in params:
                if not self.flag.search(param.name.value):
                    continue
                annotated = param.annotation is not None and dotted_name(param.annotation.annotation) == "bool"
                if annotated or _is_bool(param.default):
                    yield Match(param, {"NAME": param.name.value, "FUNCTION": name})


class BareBooleanArgument:
    """A True/False literal passed by position to a call that takes several arguments."""

    reach = MatcherReach(reads="header")

    OPTIONS = {
        "value-taking": Option("strings", VALUE_TAKING, "callee names whose boolean argument is data"),
        "external-prefixes": Option("strings", EXTERNAL_CALLEES, "callee prefixes of libraries whose signatures the project does not own"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.skip = frozenset(options["value-taking"])
        self.external = tuple(options["external-prefixes"])
        self.prefilter: Prefilter = (_BARE_BOOL,)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            if len(call.args) < 2:
                continue
            callee = dotted_name(call.func) or ""
            if callee.rpartition(".")[2] in self.skip or callee.startswith(("assert", *self.external)):
                continue
            for arg in call.args:
                if arg.keyword is None and not arg.star and _is_bool(arg.value):
                    yield Match(arg.value, {"CALL": callee or ctx.code(call.func), "VALUE": arg.value.value})


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _strings(node: cst.BaseExpression) -> bool:
    if _string(node) is not None:
        return True
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return bool(node.elements) and all(_string(e.value) is not None for e in node.elements)
    return False


def _string_values(node: cst.BaseExpression) -> frozenset[str]:
    """The strings of a literal or of a tuple, list or set of them (``_strings`` holds)."""
    single = _string(node)
    if single is not None:
        return frozenset({single})
    elements = node.elements if isinstance(node, (cst.Tuple, cst.List, cst.Set)) else ()
    return frozenset(value for e in elements if (value := _string(e.value)) is not None)


def _field_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, cst.Subscript):
        # ``x.states[i]`` is one of the states; ``x.state["kind"]`` or ``x.state[KIND]`` is an
        # entry of a mapping, named by its key.
        if any(isinstance(s.slice, cst.Index) and _names_a_key(s.slice.value) for s in node.slice):
            return None
        node = node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return None


def _names_a_key(index: cst.BaseExpression) -> bool:
    """A string, or a constant's name (``RANDOM_LTD_SCHEDULER_TYPE``)."""
    if _string(index) is not None:
        return True
    name = index.attr.value if isinstance(index, cst.Attribute) else index.value if isinstance(index, cst.Name) else ""
    return len(name) > 1 and name.isupper()


def _emptiness_or_received(pair: tuple[cst.BaseExpression, cst.BaseExpression], ctx: FileContext) -> bool:
    """Comparisons that test no state of the code's own: with ``""`` only (an emptiness
    check), or of a local holding what another interface handed over (``status =
    response.get("status")``, ``state = wrapper.check_xfer_state(handle)``), whose strings
    are that interface's protocol."""
    field, literal = pair
    if _string_values(literal) == {""}:
        return True
    if not isinstance(field, cst.Name) or typed_literal(ctx, field):
        return False  # a value typed as a ``Literal`` is checked against it (``declared_closed``)
    untyped = not known_alternatives(ctx.value_type(field))
    return any(_received(value, untyped) for value in _bindings(field, ctx))


def _bindings(name: cst.Name, ctx: FileContext) -> list[cst.BaseExpression]:
    """The values every plain assignment of ``name`` in its function gives it (a default
    rebound on one branch, ``status = "incomplete"``, leaves where it came from)."""
    function = ctx.enclosing_function(name)
    if function is None:
        return []  # module level: no function binds it
    return [node.value for node in subtree(function.body) if isinstance(node, cst.Assign)
            and any(isinstance(t.target, cst.Name) and t.target.value == name.value for t in node.targets)]


def _received(value: cst.BaseExpression, untyped: bool) -> bool:
    """What another interface handed over: a payload's entry by a string key
    (``reply["status"]``, ``block.get("state", "")``), or a call the type engine cannot
    type, whose result code out of its sight decides."""
    if isinstance(value, cst.Subscript):
        return _keyed_by_string(value)
    if not isinstance(value, cst.Call):
        return False
    looked_up = (isinstance(value.func, cst.Attribute) and value.func.attr.value in ("get", "pop")
                 and bool(value.args) and _string(value.args[0].value) is not None)
    return looked_up or untyped


def _keyed_by_string(lookup: cst.Subscript) -> bool:
    first = lookup.slice[0].slice
    return isinstance(first, cst.Index) and _string(first.value) is not None


def _compared_names(text: str) -> set[str]:
    """The names on a token's line (and the lines a test wraps over): their assignments say
    where a compared local came from (``_emptiness_or_received``)."""
    return residency_companions(text.replace("\n", " "))


class StringComparedField:
    """A field whose name matches ``field-regex`` compared with string literals, unless
    its declaration closes it to a set of strings holding them (``closed_sets``): a
    ``Literal`` type or alias, or a check against a fixed collection that raises."""

    reach = MatcherReach(reads="header", companions=_compared_names, companion_lines="assignments")

    OPTIONS = {
        "field-regex": Option("regex", r"^(state|status|phase|stage|mode)$|_(state|status|phase|stage|mode)$", "names of the compared field"),
        "prefilter": Option("strings", (), "substrings one of which a file must contain"),
        "literal-in-field": Option("bool", False, "also report `'x' in field` (field is a list of names, not a key store)"),
    }
    OPERATORS = (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.field = re.compile(options["field-regex"])
        self.prefilter: Prefilter = _comparison_prefilter(options["field-regex"], tuple(options["prefilter"])) or tuple(options["prefilter"])
        self.literal_in_field = options["literal-in-field"]

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for comparison in ctx.nodes(cst.Comparison):
            operands = [comparison.left, *(t.comparator for t in comparison.comparisons)]
            for index, target in enumerate(comparison.comparisons):
                if not isinstance(target.operator, self.OPERATORS):
                    continue
                left, right = operands[index], operands[index + 1]
                if isinstance(target.operator, (cst.In, cst.NotIn)) and not self.literal_in_field and _string(left) is not None:
                    continue  # "key" in state: a lookup in a mapping, not a state comparison
                pair = self._field_and_literal(left, right)
                if pair is not None and not _emptiness_or_received(pair, ctx) \
                        and not declared_closed(ctx, pair[0], _string_values(pair[1])):
                    yield Match(comparison, {"FIELD": ctx.code(pair[0]), "VALUE": ctx.code(pair[1])})
                    break

    def _field_and_literal(
        self, a: cst.BaseExpression, b: cst.BaseExpression
    ) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
        for field, literal in ((a, b), (b, a)):
            name = _field_name(field)
            if name is not None and _strings(literal) and self.field.search(name):
                return field, literal
        return None


# Between a field and its operator: subscripts and closing parentheses (``x.state[0]``).
_AFTER_FIELD = r"(?:\[[^\]\n]*\])*\)*\s*"
_OPERATOR = r"(?:==|!=|(?:not\s+)?in\b)"
# A string literal, or the opening of a tuple, list or set of them.
_LITERAL_START = r"\s*[(\[{]?\s*[rRbBuU]*['\"]"


def _comparison_prefilter(regex: str, field_words: tuple[str, ...]) -> "tuple[re.Pattern[str] | GuardedRegex, ...]":
    """The text of every reported comparison: the field (its regex moved from a name to
    the file's text: ``^`` dropped, ``$`` a word end) followed by an operator and a
    string literal, or a literal's closing quote followed by an operator and the field.

    Only regexes whose ``^``/``$`` are plain anchors qualify; others keep the
    ``prefilter`` strings. Those strings, one of which every field's name contains,
    guard the regexes: they run only on lines holding one and on the two lines around
    them (``self.state`` above ``in [`` above ``"x",``).
    """
    if re.search(r"\\[\^$]|\[\^|\(\?[=!<]", regex):
        return ()
    field = "(?:" + regex.replace("^", "").replace("$", r"(?![\w])") + ")"
    patterns = (
        re.compile(field + _AFTER_FIELD + _OPERATOR + _LITERAL_START),
        re.compile(r"['\"]\s*" + _OPERATOR + r"\s*[\w.\[\]()]*?" + field),
    )
    return tuple(GuardedRegex(p, field_words, context=2) for p in patterns) if field_words else patterns


class WideTupleReturn:
    """A public function returning a bare tuple of many values."""

    reach = MatcherReach(reads="header")  # every return holds the token, so the first wide one is kept

    OPTIONS = {
        "min-elements": Option("int", 3, "smallest tuple length reported"),
        "skip-names": Option("strings", ("backward", "symbolic", "setup_context", "jvp", "vjp"), "functions whose tuple shape a framework dictates"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.min = options["min-elements"]
        self.skip = frozenset(options["skip-names"])
        self.prefilter: Prefilter = ("return",)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        reported: set[int] = set()
        for ret in ctx.nodes(cst.Return):
            value = ret.value
            if not isinstance(value, cst.Tuple) or len(value.elements) < self.min:
                continue
            if any(isinstance(e, cst.StarredElement) for e in value.elements):
                continue
            function = ctx.enclosing_function(ret)
            if function is None or id(function) in reported or not self._public(function, ctx):
                continue
            reported.add(id(function))
            yield Match(ret, {"FUNCTION": function.name.value, "COUNT": str(len(value.elements))})

    def _public(self, function: cst.FunctionDef, ctx: FileContext) -> bool:
        name = function.name.value
        if name.startswith("_") or name in self.skip or ctx.enclosing_function(function) is not None:
            return False
        cls = ctx.enclosing_class(function)
        return cls is None or not cls.name.value.startswith("_")
