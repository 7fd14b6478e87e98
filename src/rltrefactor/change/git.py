"""Git, called with argument lists and never through a shell.

Every ref that comes from a user is checked with ``check_ref`` before it reaches git,
so a ref such as ``--output=x`` can never be taken for an option.
"""

from __future__ import annotations

import os
import re
import subprocess

from ..errors import ChangeInputError, GitError

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


def run(repo: str, *args: str, input_bytes: bytes | None = None) -> bytes:
    """Run ``git -C repo args...`` and return stdout; raise GitError with git's message."""
    argv = ["git", "-C", repo, "-c", "core.quotePath=false", *args]
    try:
        proc = subprocess.run(
            argv,
            input=input_bytes,
            capture_output=True,
            env={**os.environ, **_GIT_ENV},
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("git: not found on PATH; install git to review a git range") from exc
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = message[-1] if message else f"exit code {proc.returncode}"
        raise GitError(f"{repo}: git {args[0]} failed: {detail}")
    return proc.stdout


def git(repo: str, *args: str) -> str:
    return run(repo, *args).decode("utf-8", "surrogateescape")


def check_ref(ref: str) -> str:
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n\r "):
        raise ChangeInputError(
            f"invalid ref {ref!r}: refs may not be empty, start with '-' or contain "
            "whitespace; pass a branch, tag or commit such as origin/main"
        )
    return ref


def toplevel(path: str) -> str:
    try:
        return git(path, "rev-parse", "--show-toplevel").strip()
    except GitError as exc:
        raise ChangeInputError(
            f"{path}: not inside a git repository; run from a clone, pass --repo, "
            "or review files by path (rltrefactor review PATH...)"
        ) from exc


def has_commits(repo: str) -> bool:
    try:
        run(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except GitError:
        return False
    return True


def rev_parse(repo: str, rev: str) -> str:
    check_ref(rev)
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}").strip()
    except GitError:
        hint = "fetch it (git fetch origin) or check the spelling"
        if not has_commits(repo):
            hint = "the repository has no commits yet; commit once, or review files by path"
        raise ChangeInputError(_no_parent(repo, rev) or f"{repo}: unknown revision {rev!r}; {hint}") from None


def base_rev_parse(repo: str, rev: str) -> str:
    """``rev_parse`` for the base of a range, which may also be the empty tree: the base
    of a first commit, which has no parent."""
    return EMPTY_TREE if rev == EMPTY_TREE else rev_parse(repo, rev)


# ``C^``, ``C^1``, ``C~`` and ``C~1``: the first parent of ``C``.
_FIRST_PARENT = re.compile(r"^(?P<commit>.+?)(?:\^1?|~1?)$")


def _no_parent(repo: str, rev: str) -> str | None:
    """The message for ``C^`` where ``C`` exists but is a first commit; None otherwise."""
    match = _FIRST_PARENT.match(rev)
    if match is None:
        return None
    commit = match.group("commit")
    try:
        sha = git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^{{commit}}").strip()
    except GitError:
        return None
    return (f"{repo}: revision {rev!r}: commit {sha[:12]} is the first of its history and has no parent; "
            f"review everything it adds with: rltrefactor review --diff {EMPTY_TREE}..{commit}")


def merge_base(repo: str, a: str, b: str) -> str:
    try:
        return git(repo, "merge-base", a, b).strip()
    except GitError:
        shallow = git(repo, "rev-parse", "--is-shallow-repository").strip() == "true"
        hint = (
            "this is a shallow clone: fetch more history (git fetch --unshallow, or "
            "actions/checkout with fetch-depth: 0)"
            if shallow
            else "the two histories share no commit; review an explicit range A..B instead"
        )
        raise ChangeInputError(f"{repo}: no merge base between {a} and {b}; {hint}") from None


def read_blob(repo: str, rev: str, path: str) -> bytes:
    """Contents of ``path`` at ``rev`` (a commit SHA, or "" for the index)."""
    return run(repo, "cat-file", "blob", f"{rev}:{path}")


def read_blobs(repo: str, rev: str, paths: list[str]) -> dict[str, bytes | None]:
    """Many blobs in one git process; None for a path missing at ``rev``."""
    if not paths:
        return {}
    request = "".join(f"{rev}:{p}\n" for p in paths).encode("utf-8", "surrogateescape")
    out = run(repo, "cat-file", "--batch", input_bytes=request)
    blobs: dict[str, bytes | None] = {}
    pos = 0
    for path in paths:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        pos = header_end + 1
        if len(header) < 3 or header[1] != b"blob":
            blobs[path] = None
            continue
        size = int(header[2])
        blobs[path] = out[pos : pos + size]
        pos += size + 1  # the blob is followed by one newline
    return blobs


def clean_head(repo: str) -> str | None:
    """HEAD's SHA when the working tree and index hold no change to tracked files.

    A review of such a working tree reviewed exactly that commit, so links can point at it.
    """
    try:
        if git(repo, "status", "--porcelain", "--untracked-files=no").strip():
            return None
        return git(repo, "rev-parse", "--verify", "HEAD").strip()
    except GitError:
        return None
