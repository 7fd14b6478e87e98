"""Typed options of registered Python matchers, checked when the library loads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping

OptionKind = Literal["str", "bool", "int", "regex", "strings", "mapping"]


class MatcherSpecError(ValueError):
    """A matcher block that cannot be built; ``line`` points into the rule file."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Option:
    kind: OptionKind
    default: Any
    help: str


_CHECKS: Mapping[str, Callable[[Any], bool]] = {
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "regex": lambda v: isinstance(v, str),
    "strings": lambda v: isinstance(v, (list, tuple)) and all(isinstance(i, str) for i in v),
    "mapping": lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(i, str) for k, i in v.items()),
}
_DESCRIBED = {
    "str": "a string",
    "bool": "true or false",
    "int": "an integer",
    "regex": "a regular expression string",
    "strings": "a list of strings",
    "mapping": "a mapping of strings to strings",
}


def resolve_options(matcher_id: str, schema: Mapping[str, Option], given: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with ``given``; unknown names and wrong types are errors."""
    from ...library.fields import suggest

    values = {name: option.default for name, option in schema.items()}
    for name, value in given.items():
        line = given.line_of(name) if hasattr(given, "line_of") else None
        option = schema.get(name)
        if option is None:
            known = ", ".join(schema) or "none"
            raise MatcherSpecError(
                f"matcher {matcher_id!r}: unknown option {name!r}{suggest(name, schema)}; known options: {known}", line
            )
        if not _CHECKS[option.kind](value):
            raise MatcherSpecError(
                f"matcher {matcher_id!r}: option {name!r} must be {_DESCRIBED[option.kind]} (got {value!r}); fix the value",
                line,
            )
        if option.kind == "regex":
            try:
                re.compile(value)
            except re.error as exc:
                raise MatcherSpecError(
                    f"matcher {matcher_id!r}: option {name!r} is not a valid regular expression ({exc}); fix the pattern",
                    line,
                ) from None
        values[name] = tuple(value) if option.kind == "strings" else value
    return values
