"""Temporary detached worktrees for the revisions the perf hook executes.

Invariant: every worktree this module adds is removed again, and ``git worktree prune``
runs, on success, on failure and on KeyboardInterrupt alike.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from typing import Iterator

from ..change import git as gitio
from ..errors import GitError


@contextmanager
def detached_worktree(repo: str, commit: str, label: str, *, parent: str | None = None) -> Iterator[str]:
    """Yield the root of a detached checkout of ``commit``, made under ``parent`` (None:
    the system temporary directory); removed on exit."""
    holder = tempfile.mkdtemp(prefix=f"rltrefactor-perf-{label}-", dir=parent)
    path = os.path.join(holder, "tree")
    try:
        gitio.git(repo, "worktree", "add", "--detach", "--quiet", path, commit)
        yield path
    finally:
        _remove(repo, path)
        shutil.rmtree(holder, ignore_errors=True)


def _remove(repo: str, path: str) -> None:
    try:
        if os.path.isdir(path):
            gitio.git(repo, "worktree", "remove", "--force", path)
    except GitError:
        pass  # the directory is deleted below and prune forgets the registration
    shutil.rmtree(path, ignore_errors=True)
    try:
        gitio.git(repo, "worktree", "prune")
    except GitError:
        pass  # nothing more can be done; the tree itself is already gone


def copy_hooks(source_root: str, target_root: str, hooks_dir: str) -> None:
    """Run the head's micro-checks on both sides: the same measurement, two revisions."""
    source = os.path.join(source_root, hooks_dir)
    target = os.path.join(target_root, hooks_dir)
    if os.path.realpath(source) == os.path.realpath(target) or not os.path.isdir(source):
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
