"""Where a checkout's packages are imported from: the directories a runner process puts
on ``sys.path`` beside the checkout's root.

Read from the checkout's own ``pyproject.toml`` (each side reads its own revision's, so a
change that moves the code to a ``src/`` layout is measured from where each side keeps
it): setuptools ``[tool.setuptools.packages.find] where`` and ``package-dir``, hatch
``[tool.hatch.build.targets.wheel] packages``, poetry ``packages = [{include, from}]``;
and a ``src/`` directory that holds Python code. Invariant: every directory returned
exists and lies inside the checkout; anything unreadable or unexpected in the file adds
no directory (the head's configuration errors are reported when it is loaded).
"""

from __future__ import annotations

import os
import tomllib
from typing import Any, Iterator


def import_roots(root: str) -> tuple[str, ...]:
    """Absolute directories to import the checkout's packages from, the root first."""
    found = [os.path.realpath(root)]
    for rel in [*_declared(_tools(root)), "src"]:
        path = os.path.realpath(os.path.join(root, rel))
        if path not in found and _inside(path, found[0]) and _holds_python(path):
            found.append(path)
    return tuple(found)


def _tools(root: str) -> dict[str, Any]:
    try:
        with open(os.path.join(root, "pyproject.toml"), "rb") as handle:
            tools = tomllib.load(handle).get("tool", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return tools if isinstance(tools, dict) else {}


def _declared(tools: dict[str, Any]) -> Iterator[str]:
    """Repository-relative directories that the packaging tables import packages from."""
    setuptools = _table(tools, "setuptools")
    yield from _strings(_table(_table(setuptools, "packages"), "find").get("where"))
    for package, folder in _table(setuptools, "package-dir").items():
        if isinstance(package, str) and isinstance(folder, str):
            yield from _parent_of_package(package, folder)
    for entry in _list(_table(_table(_table(_table(tools, "hatch"), "build"), "targets"), "wheel").get("packages")):
        if isinstance(entry, str):
            yield os.path.dirname(entry.rstrip("/")) or "."
    for entry in _list(_table(tools, "poetry").get("packages")):
        if isinstance(entry, dict) and isinstance(entry.get("from"), str):
            yield entry["from"]


def _parent_of_package(package: str, folder: str) -> Iterator[str]:
    """``{"" = "src"}`` imports from ``src``; ``{"eng" = "lib/eng"}`` from ``lib``. A
    folder named otherwise than its package cannot be expressed on ``sys.path``."""
    parts = [p for p in package.split(".") if p]
    folders = [p for p in folder.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts:
        yield "/".join(folders) or "."
    elif folders[-len(parts):] == parts:
        yield "/".join(folders[: -len(parts)]) or "."


def _holds_python(path: str, depth: int = 3) -> bool:
    """A ``.py`` file in ``path`` or at most ``depth`` directories below it: a module, a
    package, or the packages of a namespace package (``src/acme/engine/__init__.py``)."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return False
    if any(e.name.endswith(".py") and e.is_file() for e in entries):
        return True
    return depth > 0 and any(_holds_python(e.path, depth - 1) for e in entries
                             if e.is_dir(follow_symlinks=False) and e.name.isidentifier())


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def _table(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in _list(value) if isinstance(v, str)]
