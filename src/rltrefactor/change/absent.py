"""Blobs a change names that the object store does not hold.

A partial clone (``--filter=blob:none``) whose remote cannot be reached, or a pruned or
damaged object store, lacks some blobs, and git then cannot make the diff at all. The
change is read again without those files: one the review does not read (an image, a
deleted file) is kept with no lines, a Python file becomes a ``FileError``, and every
other file is reviewed as usual.

Invariant: nothing here makes git fetch. The listing compares trees (``--no-renames``:
rename detection would read blobs) and presence is asked of ``rev-list --missing``,
which never fetches from a promisor remote.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import git as gitio
from ..errors import ChangeInputError
from ..types import ChangedFile, FileError, FileStatus

# More absent files than this is a clone without the change's blobs, not a gap in it.
MAX_ABSENT = 2000
_NO_BLOB = "0" * 40  # the raw diff's id for a side with no blob, or a working-tree file
_GITLINK = "160000"
_STATUS: dict[str, FileStatus] = {"A": "added", "D": "deleted"}  # others (M, T): modified


@dataclass(frozen=True)
class AbsentBlob:
    """A changed file one of whose sides git cannot read."""

    path: str
    status: FileStatus
    oid: str  # the first absent blob: the base side's when both are

    def changed_file(self) -> ChangedFile:
        """The file as the change holds it: its lines cannot be known."""
        old_path = None if self.status == "added" else self.path
        return ChangedFile(path=self.path, status=self.status, old_path=old_path)

    def error(self) -> FileError | None:
        """The review's record of a Python file it could not read; None for any other."""
        if self.status == "deleted" or not self.changed_file().is_python:
            return None
        return FileError(self.path, f"blob {self.oid[:10]} is absent from the object store (a partial clone whose "
                                    "remote cannot be reached, or a pruned repository); not reviewed; "
                                    "fetch it (git fetch) and review again")


def absent_blobs(root: str, revs: tuple[str, ...], pathspec: tuple[str, ...]) -> tuple[AbsentBlob, ...]:
    """Changed files between ``revs`` (as given to ``git diff``) with a blob git lacks."""
    listing = gitio.run(root, "diff", "--raw", "-z", "--no-abbrev", "--no-renames", *revs, "--", *pathspec)
    entries = _raw_entries(listing.decode("utf-8", "surrogateescape"))
    wanted = sorted({oid for _, _, oids in entries for oid in oids if oid != _NO_BLOB})
    if not wanted:
        return ()
    # --ignore-missing leaves an absent object out of the output instead of stopping.
    out = gitio.run(root, "rev-list", "--objects", "--no-walk", "--ignore-missing", "--missing=print", "--stdin",
                    input_bytes="".join(f"{oid}\n" for oid in wanted).encode())
    present = {line.split()[0] for line in out.decode().splitlines() if line and not line.startswith("?")}
    absent = []
    for path, status, oids in entries:
        gone = [oid for oid in oids if oid != _NO_BLOB and oid not in present]
        if gone:
            absent.append(AbsentBlob(path, status, gone[0]))
    if len(absent) > MAX_ABSENT:
        raise ChangeInputError(
            f"{root}: {len(absent)} changed files have blobs absent from the object store (a partial clone "
            "whose remote cannot be reached?); fetch them (git fetch) or review a smaller range")
    return tuple(absent)


def _raw_entries(text: str) -> list[tuple[str, FileStatus, tuple[str, str]]]:
    """(path, status, (base blob, head blob)) of each record of ``git diff --raw -z --no-renames``."""
    fields = text.split("\0")
    entries = []
    for header, path in zip(fields[0::2], fields[1::2]):
        parts = header.split()  # ":old_mode new_mode old_oid new_oid status"
        if len(parts) != 5:
            continue
        old_mode, new_mode, old_oid, new_oid, status = parts
        # A submodule's side names a commit of another repository, never a blob of this one.
        base = _NO_BLOB if old_mode.lstrip(":") == _GITLINK else old_oid
        head = _NO_BLOB if new_mode == _GITLINK else new_oid
        entries.append((path, _STATUS.get(status[:1], "modified"), (base, head)))
    return entries
