"""Finding micro-checks in a hooks directory (runs inside the runner subprocess).

Each ``*.py`` file in the directory (not starting with ``_``) is imported from its path
under a dotted name relative to the repository root (``perf_hooks.demo_checks``), with
the root on ``sys.path`` so the file can import the engine. A check is named
``module:function``.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import traceback
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Callable

from .checks import MicroCheckSpec, spec_of

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class LoadedCheck:
    name: str  # "perf_hooks.demo_checks:decode_step"
    path: str  # repo-relative file
    line: int
    spec: MicroCheckSpec
    setup: Callable[..., object]
    takes_device: bool = True  # ``def check(device)``; ``def check()`` is called without it

    def start(self, device: torch.device) -> object:
        """Run the set-up; returns what it returned (the body, when the check is right)."""
        return self.setup(device) if self.takes_device else self.setup()


@dataclass(frozen=True)
class LoadError:
    path: str
    line: int | None
    message: str


def hook_files(root: str, hooks_dir: str) -> list[str]:
    """Repo-relative paths of the hook files, sorted; [] when the directory is absent."""
    folder = os.path.join(root, hooks_dir)
    if not os.path.isdir(folder):
        return []
    names = sorted(n for n in os.listdir(folder) if n.endswith(".py") and not n.startswith("_"))
    return [os.path.join(hooks_dir, n).replace(os.sep, "/") for n in names]


def load_checks(root: str, hooks_dir: str) -> tuple[list[LoadedCheck], list[LoadError]]:
    checks: list[LoadedCheck] = []
    errors: list[LoadError] = []
    for rel in hook_files(root, hooks_dir):
        module_name = rel[: -len(".py")].replace("/", ".")
        try:
            module = _import(os.path.join(root, rel), module_name)
        except BaseException as exc:  # noqa: BLE001 - any failure of user code is a value
            if isinstance(exc, KeyboardInterrupt):
                raise
            errors.append(_load_error(root, rel, exc))
            continue
        for attr, value in vars(module).items():
            spec = spec_of(value)
            if spec is None or getattr(value, "__module__", None) != module_name:
                continue  # re-exported from another module: named there
            line = value.__code__.co_firstlineno if hasattr(value, "__code__") else 0
            takes_device = _takes_device(value)
            if takes_device is None:
                errors.append(LoadError(rel, line or None, (
                    f"micro-check {attr}: set-up must take one parameter, the device, or none "
                    f"(got {attr}{_signature(value)}); write def {attr}(device): ... return lambda: ...")))
                continue
            checks.append(LoadedCheck(f"{module_name}:{attr}", rel, line, spec, value, takes_device))
    return checks, errors


def _takes_device(setup: Callable[..., object]) -> bool | None:
    """True for ``(device)``, False for ``()``, None for any other required parameters."""
    try:
        parameters = list(inspect.signature(setup).parameters.values())
    except (TypeError, ValueError):
        return True  # a builtin or C callable: call it as documented
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in parameters if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    accepts_one = any(p.kind in positional or p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    if not required:
        return accepts_one
    if len(required) == 1 and required[0].kind in positional:
        return True
    return None


def _signature(setup: Callable[..., object]) -> str:
    try:
        return str(inspect.signature(setup))
    except (TypeError, ValueError):
        return "(...)"


def _import(path: str, module_name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _load_error(root: str, rel: str, exc: BaseException) -> LoadError:
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.endswith(rel):
            line = frame.lineno
    if isinstance(exc, SyntaxError) and exc.lineno:
        line = exc.lineno
    detail = f"{type(exc).__name__}: {exc}".splitlines()[0]
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return LoadError(rel, line, f"cannot import micro-check file: {detail}{_imported_by(root, exc)}; "
                                    f"{_missing_module_fix(root, exc.name)}")
    return LoadError(rel, line, f"cannot import micro-check file: {detail}; fix the file or its imports")


def _imported_by(root: str, exc: BaseException) -> str:
    """`` (imported by path:line)``: the last frame in the repository, where it is not the
    hook file itself."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.realpath(f.filename).startswith(os.path.realpath(root) + os.sep)]
    if len(frames) < 2:
        return ""
    rel = os.path.relpath(os.path.realpath(frames[-1].filename), os.path.realpath(root)).replace(os.sep, "/")
    return f" (imported by {rel}:{frames[-1].lineno})"


def _missing_module_fix(root: str, missing: str) -> str:
    top = missing.split(".")[0]
    if _defined_in_repository(root, top):
        return (f"{top} is in the repository but not on the import path: declare where its packages live in "
                "pyproject.toml ([tool.setuptools.packages.find] where, package-dir, hatch or poetry packages)")
    return (f"install {top} where the perf hook runs, or name it in perf-stubs under [tool.rltrefactor] "
            "to import a stub in its place")


def _defined_in_repository(root: str, top: str, depth: int = 3) -> bool:
    """A package directory or module named ``top`` at most ``depth`` levels below ``root``."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return False
    if any(e.name == f"{top}.py" or (e.name == top and e.is_dir()) for e in entries):
        return True
    return depth > 0 and any(_defined_in_repository(e.path, top, depth - 1) for e in entries
                             if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))
