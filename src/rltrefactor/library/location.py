"""Where the bundled rule library lives, found without reading it."""

from __future__ import annotations

from pathlib import Path

from ..errors import RuleLibraryError

LIBRARY_FILE = "library.yaml"
NAMES_FILE = "names.yaml"  # name lists as data (see ``rltrefactor.library.names``)
PROTOCOLS_FILE = "protocols.yaml"  # how often framework entry points run (``rltrefactor.library.protocols``)


def bundled_rules_dir() -> Path:
    """The installed package's ``_rules`` data, else ``<repo>/rules`` beside ``src/``."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_rules", package.parent.parent / "rules"):
        if (candidate / LIBRARY_FILE).is_file():
            return candidate
    raise RuleLibraryError(
        f"{package}: bundled rule library not found (no _rules/{LIBRARY_FILE} in the package, "
        f"no rules/{LIBRARY_FILE} in the source tree); reinstall rltrefactor"
    )
