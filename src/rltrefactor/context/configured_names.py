"""Entries of ``hot-functions`` and ``cold-functions`` that name no function of the
reviewed repository: a misspelt name would otherwise leave the code it meant unplaced,
without a word.

Read from the text of every Python file at the reviewed revision, without a parse: each
``class``/``def`` line gives a name, and the lines indented less above it its qualified
name (``A.f``, ``A.f.<locals>.g``, the definition walk's form). A ``def`` inside a string
counts too, so a warning is never given for an entry that names a real function.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

from ..config import Config
from ..config.function_patterns import function_patterns
from ..config.toml_text import key_label, key_location, read_text
from ..errors import GitError
from ..types import ChangeSet
from .calls.index import list_blobs, read_blobs

_DEFINITION = re.compile(rb"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)", re.MULTILINE)


def definitions(data: bytes) -> Iterator[tuple[str, str]]:
    """(name, qualified name) of every function the text defines."""
    scopes: list[tuple[int, str, bool]] = []  # (indent, qualified name, is a function)
    for match in _DEFINITION.finditer(data):
        indent = len(match.group(1).expandtabs())
        while scopes and scopes[-1][0] >= indent:
            scopes.pop()
        name, is_function = match.group(3).decode("ascii", "replace"), match.group(2) == b"def"
        if scopes:
            outer, outer_is_function = scopes[-1][1], scopes[-1][2]
            qualname = f"{outer}.<locals>.{name}" if outer_is_function else f"{outer}.{name}"
        else:
            qualname = name
        scopes.append((indent, qualname, is_function))
        if is_function:
            yield name, qualname


def _needle(entry: str) -> bytes | None:
    """Bytes every file defining a function the entry names must hold: the last plain word
    of a dotted name or of an identifier-like regex (``Engine.backward``, ``*.step``,
    ``forward_.*``); None where the entry is a regex with more to it (``_?step``)."""
    if not re.fullmatch(r"[\w.*]+", entry):
        return None
    words = [part for part in re.split(r"[.*]+", entry) if part]
    return words[-1].encode() if words else None


def unmatched_entries(entries: tuple[str, ...], functions: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The entries that name none of ``functions`` ((name, qualified name) pairs)."""
    waiting = {pattern.entry: pattern for pattern in function_patterns(entries)}
    for name, qualname in functions:
        for entry in [e for e, pattern in waiting.items() if pattern.matches(name, qualname)]:
            del waiting[entry]
        if not waiting:
            break
    return tuple(entry for entry in entries if entry in waiting)


def unmatched_function_warnings(change: ChangeSet, config: Config) -> tuple[str, ...]:
    """One line per ``hot-functions``/``cold-functions`` entry that names no function of
    the repository ``change`` is read from, at its head revision."""
    keys = (("hot-functions", config.hot_functions), ("cold-functions", config.cold_functions))
    if change.repo_root is None or not any(entries for _, entries in keys):
        return ()
    try:
        blobs = list_blobs(change.repo_root, change.head.kind, change.head.ref)
    except GitError:
        return ()
    contents = read_blobs(change.repo_root, blobs)
    needles = [_needle(entry) for _, entries in keys for entry in entries]
    if all(needle is not None for needle in needles):  # only the files that hold a word every match must hold
        contents = {path: data for path, data in contents.items() if any(n in data for n in needles if n)}
    functions = [pair for data in contents.values() for pair in definitions(data)]
    text = read_text(config.source)
    warnings = []
    for key, entries in keys:
        for entry in unmatched_entries(entries, functions):
            warnings.append(
                f"{key_location(config.source, text, key, prefix=config.source_prefix)}: "
                f"{key_label(config.source_prefix, key)}: {entry!r} names no function "
                f"of the repository; check its spelling (a method is Class.method, any class's *.method)"
            )
    return tuple(warnings)
