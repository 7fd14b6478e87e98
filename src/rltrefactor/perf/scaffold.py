"""``rltrefactor perf scaffold PATH::QUALNAME``: a micro-check of one function, written
into the hooks directory from the template installed with the package.

The file keeps the template's guidance and imports, imports the function's module and
holds one ``@micro_check`` whose set-up builds what the call needs (placeholders that
fail, naming themselves, until they are filled in) and whose body is the one call. It
is written only where the hook will find it, and never over an existing file unless
asked (``force``). Every refusal is a ``ConfigError`` of one line: file, what, fix.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from ..errors import ConfigError
from ..change.files import write_atomic
from ..library.fields import closest
from ..source.syntax import definitions
from .skeleton import PLACEHOLDER, CallSkeleton, Placeholder, SkeletonError, call_skeleton, check_name

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "template_check.py")
# The template's guidance starts at this paragraph; what comes before describes the template itself.
_GUIDANCE_STARTS = "How the hook uses it"
_TEMPLATE_NAMES = ("torch", "micro_check", "Callable", "Any", "annotations")  # what the written file imports


@dataclass(frozen=True)
class Scaffold:
    """What ``write_scaffold`` wrote."""

    path: str  # repo-relative file
    check: str  # the check's name as the hook reports it, "perf_hooks.file:function"
    target: str  # "path::qualname" it measures
    placeholders: tuple[Placeholder, ...]  # set-up values still to fill in


def write_scaffold(root: str, target: str, *, hooks_dir: str, force: bool = False) -> Scaffold:
    """Write the micro-check of ``target`` (``path::qualname``, path relative to ``root``)."""
    path, qualname = _split(target)
    rel = _repository_path(root, path, target)
    text = _read(root, rel)
    skeleton = _skeleton(rel, text, qualname)
    module = _module_name(root, rel)
    name = check_name(qualname)
    if name in (skeleton.imported, *_TEMPLATE_NAMES):
        name = f"check_{name}"  # the check must not hide the function it calls, nor a name the file imports
    out = f"{hooks_dir.strip('/')}/{name}.py"
    destination = os.path.join(root, out)
    if os.path.exists(destination) and not force:
        raise ConfigError(f"{out}: perf scaffold: the file exists (got {target}); "
                          "pass --force to overwrite it, or rename the existing file first")
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    write_atomic(destination, render_check(f"{rel}::{qualname}", module, name, skeleton))
    hook_module = out[: -len(".py")].replace("/", ".")
    return Scaffold(out, f"{hook_module}:{name}", f"{rel}::{qualname}", skeleton.placeholders)


def render_check(target: str, module: str, name: str, skeleton: CallSkeleton) -> str:
    """The micro-check file: the template's guidance and imports, then the one check."""
    guidance, imports = _template_parts()
    fill = ""
    sections = []
    if skeleton.placeholders:
        fill = (f"\n\nFill in the set-up: each ``{PLACEHOLDER}(...)`` fails the check, naming itself, until\n"
                "it is replaced by a small value built on ``device``.")
        sections.append(f"{_with_typing_any(imports)}\n\nfrom {module} import {skeleton.imported}")
        sections.append(f"def {PLACEHOLDER}(what: str) -> Any:\n"
                        f"    raise NotImplementedError(f\"set-up not filled in: {{what}}; replace {PLACEHOLDER}({{what!r}}) \"\n"
                        "                              \"with a small value built on `device`\")")
    else:
        sections.append(f"{imports}\n\nfrom {module} import {skeleton.imported}")
    setup = [f'    {p.name} = {PLACEHOLDER}("{p.name}")' + (f"  # {p.hint}" if p.hint else "")
             for p in skeleton.placeholders]
    if skeleton.owner:
        setup.append(f"    {skeleton.owner}")
    sections.append("\n".join([
        "@micro_check",
        f"def {name}(device: torch.device) -> Callable[[], object]:",
        "    # Set-up, not measured: build small inputs on `device`.",
        *setup,
        f"    return lambda: {skeleton.call}",
    ]))
    docstring = f'"""Micro-check of {target}, written by ``rltrefactor perf scaffold``.{fill}\n\n{guidance}\n"""'
    return docstring + "\n\n" + "\n\n\n".join(sections) + "\n"


def _split(target: str) -> tuple[str, str]:
    path, separator, qualname = target.partition("::")
    if not separator or not path or not qualname:
        raise ConfigError(f"{target}: perf scaffold: expected PATH::QUALNAME (got {target!r}); write the function "
                          "as the perf report lists it, e.g. loopy/engine.py::LLMEngine.step")
    return path, qualname


def _repository_path(root: str, path: str, target: str) -> str:
    """``path`` relative to the repository root: as given, or as a path from the
    current directory that lies inside the repository."""
    real_root = os.path.realpath(root)
    for candidate in (os.path.join(root, path), path):
        real = os.path.realpath(candidate)
        if os.path.isfile(real) and real.startswith(real_root + os.sep):
            rel = os.path.relpath(real, real_root).replace(os.sep, "/")
            if not rel.endswith(".py"):
                raise ConfigError(f"{rel}: perf scaffold: not a Python file (got {target}); name a .py file")
            return rel
    raise ConfigError(f"{path}: perf scaffold: no such file in the repository at {root} (got {target}); "
                      "give the path relative to the repository root, as the perf report prints it")


def _read(root: str, rel: str) -> str:
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{rel}: perf scaffold: cannot read the file ({exc}); make it a readable UTF-8 file") from exc


def _skeleton(rel: str, text: str, qualname: str) -> CallSkeleton:
    try:
        module = ast.parse(text)
    except SyntaxError as exc:
        raise ConfigError(f"{rel}:{exc.lineno}: perf scaffold: cannot parse the file ({exc.msg}); "
                          "fix the syntax error, then scaffold again") from exc
    try:
        return call_skeleton(module, qualname)
    except SkeletonError as exc:
        fix = exc.fix
        if not fix:
            functions = [d.qualname for d in definitions(text).definitions if d.kind == "function"]
            near = closest(qualname, functions)
            fix = f"did you mean {near}?" if near else "name a function or method as the perf report lists it"
        raise ConfigError(f"{rel}: perf scaffold: {exc}; {fix}") from exc


def _module_name(root: str, rel: str) -> str:
    """The dotted name the hook's runner imports ``rel`` by (the root and ``src/`` are
    on its path)."""
    parts = rel[: -len(".py")].split("/")
    if parts[0] == "src" and len(parts) > 1 and os.path.isdir(os.path.join(root, "src")):
        parts = parts[1:]
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    for part in parts:
        if not part.isidentifier():
            raise ConfigError(f"{rel}: perf scaffold: the file cannot be imported by a dotted name ({part!r} is not "
                              f"a Python identifier); write the check by hand from the template, {TEMPLATE}")
    return ".".join(parts)


def _template_parts() -> tuple[str, str]:
    """The template's guidance paragraphs and its block of imports, as written."""
    with open(TEMPLATE, encoding="utf-8") as handle:
        text = handle.read()
    module = ast.parse(text)
    docstring = ast.get_docstring(module, clean=False) or ""
    start = docstring.find(_GUIDANCE_STARTS)
    guidance = docstring[start:].strip() if start >= 0 else ""
    imports = [node for node in module.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    lines = text.splitlines()
    block = "\n".join(lines[imports[0].lineno - 1: imports[-1].end_lineno]) if imports else ""
    return guidance, block


def _with_typing_any(imports: str) -> str:
    """``from typing import Any`` beside the template's standard-library imports."""
    lines = imports.splitlines()
    after = next((i for i, line in enumerate(lines) if line.startswith("from collections")), None)
    if after is None:
        return imports + "\nfrom typing import Any"
    return "\n".join([*lines[: after + 1], "from typing import Any", *lines[after + 1:]])
