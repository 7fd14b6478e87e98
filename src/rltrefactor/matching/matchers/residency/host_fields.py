"""Fields a framework is configured to keep in host memory, declared in the file.

A framework that batches a model's inputs may be told, field by field, to leave some on
the host (``host-field-declarations``: vLLM's ``keep_on_cpu=True``). The declaration names
the field by the keyword or dict key it is given under::

    image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True)
    "tgt_sizes": MultiModalFieldConfig.batched("image", keep_on_cpu=True)

and the file's model code reads the field by that name: ``kwargs["image_grid_thw"]``,
``.get("image_grid_thw")``, ``.pop(...)``, or a parameter of the same name it is handed
on as. Declarations are read from the whole file's text, so a region that leaves the
configuring method out still knows them; fields declared in another file are unknown.
"""

from __future__ import annotations

import re

import libcst as cst

from ..base import FileContext

_ACCESSORS = frozenset({"get", "pop", "setdefault"})


def declared_host_fields(ctx: FileContext) -> frozenset[str]:
    """The field names the file declares host-side; read once per file."""
    cache: dict[str, frozenset[str]] = ctx.model.__dict__.setdefault("_declared_host_fields", {})
    found = cache.get("fields")
    if found is None:
        markers = ctx.names.entry("host-field-declarations").values
        found = frozenset(_declared(ctx.model.text, markers)) if markers else frozenset()
        cache["fields"] = found
    return found


def _declared(text: str, markers: tuple[str, ...] | list[str]) -> set[str]:
    if not any(marker.split("=")[0] in text for marker in markers):
        return set()
    keyword = "|".join(
        rf"\b{re.escape(name.strip())}\s*=\s*{re.escape(value.strip())}\b"
        for name, _, value in (marker.partition("=") for marker in markers)
    )
    # ``field=Config.make(<no nested call>..., keep_on_cpu=True`` or ``"field": Config.make(...``
    declaration = re.compile(rf"""(?:\b(\w+)\s*=|["'](\w+)["']\s*:)\s*[\w.]+\((?:[^()]|\([^()]*\))*?(?:{keyword})""")
    return {match.group(1) or match.group(2) for match in declaration.finditer(text)}


def reads_host_field(expr: cst.CSTNode, ctx: FileContext) -> bool:
    """``expr`` reads a declared host field by its name: ``inputs["f"]``, ``inputs.get("f")``,
    ``inputs.pop("f", None)``."""
    key: cst.BaseExpression | None = None
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        key = expr.slice[0].slice.value
    elif (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _ACCESSORS
          and expr.args and expr.args[0].keyword is None):
        key = expr.args[0].value
    if not isinstance(key, cst.SimpleString):
        return False
    fields = declared_host_fields(ctx)
    return bool(fields) and key.raw_value in fields
