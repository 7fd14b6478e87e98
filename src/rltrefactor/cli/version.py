"""``rltrefactor --version``: the tool's version and the bundled rule library's."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn, Sequence

from .. import __version__
from ..errors import RltError


def version_text() -> str:
    """``rltrefactor 0.1.0 (rule library 1.10.0)``: the library version is the one findings cite."""
    from ..library.loader import library_version
    from ..library.location import bundled_rules_dir

    try:
        library = f"rule library {library_version(str(bundled_rules_dir())) or 'unknown'}"
    except RltError as exc:  # the tool's own version still prints
        library = f"rule library unreadable: {exc}"
    return f"rltrefactor {__version__} ({library})"


class VersionAction(argparse.Action):
    """Prints ``version_text()`` and exits 0. The library file is read only when asked, never
    to build the parser."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> NoReturn:
        sys.stdout.write(version_text() + "\n")
        parser.exit()
