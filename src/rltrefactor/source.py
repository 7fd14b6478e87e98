"""File contents at the head revision, and the line -> definition map.

The head revision is the truth: a range ``A..B`` is read from git at ``B``, the index
from the index, and only a working-tree review reads files on disk.
"""

from __future__ import annotations

import io
import os
import tokenize
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from . import gitio
from .errors import GitError
from .types import ChangeSet, Definition, FileError

if TYPE_CHECKING:
    import tree_sitter

MAX_FILE_BYTES = 2 * 1024 * 1024
_DEFINITION_TYPES: dict[str, Literal["function", "class"]] = {"function_definition": "function", "class_definition": "class"}
# Node types whose children can hold a definition; everything else is skipped whole.
_CONTAINERS = {
    "module", "block", "decorated_definition", "if_statement", "elif_clause", "else_clause",
    "for_statement", "while_statement", "try_statement", "except_clause", "except_group_clause",
    "finally_clause", "with_statement", "match_statement", "case_clause", "ERROR",
}


def read_sources(change: ChangeSet, paths: list[str]) -> dict[str, str | FileError]:
    """Decoded text of each path at the head revision, or the reason it cannot be read."""
    raw = _read_raw(change, paths)
    return {path: _decode(path, data) if isinstance(data, bytes) else data for path, data in raw.items()}


def read_text(change: ChangeSet, path: str) -> str | FileError:
    return read_sources(change, [path])[path]


def read_base_sources(change: ChangeSet, paths: list[str]) -> dict[str, str | FileError]:
    """Text of each path at the base commit (for telling new findings from moved ones)."""
    if change.base is None or change.repo_root is None:
        return {}
    try:
        blobs = gitio.read_blobs(change.repo_root, change.base, paths)
    except GitError as exc:
        return {p: FileError(p, str(exc)) for p in paths}
    return {p: _decode(p, b) if b is not None else FileError(p, "missing at base") for p, b in blobs.items()}


def _read_raw(change: ChangeSet, paths: list[str]) -> dict[str, bytes | FileError]:
    root = change.repo_root or "."
    if change.head.kind == "worktree":
        return {path: _read_worktree(root, path) for path in paths}
    rev = (change.head.ref or "") if change.head.kind == "git" else ""
    try:
        blobs = gitio.read_blobs(root, rev or "", paths)
    except GitError as exc:
        return {p: FileError(p, str(exc)) for p in paths}
    where = "the index" if change.head.kind == "index" else f"revision {rev[:10]}"
    return {
        p: (_capped(p, b) if b is not None else FileError(p, f"not found in {where}"))
        for p, b in blobs.items()
    }


def _read_worktree(root: str, path: str) -> bytes | FileError:
    real_root = os.path.realpath(root)
    full = os.path.realpath(os.path.join(root, path))
    if os.path.commonpath([real_root, full]) != real_root:
        return FileError(path, "resolves outside the repository (symlink?); not read")
    try:
        if os.path.getsize(full) > MAX_FILE_BYTES:
            return FileError(path, f"larger than the {MAX_FILE_BYTES // 1024 // 1024} MiB size cap; not reviewed")
        with open(full, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return FileError(path, "not found in the working tree; is the patch applied to this checkout?")
    except OSError as exc:
        return FileError(path, f"cannot read: {exc.strerror}")


def _capped(path: str, data: bytes) -> bytes | FileError:
    if len(data) > MAX_FILE_BYTES:
        return FileError(path, f"larger than the {MAX_FILE_BYTES // 1024 // 1024} MiB size cap; not reviewed")
    return data


def _decode(path: str, data: bytes) -> str | FileError:
    if b"\0" in data[:8192]:
        return FileError(path, "binary content; not reviewed")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        where = getattr(exc, "start", None)
        detail = f" at byte {where}" if where is not None else ""
        return FileError(path, f"not valid UTF-8 or declared encoding{detail}; not reviewed")


@dataclass(frozen=True)
class DefinitionMap:
    """Innermost enclosing function or class for each line of one file."""

    definitions: tuple[Definition, ...]  # sorted by start line, outer before inner

    def enclosing(self, line: int) -> Definition:
        best: Definition | None = None
        for definition in self.definitions:
            if definition.start_line > line:
                break  # sorted by start line
            if line <= definition.end_line:
                best = definition  # later starts are nested deeper
        return best or Definition("<module>", "module", 1, max(line, 1))


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    import tree_sitter
    import tree_sitter_python

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))


def parse_tree(text: str) -> tree_sitter.Tree:
    """tree-sitter syntax tree of ``text``; error-tolerant, rows are ``\n``-separated lines."""
    return _parser().parse(text.encode("utf-8", "surrogatepass"))


def definitions(text: str, tree: tree_sitter.Tree | None = None) -> DefinitionMap:
    """Functions and classes with Python-style qualified names (``A.f.<locals>.g``)."""
    tree = tree if tree is not None else parse_tree(text)
    found: list[Definition] = []
    stack: list[tuple[tree_sitter.Node, str, int | None]] = [(tree.root_node, "", None)]
    while stack:
        node, prefix, decorated_start = stack.pop()
        kind = _DEFINITION_TYPES.get(node.type)
        child_prefix = prefix
        if kind is not None:
            name_node = node.child_by_field_name("name")
            name = name_node.text.decode("utf-8", "replace") if name_node is not None and name_node.text is not None else "?"
            qualname = prefix + name
            start = decorated_start if decorated_start is not None else node.start_point[0] + 1
            found.append(Definition(qualname, kind, start, node.end_point[0] + 1))
            child_prefix = qualname + (".<locals>." if kind == "function" else ".")
        if kind is None and node.type not in _CONTAINERS:
            continue  # definitions only nest inside blocks and compound statements
        for child in reversed(node.children):
            decorated = node.start_point[0] + 1 if node.type == "decorated_definition" else None
            stack.append((child, child_prefix, decorated))
    found.sort(key=lambda d: (d.start_line, -d.end_line))
    return DefinitionMap(tuple(found))


def first_syntax_error(tree: tree_sitter.Tree) -> int | None:
    """1-based line of the first ERROR or MISSING node, or None for a clean tree."""
    if not tree.root_node.has_error:
        return None
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return node.start_point[0] + 1
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return tree.root_node.start_point[0] + 1
