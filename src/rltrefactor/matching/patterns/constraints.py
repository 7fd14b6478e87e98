"""The ``where:`` clause of a pattern block: constraints on what a metavariable binds.

``where: {X: {regex: .., not-regex: .., qualified-name: [..], kind: .., on-host: .., pinned: .., pageable: .., handed-in: .., host-named: ..}}``;
each constraint is a check of one binding, and a metavariable the match left unbound passes.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import libcst as cst

from ..matchers.base import FileContext
from ..matchers.options import MatcherSpecError
from ..matchers.residency.locations import handed_in, on_host, shown_on_host
from ..matchers.residency.pinned import is_pageable, is_pinned
from .code import Bindings

WHERE_KEYS = ("regex", "not-regex", "qualified-name", "kind", "on-host", "pinned", "pageable", "handed-in", "host-named")
RESIDENCY_FACTS: Mapping[str, Callable[[cst.CSTNode, FileContext], bool]] = {
    "on-host": on_host, "pinned": is_pinned, "pageable": is_pageable, "handed-in": handed_in,
}
KINDS: Mapping[str, tuple[type, ...]] = {
    "string": (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString),
    "number": (cst.Integer, cst.Float, cst.Imaginary),
    "name": (cst.Name,),
    "attribute": (cst.Attribute,),
    "call": (cst.Call,),
}


def line_of(data: Any, key: str | int | None, default: int | None) -> int | None:
    if key is not None and hasattr(data, "line_of"):
        line: int = data.line_of(key)
        return line
    return getattr(data, "line", default) or default


def compile_regex(value: Any, line: int | None, where: str) -> re.Pattern[str]:
    if not isinstance(value, str):
        raise MatcherSpecError(f"{where}: expected a regular expression string (got {value!r}); quote it", line)
    try:
        return re.compile(value)
    except re.error as exc:
        raise MatcherSpecError(f"{where}: invalid regular expression {value!r} ({exc}); fix it", line) from None


Where = Callable[[FileContext, Bindings], bool]


def compile_where(data: Any, line: int | None, bound: frozenset[str]) -> list[Where]:
    if data is None:
        return []
    if not isinstance(data, dict):
        raise MatcherSpecError(f"where: expected a mapping of metavariables to constraints (got {data!r}); fix it", line)
    checks: list[Where] = []
    for raw_name, constraint in data.items():
        at = line_of(data, raw_name, line)
        name = str(raw_name).lstrip("$")
        if name not in bound:
            raise MatcherSpecError(f"where: ${name} is not bound by the pattern; use one of {', '.join('$' + m for m in sorted(bound)) or 'no metavariables'}", at)
        if not isinstance(constraint, dict) or not constraint:
            raise MatcherSpecError(f"where: ${name}: expected a mapping with {', '.join(WHERE_KEYS)}; fix it", at)
        for key, value in constraint.items():
            checks.append(_constraint(name, key, value, line_of(constraint, key, at)))
    return checks


def _constraint(name: str, key: str, value: Any, line: int | None) -> Where:
    from ...library.fields import suggest

    if key in ("regex", "not-regex"):
        regex = compile_regex(value, line, f"where: ${name}: {key}")
        want = key == "regex"
        return lambda ctx, b: name not in b or (regex.search(ctx.code(b[name])) is not None) == want
    if key == "qualified-name":
        names = (value,) if isinstance(value, str) else value
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            raise MatcherSpecError(f"where: ${name}: qualified-name: expected a name or a list of names (got {value!r}); fix it", line)
        wanted = frozenset(names)
        return lambda ctx, b: name not in b or ctx.qualified_name(b[name]) in wanted
    if key == "kind":
        if value not in KINDS:
            raise MatcherSpecError(f"where: ${name}: kind: unknown kind {value!r}{suggest(str(value), KINDS)}; use one of {', '.join(KINDS)}", line)
        types = KINDS[value]
        return lambda ctx, b: name not in b or isinstance(b[name], types)
    if key in RESIDENCY_FACTS:
        if not isinstance(value, bool):
            raise MatcherSpecError(f"where: ${name}: {key}: expected true or false (got {value!r}); fix it", line)
        # ``on-host: true`` makes a finding of a host value (an upload's source, a device
        # argument naming the host): only what the code shows counts, never a host type.
        fact = shown_on_host if key == "on-host" and value else RESIDENCY_FACTS[key]
        return lambda ctx, b: name not in b or fact(b[name], ctx) == value
    if key == "host-named":
        if not isinstance(value, bool):
            raise MatcherSpecError(f"where: ${name}: host-named: expected true or false (got {value!r}); fix it", line)
        return lambda ctx, b: name not in b or (ctx.names.regex("host-names").search(ctx.code(b[name])) is not None) == value
    raise MatcherSpecError(f"where: ${name}: unknown constraint {key!r}{suggest(str(key), WHERE_KEYS)}; use one of {', '.join(WHERE_KEYS)}", line)
