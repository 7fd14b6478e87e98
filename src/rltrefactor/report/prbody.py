"""Keep the review summary in a PR description, between two marker comments.

Invariants: everything outside the markers is kept byte for byte; running the update
twice with the same summary gives identical bytes; the file is replaced atomically,
so a reader never sees half a description.
"""

from __future__ import annotations

import os

from ..errors import ConfigError
from ..change.files import write_atomic

START = "<!-- rltrefactor:start -->"
END = "<!-- rltrefactor:end -->"


def update_pr_body(path: str, summary: str) -> None:
    """Write ``summary`` between the markers in ``path``; append the section if absent.

    A missing file is treated as an empty description.
    """
    if os.path.isdir(path):
        raise ConfigError(
            f"{path}: PR body: is a directory; pass the Markdown file of the PR description, "
            f"e.g. {os.path.join(path, 'pr-body.md')}"
        )
    try:
        with open(path, "rb") as handle:
            body = handle.read().decode("utf-8")
    except FileNotFoundError:
        body = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path}: PR body: cannot be read as UTF-8 text ({exc}); pass a UTF-8 Markdown file"
        ) from None
    write_atomic(path, splice(body, summary, path=path))


def splice(body: str, summary: str, *, path: str = "<PR body>") -> str:
    """``body`` with the marked section set to ``summary``, in the body's line endings
    (CRLF when its first line ends so, as a description edited on the web does)."""
    newline = "\r\n" if "\r\n" in body.split("\n", 1)[0] + "\n" else "\n"
    lines = summary.replace("\r\n", "\n").strip("\n").split("\n")
    section = newline.join([START, *lines, END])
    starts, ends = body.count(START), body.count(END)
    if starts == 0 and ends == 0:
        if not body:
            return section + newline
        separator = newline if body.endswith("\n") else newline * 2
        return body + separator + section + newline
    first_start, first_end = body.find(START), body.find(END)
    if starts != 1 or ends != 1 or first_end < first_start:
        where = min(i for i in (first_start, first_end) if i >= 0)
        line = body.count("\n", 0, where) + 1
        raise ConfigError(
            f"{path}:{line}: PR body: unbalanced rltrefactor markers "
            f"(got {starts} '{START}' and {ends} '{END}'); "
            "keep exactly one start marker followed by one end marker, or delete both"
        )
    return body[:first_start] + section + body[first_end + len(END) :]
