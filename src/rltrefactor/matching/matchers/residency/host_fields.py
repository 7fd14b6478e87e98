"""Fields a framework is configured to keep in host memory, declared in the file.

A framework that batches a model's inputs may be told, field by field, to leave some on
the host (``host-field-declarations``: vLLM's ``keep_on_cpu=True``). The declaration names
the field by the keyword or dict key it is given under::

    image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True)
    "tgt_sizes": MultiModalFieldConfig.batched("image", keep_on_cpu=True)

and the file's model code reads the field by that name: ``kwargs["image_grid_thw"]``,
``.get("image_grid_thw")``, ``.pop(...)``, or a parameter of the same name it is handed
on as. Declarations are read from the whole file's text (``source.field_declarations``),
so a region that leaves the configuring method out still knows them, and, through the
call index, from every file of the repository: a field some file declares host-side and
none declares otherwise is a host value wherever it is read by its name.

A dataclass or NamedTuple field the repository only ever fills with host tensors
(``context.calls.fields``) is a host value where it is read through an instance the type
engine says is of that class: ``pooling_metadata.prompt_lens``.
"""

from __future__ import annotations

import libcst as cst

from ....source.field_declarations import field_declarations, host_fields
from ..base import FileContext

_ACCESSORS = frozenset({"get", "pop", "setdefault"})


def declared_host_fields(ctx: FileContext) -> frozenset[str]:
    """The field names the file declares host-side, and those the repository declares so
    and nowhere otherwise (``execution.host_fields``, read by the call index); read once
    per file."""
    cache: dict[str, frozenset[str]] = ctx.model.__dict__.setdefault("_declared_host_fields", {})
    found = cache.get("fields")
    if found is None:
        markers = ctx.names.entry("host-field-declarations").values
        own = host_fields(field_declarations(ctx.model.text, markers)) if markers else frozenset()
        found = cache["fields"] = own | ctx.execution.host_fields
    return found


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


def reads_host_class_field(expr: cst.CSTNode, ctx: FileContext) -> bool:
    """``expr`` reads a dataclass field that holds host tensors only (``meta.prompt_lens``
    where the type engine says ``meta`` is a ``PoolingMetadata`` every construction of which
    passes ``prompt_lens`` a host tensor: ``execution.host_class_fields``, read by the call
    index from the whole repository)."""
    fields = ctx.execution.host_class_fields
    if not isinstance(expr, cst.Attribute) or not any(entry.endswith("." + expr.attr.value) for entry in fields):
        return False  # asked of the type engine only for a field name the index knows
    receiver = ctx.value_type(expr.value)
    return receiver is not None and any(
        f"{written}.{expr.attr.value}" in ctx.execution.host_class_fields for written in _class_names(receiver))


def _class_names(written: str) -> list[str]:
    """The classes a type names, ``None`` and ``Optional`` aside: ``a.B | None`` -> ``[a.B]``."""
    inner = written.strip()
    if inner.startswith("Optional[") and inner.endswith("]"):
        inner = inner[len("Optional["):-1]
    return [part.strip() for part in inner.split("|") if part.strip() not in ("None", "")]
