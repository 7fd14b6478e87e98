"""Change sources: a git range, a patch, the index, or plain paths -> ChangeSet."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Iterator

from . import git as gitio
from .absent import absent_blobs
from .path_arguments import check_named, missing_path
from ..errors import ChangeInputError, GitError
from ..types import ChangedFile, ChangeSet, FileError, FileStatus, Hunk, Revision

if TYPE_CHECKING:
    import unidiff

_DIFF_ARGS = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "-U0", "--src-prefix=a/", "--dst-prefix=b/")
_LITERAL = ":(literal)"  # a path, not a glob: ``[`` and ``*`` in names mean themselves
_SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".mypy_cache"}


def collect_changes(
    repo: str,
    *,
    diff: str | None = None,
    diff_file: str | None = None,
    staged: bool = False,
    paths: tuple[str, ...] = (),
) -> ChangeSet:
    """Build the ChangeSet for exactly one change source; ``paths`` with ``diff`` or
    ``staged`` limit that change to those paths (``git diff A..B -- PATH...``)."""
    chosen = [name for name, on in (("--diff", diff), ("--diff-file", diff_file), ("--staged", staged)) if on]
    if len(chosen) > 1 or (diff_file is not None and paths):
        given = " and ".join(chosen + (["PATHS"] if paths else []))
        raise ChangeInputError(
            f"choose one change source, got {given}; PATHS limit only --diff or --staged (cut the patch itself instead)"
        )
    if diff_file is not None:
        return _from_patch_file(repo, diff_file)
    if paths and not chosen:
        return _from_paths(repo, paths)
    root = gitio.toplevel(repo)
    pathspec = _pathspec(root, paths)
    change = _from_index(root, pathspec) if staged else _from_range(root, diff or "HEAD", pathspec)
    if not pathspec:
        return change
    relative = [spec.removeprefix(_LITERAL) for spec in pathspec]
    # A PATH with no change under it is an empty change only if it names something.
    check_named(change, paths, relative)
    under = ", ".join(relative)
    change = replace(change, description=f"{change.description}, under {under}")
    if change.files:
        return change
    # Empty under the PATHs: say whether the change itself is.
    whole = _from_index(root) if staged else _from_range(root, diff or "HEAD")
    return replace(change, unselected=len(whole.files))


def _pathspec(root: str, paths: tuple[str, ...]) -> tuple[str, ...]:
    """Repository-relative, literal pathspecs for ``paths`` (given relative to the current directory)."""
    real_root = os.path.realpath(root)
    found = []
    for given in paths:
        absolute = os.path.realpath(given)
        if os.path.commonpath([real_root, absolute]) != real_root:
            raise ChangeInputError(f"{given}: outside the reviewed repository {root}; pass a path inside it or --repo")
        relative = os.path.relpath(absolute, real_root).replace(os.sep, "/")
        found.append(_LITERAL + relative)
    return tuple(found)


def _from_range(root: str, spec: str, pathspec: tuple[str, ...] = ()) -> ChangeSet:
    for part in spec.replace("...", "..").split(".."):
        if part:
            gitio.check_ref(part)
    if "..." in spec:
        left, right = spec.split("...", 1)
        head = gitio.rev_parse(root, right or "HEAD")
        base = gitio.merge_base(root, gitio.rev_parse(root, left or "HEAD"), head)
        files, errors = _diff(root, (base, head), pathspec)
        return ChangeSet(root, Revision("git", head), files, base=base, description=f"{spec} ({base[:10]}..{head[:10]})",
                         errors=errors)
    if ".." in spec:
        left, right = spec.split("..", 1)
        base = gitio.base_rev_parse(root, left or "HEAD")
        head = gitio.rev_parse(root, right or "HEAD")
        files, errors = _diff(root, (base, head), pathspec)
        # From the empty tree everything is added: no base commit to compare findings with.
        base_commit = None if base == gitio.EMPTY_TREE else base
        return ChangeSet(root, Revision("git", head), files, base=base_commit,
                         description=f"{spec} ({base[:10]}..{head[:10]})", errors=errors)
    # A single ref: what this branch changes since it left REF, working tree included.
    target = gitio.rev_parse(root, spec)
    base = gitio.merge_base(root, target, "HEAD") if gitio.has_commits(root) else target
    files, errors = _diff(root, (base,), pathspec)
    files += _untracked(root, pathspec)
    return ChangeSet(root, Revision("worktree"), files, base=base,
                     description=f"{spec} (merge base {base[:10]} to the working tree)", errors=errors)


def _untracked(root: str, pathspec: tuple[str, ...] = ()) -> tuple[ChangedFile, ...]:
    """New files not yet added to git (ignored ones excluded): wholly added lines."""
    listing = gitio.git(root, "ls-files", "--others", "--exclude-standard", "-z", "--", *pathspec)
    files = []
    for path in sorted(p for p in listing.split("\0") if p):
        lines: frozenset[int] = frozenset()
        if path.endswith((".py", ".pyi")):
            try:
                with open(os.path.join(root, path), "rb") as handle:
                    data = handle.read()
            except OSError:
                data = b""
            count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
            lines = frozenset(range(1, count + 1))
        files.append(ChangedFile(path=path, status="added", added_lines=lines))
    return tuple(files)


def _from_index(root: str, pathspec: tuple[str, ...] = ()) -> ChangeSet:
    base = gitio.rev_parse(root, "HEAD") if gitio.has_commits(root) else gitio.EMPTY_TREE
    files, errors = _diff(root, ("--cached", base), pathspec)
    base_commit = base if base != gitio.EMPTY_TREE else None
    return ChangeSet(root, Revision("index"), files, base=base_commit, description="staged changes", errors=errors)


def _diff(root: str, revs: tuple[str, ...], pathspec: tuple[str, ...]) -> tuple[tuple[ChangedFile, ...], tuple[FileError, ...]]:
    """``git diff revs -- pathspec`` as changed files. Where git cannot make it because
    blobs are absent (``absent``), the files with an absent blob are left out of the diff
    and added without lines; those the review would read come back as errors too."""
    try:
        return parse_unified_diff(gitio.git(root, *_DIFF_ARGS, *revs, "--", *pathspec)), ()
    except GitError:
        absent = absent_blobs(root, revs, pathspec)
        if not absent:
            raise
    left_out = tuple(f":(exclude,literal){a.path}" for a in absent)
    files = parse_unified_diff(gitio.git(root, *_DIFF_ARGS, *revs, "--", *pathspec, *left_out))
    errors = tuple(error for a in absent if (error := a.error()) is not None)
    return files + tuple(a.changed_file() for a in absent), errors


def _from_patch_file(repo: str, patch: str) -> ChangeSet:
    if patch == "-":
        text = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    else:
        try:
            with open(patch, "rb") as handle:
                text = handle.read().decode("utf-8", "surrogateescape")
        except OSError as exc:
            raise ChangeInputError(f"{patch}: cannot read patch: {exc.strerror}; check the path") from None
    files = parse_unified_diff(text, source=patch if patch != "-" else "<stdin>")
    if text.strip() and not files:
        raise ChangeInputError(
            f"{patch}: not a unified diff (no '--- a/... +++ b/...' file headers found); "
            "produce it with git diff or diff -u"
        )
    root = os.path.abspath(repo)
    if not os.path.isdir(root):
        raise ChangeInputError(f"{repo}: --repo is not a directory; pass the checkout the patch applies to")
    return ChangeSet(root, Revision("worktree"), files, description=f"patch {patch}")


def _from_paths(repo: str, paths: tuple[str, ...]) -> ChangeSet:
    root = os.path.abspath(repo)
    found: dict[str, None] = {}
    for given in paths:
        absolute = os.path.abspath(given)
        if os.path.commonpath([root, absolute]) != root:
            raise ChangeInputError(f"{given}: outside the reviewed repository {root}; pass --repo")
        if not os.path.exists(absolute):
            raise missing_path(given, root, os.path.relpath(absolute, root).replace(os.sep, "/"))
        for path in _walk(absolute):
            found[os.path.relpath(path, root).replace(os.sep, "/")] = None
    files = tuple(ChangedFile(path=p, status="added") for p in sorted(found))
    return ChangeSet(root, Revision("worktree"), files, full_scan=True, description="full scan")


def _walk(path: str) -> Iterator[str]:
    if os.path.isfile(path):
        yield path
        return
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith((".py", ".pyi")):
                yield os.path.join(dirpath, name)


def parse_unified_diff(text: str, *, source: str = "diff") -> tuple[ChangedFile, ...]:
    """Changed files and their added head lines, from git or plain unified diff text."""
    import unidiff  # deferred: only change sources that carry a diff need it

    try:
        patch = unidiff.PatchSet(text.splitlines(keepends=True))
    except unidiff.UnidiffParseError as exc:
        raise ChangeInputError(f"{source}: malformed patch: {exc}; regenerate it with git diff") from None
    files = []
    for patched in patch:
        files.append(_changed_file(patched, source))
    return tuple(files)


def _changed_file(patched: unidiff.PatchedFile, source: str) -> ChangedFile:
    target = _clean_path(patched.target_file, source)
    origin = _clean_path(patched.source_file, source)
    if patched.is_removed_file:
        return ChangedFile(path=origin or patched.path, status="deleted", old_path=origin, binary=patched.is_binary_file)
    hunks = tuple(block for hunk in patched for block in _blocks(hunk))
    added = frozenset(n for h in hunks for n in range(h.new_start, h.new_start + h.new_length))
    path = target or patched.path
    _check_inside(path, source)
    if patched.is_added_file:
        return ChangedFile(path=path, status="added", added_lines=added, binary=patched.is_binary_file, hunks=hunks)
    status: FileStatus = "renamed" if getattr(patched, "is_rename", False) else "modified"
    return ChangedFile(path=path, status=status, old_path=origin or path, added_lines=added,
                       binary=patched.is_binary_file, hunks=hunks)


def _blocks(hunk: unidiff.Hunk) -> list[Hunk]:
    """The runs of removed/added lines of a unidiff hunk, numbered as -U0 would number
    them: the same hunks whatever context the diff was made with."""
    blocks: list[Hunk] = []
    # The last line seen on each side; an empty side's start already names the line before.
    old_line = hunk.source_start - (1 if hunk.source_length else 0)
    new_line = hunk.target_start - (1 if hunk.target_length else 0)
    removed: list[int] = []
    added: list[int] = []

    def close() -> None:
        if removed or added:
            blocks.append(Hunk(removed[0] if removed else old_line, len(removed),
                               added[0] if added else new_line, len(added)))
            removed.clear()
            added.clear()

    for line in hunk:
        if line.is_removed and line.source_line_no is not None:  # always numbered on its side
            removed.append(line.source_line_no)
        elif line.is_added and line.target_line_no is not None:
            added.append(line.target_line_no)
        elif line.is_context:
            close()
        if line.source_line_no and not removed:
            old_line = line.source_line_no
        if line.target_line_no and not added:
            new_line = line.target_line_no
    close()
    return blocks


def _clean_path(name: str | None, source: str) -> str | None:
    if not name or name == "/dev/null":
        return None
    if name.startswith(("a/", "b/")):
        name = name[2:]
    _check_inside(name, source)
    return name


def _check_inside(path: str, source: str) -> None:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or "\\" in path and ".." in path:
        raise ChangeInputError(
            f"{source}: path {path!r} escapes the repository; patches must use "
            "repository-relative paths (a/..., b/...)"
        )
