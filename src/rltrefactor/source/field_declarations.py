"""Fields a framework is configured to keep in host memory, read from source text.

A declaration gives a field's configuration under the field's name, as a keyword or a
dict key, and the configuration is a call (``MultiModalFieldConfig.batched(...)``)::

    image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True)
    "tgt_sizes": MultiModalFieldConfig.batched("image", keep_on_cpu=True)

A marker (``host-field-declarations`` of ``rules/names.yaml``: ``keep_on_cpu=True``) among
the call's arguments keeps the field on the host. Read from text, without a parse, so a
whole repository is cheap to scan; a call's arguments are read up to its closing bracket
(brackets in strings are counted too, a bounded guess).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

# ``name=callee(`` or ``"name": callee(``.
_DECLARATION = re.compile(r"""(?:(?<![\w.])(\w+)\s*=|["'](\w+)["']\s*:)\s*([A-Za-z_][\w.]*)\(""")
_MAX_ARGUMENTS = 600  # characters of a call's arguments read


@dataclass(frozen=True)
class FieldDeclaration:
    field: str
    callee: str  # as written: ``MultiModalFieldConfig.batched``
    on_host: bool  # a marker is among its arguments


def field_declarations(text: str, markers: Iterable[str], callees: frozenset[str] | None = None) -> list[FieldDeclaration]:
    """The declarations of ``text`` made with one of ``callees``, or, where none are given,
    with a callee some declaration of ``text`` marks host-side."""
    patterns = [_marker(marker) for marker in markers]
    if not patterns or (callees is None and not any(p.search(text) for p in patterns)):
        return []
    found = []
    for match in _DECLARATION.finditer(text):
        if callees is not None and match.group(3) not in callees:
            continue
        arguments = _arguments(text, match.end())
        found.append(FieldDeclaration(match.group(1) or match.group(2), match.group(3),
                                      any(p.search(arguments) for p in patterns)))
    marked = callees if callees is not None else {d.callee for d in found if d.on_host}
    return [d for d in found if d.callee in marked]


def host_fields(declarations: Iterable[FieldDeclaration]) -> frozenset[str]:
    """Fields declared host-side and never declared, with the same callee, without the marker."""
    declared = list(declarations)
    unmarked = {d.field for d in declared if not d.on_host}
    return frozenset(d.field for d in declared if d.on_host and d.field not in unmarked)


def _marker(marker: str) -> re.Pattern[str]:
    keyword, _, value = marker.partition("=")
    return re.compile(rf"\b{re.escape(keyword.strip())}\s*=\s*{re.escape(value.strip())}\b")


def _arguments(text: str, start: int) -> str:
    """The text from just after a call's ``(`` to its closing bracket."""
    depth = 1
    end = min(len(text), start + _MAX_ARGUMENTS)
    for position in range(start, end):
        character = text[position]
        if character in "([{":
            depth += 1
        elif character in ")]}":
            depth -= 1
            if depth == 0:
                return text[start:position]
    return text[start:end]
