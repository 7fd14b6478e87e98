"""Rule texts still as drafted: ``rules new`` writes ``TODO`` where a reviewer's words go.

A library loads with them (a draft can be tried at once); ``rules check`` refuses them,
naming the file and line of the first one, so a draft is never taken for a finished rule.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from ..errors import RuleLibraryError
from .fields import _short
from .lines import LineMap
from .location import LIBRARY_FILE
from .yamlsafe import load_yaml

# The texts a finding, the checklist or the rules reference shows.
TEXT_KEYS = ("title", "problem", "preferred", "exceptions", "impact", "fix")
_TODO = re.compile(r"\bTODO\b")


def check_drafts(directories: Iterable[tuple[Path, str]]) -> None:
    """Raise ``RuleLibraryError`` at the first required text reading ``TODO``.

    ``directories``: (rule directory, how messages name it). The files have loaded
    already, so their YAML is known to be well formed."""
    for directory, label in directories:
        for path in sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.name != LIBRARY_FILE):
            display = f"{label}/{path.name}"
            data = load_yaml(path.read_text(encoding="utf-8"), display)
            items = data.get("rules") if isinstance(data, dict) else None
            for item in items if isinstance(items, list) else ():
                if isinstance(item, LineMap):
                    _check_rule(item, display)


def _check_rule(item: LineMap, display: str) -> None:
    for key in TEXT_KEYS:
        value = item.get(key)
        if isinstance(value, str) and _TODO.search(value):
            raise RuleLibraryError(
                f"{display}:{item.line_of(key)}: rule {item.get('id')!r}: {key}: still reads TODO "
                f"(got {_short(value.strip())}); write the text (docs/writing-rules.md says what each key holds)"
            )
