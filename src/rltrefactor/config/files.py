"""Which file holds the configuration, and its table as read from it.

``--config PATH`` names the file; otherwise it is the one, at the repository root, of
``rltrefactor.toml``, ``.rltrefactor.toml`` and a ``[tool.rltrefactor]`` table in
``pyproject.toml``. Two of them is an error naming both: neither would be read in silence.
A file of its own holds the same keys as the table, at its top level (``[names]``,
``[[protocols]]`` for ``[tool.rltrefactor.names]``, ``[[tool.rltrefactor.protocols]]``).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import ConfigError
from .toml_text import misspelt_tables, section_line

PYPROJECT = "pyproject.toml"
OWN_FILES = ("rltrefactor.toml", ".rltrefactor.toml")  # at the repository root, in this order
PYPROJECT_PREFIX = "tool.rltrefactor"


@dataclass(frozen=True)
class ConfigFile:
    """The configuration's table and where it was read from, for values and for errors."""

    path: str  # the file; pyproject.toml at the root when no file holds a table
    prefix: str  # the table's prefix in ``path``: "tool.rltrefactor" in pyproject.toml, "" in a file of its own
    text: str = ""  # the file's text, where error lines are found
    table: Mapping[str, Any] = field(default_factory=dict)  # empty: every default applies
    warnings: tuple[str, ...] = ()  # pyproject.toml tables that look like a misspelt [tool.rltrefactor]


def find_config(repo_root: str, explicit: str | None = None) -> ConfigFile:
    """The configuration of ``repo_root``: the file ``explicit`` names (``--config``), else
    the one found at the root; a ``ConfigFile`` with an empty table when there is none."""
    if explicit is not None:
        return _explicit(explicit)
    pyproject = os.path.join(repo_root, PYPROJECT)
    in_pyproject = _read_pyproject(pyproject) if os.path.isfile(pyproject) else None
    own = [_read_own(os.path.join(repo_root, name)) for name in OWN_FILES if os.path.isfile(os.path.join(repo_root, name))]
    present = own + ([in_pyproject] if in_pyproject is not None and in_pyproject.table else [])
    if len(present) > 1:
        first, second = (_named(found) for found in present[:2])
        raise ConfigError(f"{first} and {second}: two configurations of rltrefactor; keep one "
                          "(or name the one to read with --config PATH)")
    if present:
        return present[0]
    return in_pyproject or ConfigFile(pyproject, PYPROJECT_PREFIX)


def _explicit(path: str) -> ConfigFile:
    if not os.path.exists(path):
        raise ConfigError(f"{path}: --config: file not found; pass an existing rltrefactor.toml or pyproject.toml, "
                          "or drop --config to read the repository's own")
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: --config: not a file; pass the TOML file that holds the configuration")
    if os.path.basename(path) != PYPROJECT:
        return _read_own(path)
    found = _read_pyproject(path)
    if not found.table:
        raise ConfigError(f"{path}: --config: no [tool.rltrefactor] table in it; add one, or name the file "
                          "that holds the configuration")
    return found


def _read_pyproject(path: str) -> ConfigFile:
    text, document = _load(path)
    tools = document.get("tool", {})
    table = tools.get("rltrefactor", {}) if isinstance(tools, dict) else {}
    return ConfigFile(path, PYPROJECT_PREFIX, text, table if isinstance(table, dict) else {},
                      misspelt_tables(tools, path, text))


def _read_own(path: str) -> ConfigFile:
    text, table = _load(path)
    tools = table.get("tool")
    if isinstance(tools, dict) and "rltrefactor" in tools:
        line = section_line(text, PYPROJECT_PREFIX)
        raise ConfigError(f"{path}{f':{line}' if line else ''}: [tool.rltrefactor]: in {os.path.basename(path)} the "
                          "keys are top-level; delete that header and write its sub-tables as [names], "
                          "[per-path-ignores], [[protocols]]")
    return ConfigFile(path, "", text, table)


def _load(path: str) -> tuple[str, dict[str, Any]]:
    with open(path, "rb") as handle:
        text = handle.read().decode("utf-8", "replace")
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}; fix the syntax") from None


def _named(found: ConfigFile) -> str:
    """A configuration as an error names it: the file, and in pyproject.toml the table's line."""
    if not found.prefix:
        return found.path
    line = section_line(found.text, found.prefix)
    return f"{found.path}{f':{line}' if line else ''} [tool.rltrefactor]"
