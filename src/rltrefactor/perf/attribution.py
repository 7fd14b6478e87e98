"""Which line of the reviewed repository caused an op: the innermost repo frame.

A frame counts as repository code when its file lies under the side's root and not in
an installed environment (a ``.venv`` inside the checkout holds torch itself) nor in
rltrefactor's own package (the runner and its wrappers sit on every stack).
"""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass
from types import CodeType, FrameType

_OWN_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ENV_MARKERS = ("site-packages", "dist-packages")


@dataclass(frozen=True)
class Site:
    path: str  # repo-relative, POSIX; "" when no repository frame is on the stack
    line: int
    source: str
    function: str = ""  # qualified name of the enclosing top-level definition, "<module>" at top level


UNATTRIBUTED = Site("", 0, "")


class RepoFrames:
    """Maps frames to repository sites; the per-code-object answer is cached."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._prefixes = tuple(
            os.path.realpath(p) + os.sep
            for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, _OWN_PACKAGE}
        )
        self._paths: dict[CodeType, str | None] = {}

    def relpath(self, code: CodeType) -> str | None:
        """Repo-relative path of the code's file, or None for code outside the repo."""
        try:
            return self._paths[code]
        except KeyError:
            pass
        filename = os.path.realpath(code.co_filename)
        inside = filename.startswith(self.root + os.sep)
        if not inside or filename.startswith(self._prefixes) or any(m in filename for m in _ENV_MARKERS):
            self._paths[code] = None
        else:
            self._paths[code] = os.path.relpath(filename, self.root).replace(os.sep, "/")
        return self._paths[code]

    def site(self, frame: FrameType | None) -> Site:
        """The innermost repository frame at or above ``frame``."""
        while frame is not None:
            rel = self.relpath(frame.f_code)
            if rel is not None:
                line = frame.f_lineno or 0
                text = linecache.getline(frame.f_code.co_filename, line).strip()
                return Site(rel, line, text, outer_definition(frame.f_code))
            frame = frame.f_back
        return UNATTRIBUTED


def outer_definition(code: CodeType) -> str:
    """``Runner.step`` for code in ``Runner.step`` and in lambdas or helpers nested in it."""
    return outer_definition_name(getattr(code, "co_qualname", code.co_name))


def outer_definition_name(qualname: str) -> str:
    """``Runner.step`` for ``Runner.step.<locals>.helper`` (as ``outer_definition``)."""
    return qualname.split(".<locals>.", 1)[0].split(".<", 1)[0]


def normalize_source(text: str) -> str:
    """Source text compared across revisions: whitespace runs collapsed, comment dropped."""
    code = text.split("  #", 1)[0]
    return " ".join(code.split())
