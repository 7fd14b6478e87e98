"""The library version must move whenever a rule file changes (``rules check --base``)."""

from __future__ import annotations

import os

from ..errors import GitError, RuleLibraryError
from ..change.git import git, read_blob, rev_parse
from ..library.fields import Reader
from ..library.location import LIBRARY_FILE
from ..library.yamlsafe import load_yaml

# Files under rules/ whose edits do not change what the library reports.
UNVERSIONED = ("CHANGELOG.md", "README.md")


def parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def check_version_bump(repo: str, base: str, rules_dir: str = "rules") -> str | None:
    """The version the change moves from, or None when nothing under ``rules_dir`` changed.

    Raises ``RuleLibraryError`` when rule files changed since ``base`` but
    ``library.yaml``'s version is not above the version at ``base``.
    """
    commit = rev_parse(repo, base)
    changed = [
        path
        for path in git(repo, "diff", "--name-only", commit, "--", rules_dir).splitlines()
        if path and os.path.basename(path) not in UNVERSIONED
    ]
    if not changed:
        return None
    meta = f"{rules_dir}/{LIBRARY_FILE}"
    try:
        old_text = read_blob(repo, commit, meta).decode("utf-8")
    except GitError:
        return None  # the library did not exist at the base: nothing to compare with
    old = _version(old_text, f"{base}:{meta}")
    with open(os.path.join(repo, meta), encoding="utf-8") as handle:
        text = handle.read()
    new = _version(text, meta)
    if parse_version(new[0]) <= parse_version(old[0]):
        listed = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        raise RuleLibraryError(
            f"{meta}:{new[1]}: version: rules changed since {base} ({listed}) but the library version "
            f"is still {new[0]} (was {old[0]}); bump it and add a CHANGELOG entry"
        )
    return old[0]


def _version(text: str, where: str) -> tuple[str, int]:
    reader = Reader(load_yaml(text, where), where, "", 1)
    return reader.get("version", str, required=True), reader.line_of("version")
