"""File contents at the head (and base) revision.

The head revision is the truth: a range ``A..B`` is read from git at ``B``, the index
from the index, and only a working-tree review reads files on disk.
"""

from __future__ import annotations

import hashlib
import io
import os
import tokenize
from typing import Protocol

from . import git as gitio
from ..errors import GitError
from ..types import ChangeSet, FileError

MAX_FILE_BYTES = 2 * 1024 * 1024


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
    nul = data.find(b"\0", 0, 8192)  # git's own test for binary content, on about the same span
    if nul != -1:
        return FileError(path, f"binary content (a NUL byte at byte {nul}); not reviewed")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        where = getattr(exc, "start", None)
        detail = f" at byte {where}" if where is not None else ""
        return FileError(path, f"not valid UTF-8 or declared encoding{detail}; not reviewed")


class ModuleTexts(Protocol):
    """Text of a repository module by repository-relative path; None when there is none."""

    def read(self, path: str) -> str | None: ...


class RepositoryTexts:
    """Modules of the reviewed repository at the head revision, each read once, when first
    asked for: matchers that follow an import read a few modules, never the repository.
    Paths the revision does not hold are answered from one listing, without a read."""

    def __init__(self, change: ChangeSet) -> None:
        self._change = change
        self._read: dict[str, str | None] = {}
        self._listed: frozenset[str] | None = None

    def read(self, path: str) -> str | None:
        if path not in self._read:
            text = read_text(self._change, path) if self._holds(path) else None
            self._read[path] = text if isinstance(text, str) else None
        return self._read[path]

    def _holds(self, path: str) -> bool:
        root, head = self._change.repo_root, self._change.head
        if root is None:
            return False
        if head.kind == "worktree":
            return os.path.isfile(os.path.join(root, path))
        if self._listed is None:
            try:
                listing = gitio.run(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", head.ref or "HEAD") \
                    if head.kind == "git" else gitio.run(root, "ls-files", "-z")
            except GitError:
                listing = b""
            self._listed = frozenset(listing.decode("utf-8", "surrogateescape").split("\0"))
        return path in self._listed


class FileTexts:
    """The reviewed file's whole text and, through ``repository``, the modules it imports;
    it remembers which of those were read, since the file's outcome then depends on them."""

    def __init__(self, path: str, text: str, repository: ModuleTexts | None = None) -> None:
        self.path = path
        self.text = text
        self.repository = repository
        self._read: dict[str, str | None] = {}

    def read(self, path: str) -> str | None:
        if path == self.path:
            return self.text
        if path not in self._read:
            self._read[path] = self.repository.read(path) if self.repository is not None else None
        return self._read[path]

    def modules_read(self) -> tuple[tuple[str, str], ...]:
        """(path, ``text_digest``) of every other module asked for, those missing included."""
        return tuple(sorted((path, text_digest(text)) for path, text in self._read.items()))


def text_digest(text: str | None) -> str:
    """A module's text as a cache key part ("" for no module)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16] if text is not None else ""
