"""The library a drafted rule joins, and the version its ``since`` names.

A rule drafted in a repository joins that repository's own library: the directory of
``--output``, else the first of ``rule-dirs``, else ``review/rules`` (the directory the
documentation uses). Only a draft into the bundled ``rules/`` itself (in a checkout of
rltrefactor) joins the bundled library. A local library is versioned apart from the
bundled one: its ``library.yaml`` is written, at ``FIRST_VERSION``, the first time a rule
is drafted into it, and every later draft reads it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..library.location import LIBRARY_FILE

FIRST_VERSION = "0.1.0"
DEFAULT_DIR = os.path.join("review", "rules")  # where local rules go when nothing names a directory

# What ``rules new`` writes as a local library's ``library.yaml`` (docs/writing-rules.md shows it).
LIBRARY_TEXT = f"""\
# This repository's own rules (rule-dirs), versioned apart from rltrefactor's bundled library.
# Bump `version` when a rule here changes; a new rule's `since` is the version that adds it.
schema: 1
version: {FIRST_VERSION}
retired-ids: []
"""


def next_version(version: str) -> str:
    """The library version a new rule ships in: the next minor (1.3.0 -> 1.4.0)."""
    major, minor, _ = (int(part) for part in version.split("."))
    return f"{major}.{minor + 1}.0"


@dataclass(frozen=True)
class TargetLibrary:
    """The library a drafted rule joins: how to name its ``library.yaml`` and its version
    today (for one not yet written, the version it is written with)."""

    label: str  # e.g. "review/rules/library.yaml", as messages name it
    version: str
    exists: bool = True  # False: the library.yaml is still to be written
    path: str | None = None  # the library.yaml on disk; None for the bundled library
    writes: bool = False  # this draft writes the missing library.yaml (it goes into a file with --output)
    configured: bool = True  # rule-dirs names the directory, so reviews load its rules

    @property
    def directory(self) -> str:
        return os.path.dirname(self.label) or "."

    @property
    def since(self) -> str:
        """A rule joining an existing library ships in its next version; one that starts
        a library ships in its first."""
        return next_version(self.version) if self.exists else self.version

    @property
    def since_note(self) -> str:
        """What to do with the version ``since`` names, as a YAML comment."""
        if self.exists:
            return f"# the next version of {self.label}: bump it to this"
        if self.writes:
            return f"# the first version of {self.label}, written with this rule"
        return f"# {self.label} does not exist yet: --output {self.directory}/<area>.yaml writes it with this version"


def bundled_target() -> TargetLibrary:
    from ..library.loader import library_version
    from ..library.location import bundled_rules_dir

    version = library_version(str(bundled_rules_dir()))
    return TargetLibrary(f"rules/{LIBRARY_FILE}", version or FIRST_VERSION)


def target_library(repo: str, output: str | None, rule_dirs: tuple[str, ...]) -> TargetLibrary:
    """The library a rule drafted in ``repo`` joins (``output``: the rule file to write;
    ``rule_dirs``: the configured ones, absolute)."""
    from ..library.loader import display_dir, library_version
    from ..library.location import bundled_rules_dir

    if output:
        directory = os.path.dirname(os.path.abspath(output))
    elif rule_dirs:
        directory = rule_dirs[0]
    elif _same(os.path.join(repo, "rules"), str(bundled_rules_dir())):
        directory = str(bundled_rules_dir())  # a checkout of rltrefactor drafting into its own library
    else:
        directory = os.path.join(repo, DEFAULT_DIR)
    if _same(directory, str(bundled_rules_dir())):
        return bundled_target()
    meta = os.path.join(directory, LIBRARY_FILE)
    label = os.path.join(display_dir(directory), LIBRARY_FILE)
    configured = any(_same(directory, configured) for configured in rule_dirs)
    version = library_version(directory)
    if version is not None:
        return TargetLibrary(label, version, path=meta, configured=configured)
    return TargetLibrary(label, FIRST_VERSION, exists=False, path=meta, writes=bool(output), configured=configured)


def _same(one: str, other: str) -> bool:
    return os.path.realpath(one) == os.path.realpath(other)
