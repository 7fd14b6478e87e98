"""PATH arguments must name something in the reviewed repository.

A PATH names something when a changed file lies under it, or a file or directory of that
name exists in the working tree or among the paths tracked at the reviewed revision (the
commit read, or the index). One that names nothing is a typo, not an empty change: it
stops the run, naming the argument and, where one is close, the path probably meant.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import Iterable, Sequence

from . import git as gitio
from ..errors import ChangeInputError
from ..library.fields import closest
from ..types import ChangeSet


def check_named(change: ChangeSet, given: Sequence[str], relative: Sequence[str]) -> None:
    """Raise ``ChangeInputError`` for the first of ``given`` (the PATH arguments as
    typed; ``relative``: each from the repository root, POSIX) that names nothing."""
    root = change.repo_root or "."
    changed = [path for f in change.files for path in (f.path, f.old_path) if path]
    tracked: frozenset[str] | None = None  # listed only when the cheap tests fail
    for typed, path in zip(given, relative):
        if any(_under(name, path) for name in changed) or os.path.lexists(os.path.join(root, path)):
            continue
        if tracked is None:
            tracked = _tracked(change)
        if path not in tracked:
            raise missing_path(typed, root, path, tracked, _where(change))


def missing_path(typed: str, root: str, path: str, tracked: frozenset[str] = frozenset(),
                 where: str = "in the working tree") -> ChangeInputError:
    """The error for PATH ``typed`` (``path`` from ``root``) that names nothing ``where``."""
    near = _near_path(root, path, tracked)
    if near is None:
        fix = f"check the spelling (PATHs are relative to the current directory, {os.getcwd()})"
    else:
        fix = f"did you mean {_as_typed(typed, root, near)}?"
    return ChangeInputError(f"{typed}: no such file or directory {where}; {fix}")


def _under(name: str, path: str) -> bool:
    return path == "." or name == path or name.startswith(path.rstrip("/") + "/")


def _tracked(change: ChangeSet) -> frozenset[str]:
    """Every file and directory tracked at the reviewed revision (none for the working
    tree: it is looked at directly)."""
    root = change.repo_root
    if root is None or change.head.kind == "worktree":
        return frozenset()
    if change.head.kind == "index":
        listing = gitio.git(root, "ls-files", "--cached", "-z")
    else:
        listing = gitio.git(root, "ls-tree", "-r", "--name-only", "-z", change.head.ref or "HEAD")
    found: set[str] = set()
    for name in filter(None, listing.split("\0")):
        found.add(name)
        found.update(str(parent) for parent in PurePosixPath(name).parents if str(parent) != ".")
    return frozenset(found)


def _where(change: ChangeSet) -> str:
    if change.head.kind == "git" and change.head.ref:
        return f"at {change.head.ref[:10]} or in the working tree"
    if change.head.kind == "index":
        return "in the index or the working tree"
    return "in the working tree"


def _near_path(root: str, path: str, tracked: frozenset[str]) -> str | None:
    """The existing path ``path`` most likely misspells, one name at a time, or None."""
    found: list[str] = []
    for name in PurePosixPath(path).parts:
        names = _children(root, "/".join(found), tracked)
        if name not in names:
            near = closest(name, sorted(names))
            if near is None:
                return None
            name = near
        found.append(name)
    return "/".join(found) or None


def _children(root: str, directory: str, tracked: Iterable[str]) -> set[str]:
    """Names in ``directory`` (from the root; "" for the root) in the working tree or tracked."""
    prefix = f"{directory}/" if directory else ""
    names = {name[len(prefix):] for name in tracked if name.startswith(prefix) and "/" not in name[len(prefix):]}
    try:
        names.update(os.listdir(os.path.join(root, directory)))
    except OSError:  # not a directory in the working tree
        pass
    names.discard(".git")
    return names


def _as_typed(typed: str, root: str, near: str) -> str:
    """``near`` (from the root) written the way ``typed`` was: absolute, or from the current directory."""
    absolute = os.path.join(os.path.realpath(root), near)
    return absolute if os.path.isabs(typed) else os.path.relpath(absolute, os.path.realpath(os.getcwd()))
