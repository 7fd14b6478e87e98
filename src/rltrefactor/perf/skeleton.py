"""The call skeleton of one function, read from its definition: what a micro-check must
import, build in its set-up and call in its body.

Read with ``ast`` from the file's text, never imported. A required parameter becomes a
set-up variable filled with a placeholder call (``_fill_in("name")``) that fails with
its name until it is replaced; a parameter named ``device`` or annotated
``torch.device`` takes the check's device instead. A method's owner is built the same
way from its ``__init__`` (or its dataclass fields); a static or class method is called
on the class, a property read.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

PLACEHOLDER = "_fill_in"
DEVICE = "device"  # the micro-check's own parameter


@dataclass(frozen=True)
class Placeholder:
    name: str  # the set-up variable
    hint: str  # its annotation as written, "" when it has none


@dataclass(frozen=True)
class CallSkeleton:
    """What a check of one function does: ``from module import imported``, the set-up's
    placeholders and owner, and the measured expression."""

    imported: str  # the top-level name imported from the function's module
    placeholders: tuple[Placeholder, ...]  # in the order they are first needed
    owner: str  # "variable = Owner(...)" for a method called on an instance; "" otherwise
    call: str  # the measured expression


class SkeletonError(ValueError):
    """The qualified name names nothing a check can call: the message says why, ``fix``
    what to name instead ("" when a name close to it is the best hint)."""

    def __init__(self, problem: str, fix: str = "") -> None:
        super().__init__(problem)
        self.fix = fix


def check_name(qualname: str) -> str:
    """``LLMEngine.step`` -> ``llm_engine_step``: a public identifier for the check."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", qualname.replace(".", "_"))
    name = re.sub(r"_+", "_", words.lower()).strip("_")
    return name if name and not name[0].isdigit() else f"check_{name}"


def call_skeleton(module: ast.Module, qualname: str) -> CallSkeleton:
    """The skeleton of ``qualname`` in ``module``; ``SkeletonError`` when it is not a
    function or method reachable from the module's top level."""
    if "<locals>" in qualname:
        outer = qualname.split(".<locals>.")[0]
        raise SkeletonError(f"{qualname} is defined inside a function, where no check can call it",
                            f"scaffold the function that defines it, {outer}")
    classes, found = _find(module, qualname.split("."))
    if isinstance(found, ast.ClassDef):
        methods = [f"{qualname}.{s.name}" for s in found.body
                   if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name != "__init__"]
        some = f" ({', '.join(methods[:3])}{', ...' if len(methods) > 3 else ''})" if methods else ""
        raise SkeletonError(f"{qualname} is a class, not a function", f"name one of its methods{some}")
    if isinstance(found, ast.AsyncFunctionDef):
        raise SkeletonError(f"{qualname} is a coroutine function (async def): calling it only makes a coroutine, "
                            "and a micro-check's body must run the work itself",
                            "scaffold the function that awaits it in the step, or write the check by hand")
    if not classes:
        params = _required(found, skip_first=False)
        return CallSkeleton(found.name, _placeholders(params), "", _call(found.name, params))
    owner_path = ".".join(c.name for c in classes)
    kind = _method_kind(found)
    params = _required(found, skip_first=kind != "static")
    if kind in ("static", "class"):
        return CallSkeleton(classes[0].name, _placeholders(params), "", _call(f"{owner_path}.{found.name}", params))
    made = _constructor(classes[-1])
    variable = check_name(classes[-1].name)
    while variable in {p.name for p in (*made, *params)} | {DEVICE, PLACEHOLDER}:
        variable += "_"
    owner = f"{variable} = {_call(owner_path, made)}"
    if kind == "property":
        return CallSkeleton(classes[0].name, _placeholders(made), owner, f"{variable}.{found.name}")
    method = "" if found.name == "__call__" else f".{found.name}"
    return CallSkeleton(classes[0].name, _placeholders([*made, *params]), owner, _call(variable + method, params))


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _find(module: ast.Module, parts: list[str]) -> tuple[list[ast.ClassDef], Function | ast.ClassDef]:
    """The classes around the definition, outer first, and the definition itself."""
    classes: list[ast.ClassDef] = []
    body: list[ast.stmt] = module.body
    found: Function | ast.ClassDef | None = None
    for position, part in enumerate(parts):
        found = _last_named(body, part)
        if found is None:
            where = ".".join(parts[:position]) or "the module's top level"
            raise SkeletonError(f"{'.'.join(parts)} is not defined there (no {part} in {where})")
        if position < len(parts) - 1:
            if not isinstance(found, ast.ClassDef):
                raise SkeletonError(f"{'.'.join(parts)} is not defined there ({'.'.join(parts[:position + 1])} "
                                    "is a function; a name inside it is local to it)",
                                    f"scaffold {'.'.join(parts[:position + 1])}")
            classes.append(found)
            body = found.body
    assert found is not None  # parts is never empty: "::" was followed by a name
    return classes, found


def _last_named(body: list[ast.stmt], name: str) -> Function | ast.ClassDef | None:
    """The definition of ``name`` in a block (the last one wins, as at run time), looking
    into ``if``/``try`` blocks as well."""
    found = None
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and statement.name == name:
            found = statement
        elif isinstance(statement, (ast.If, ast.Try)):
            for block in (statement.body, statement.orelse, getattr(statement, "finalbody", [])):
                found = _last_named(block, name) or found
    return found


def _method_kind(function: Function) -> str:
    for decorator in function.decorator_list:
        name = ast.unparse(decorator).rsplit(".", 1)[-1]
        if name in ("staticmethod", "classmethod"):
            return name[: -len("method")]
        if name in ("property", "cached_property"):
            return "property"
    return "instance"


@dataclass(frozen=True)
class _Parameter:
    name: str
    hint: str  # the annotation as written, "" when it has none
    keyword: bool  # keyword-only: passed as name=value

    @property
    def is_device(self) -> bool:
        return self.name == DEVICE or self.hint.replace(" ", "") in ("torch.device", "device")


def _parameter(argument: ast.arg, *, keyword: bool) -> _Parameter:
    hint = ast.unparse(argument.annotation) if argument.annotation is not None else ""
    return _Parameter(argument.arg, hint, keyword)


def _required(function: Function, *, skip_first: bool) -> list[_Parameter]:
    """Parameters without a default, in call order; ``self`` or ``cls`` left out for methods."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    if skip_first and positional:
        positional = positional[1:]
    required = positional[: len(positional) - len(arguments.defaults)] if arguments.defaults else positional
    keyword = [a for a, default in zip(arguments.kwonlyargs, arguments.kw_defaults) if default is None]
    return [*(_parameter(a, keyword=False) for a in required), *(_parameter(a, keyword=True) for a in keyword)]


def _constructor(cls: ast.ClassDef) -> list[_Parameter]:
    """What building one instance needs: ``__init__``'s required parameters, or a
    dataclass's fields without a default; nothing for an inherited constructor."""
    init = _last_named(cls.body, "__init__")
    if isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _required(init, skip_first=True)
    if any("dataclass" in ast.unparse(d) for d in cls.decorator_list):
        return [_Parameter(s.target.id, ast.unparse(s.annotation), keyword=True) for s in cls.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is None
                and "ClassVar" not in ast.unparse(s.annotation)]
    return []


def _placeholders(parameters: list[_Parameter]) -> tuple[Placeholder, ...]:
    """One set-up variable per name (an owner's and a method's ``config`` are one)."""
    seen: dict[str, Placeholder] = {}
    for parameter in parameters:
        if not parameter.is_device and parameter.name not in seen:
            seen[parameter.name] = Placeholder(parameter.name, parameter.hint)
    return tuple(seen.values())


def _call(callee: str, parameters: list[_Parameter]) -> str:
    values = [DEVICE if p.is_device else p.name for p in parameters]
    parts = [f"{p.name}={value}" if p.keyword else value for p, value in zip(parameters, values)]
    return f"{callee}({', '.join(parts)})"
