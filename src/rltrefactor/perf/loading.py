"""Finding micro-checks in a hooks directory (runs inside the runner subprocess).

Each ``*.py`` file in the directory (not starting with ``_``) is imported from its path
under a dotted name relative to the repository root (``perf_hooks.demo_checks``), with
the root on ``sys.path`` so the file can import the engine. A check is named
``module:function``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Callable

from .checks import MicroCheckSpec, spec_of


@dataclass(frozen=True)
class LoadedCheck:
    name: str  # "perf_hooks.demo_checks:decode_step"
    path: str  # repo-relative file
    line: int
    spec: MicroCheckSpec
    setup: Callable


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
            errors.append(_load_error(rel, exc))
            continue
        for attr, value in vars(module).items():
            spec = spec_of(value)
            if spec is None or getattr(value, "__module__", None) != module_name:
                continue  # re-exported from another module: named there
            line = value.__code__.co_firstlineno if hasattr(value, "__code__") else 0
            checks.append(LoadedCheck(f"{module_name}:{attr}", rel, line, spec, value))
    return checks, errors


def _import(path: str, module_name: str):
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _load_error(rel: str, exc: BaseException) -> LoadError:
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.endswith(rel):
            line = frame.lineno
    if isinstance(exc, SyntaxError) and exc.lineno:
        line = exc.lineno
    detail = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return LoadError(rel, line, f"cannot import micro-check file: {detail}; fix the file or its imports")
