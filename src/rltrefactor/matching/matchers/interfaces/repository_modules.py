"""Repository modules seen from a file: where an import's module lives, and the cheap
test that decides whether declarations are worth reading at all.

Both read text only: paths are derived from the importer's path, and the test is a
scan for a word with a regex around each occurrence (``closed_sets`` parses a module
only once this test has passed).
"""

from __future__ import annotations

import functools
import posixpath
import re
from typing import Iterator

from ....change.contents import ModuleTexts
from ..base import FileContext


def may_close(ctx: FileContext, texts: ModuleTexts, word: str) -> bool:
    """The cheap test before any parse, on the file and the repository modules it
    imports (and those these import relatively: a package re-exporting an alias): one
    of them checks ``word`` against a collection, or one says ``Literal`` and one
    declares ``word`` (``word: T``, ``def word``, a loop binding it). Most files of
    most engines do neither, and their comparisons are reported without a parse."""
    checks, declares = _closing_patterns(word)
    said_literal = said_declared = False
    for text in _module_texts(ctx, texts):
        if _around(text, word, checks):
            return True
        said_literal = said_literal or _LITERAL.search(text) is not None
        said_declared = said_declared or _around(text, word, declares)
        if said_literal and said_declared:
            return True
    return False


def _around(text: str, word: str, pattern: re.Pattern[str]) -> bool:
    """``pattern`` (which holds ``word``) matches within a line's reach of an occurrence
    of ``word``: a scan for the word, then a regex on a few hundred characters."""
    at = text.find(word)
    while at != -1:
        if pattern.search(text, max(0, at - 100), at + len(word) + 100):
            return True
        at = text.find(word, at + len(word))
    return False


@functools.lru_cache(maxsize=64)
def _closing_patterns(word: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    name = re.escape(word)
    return (
        re.compile(rf"\b{name}[ \t]+not[ \t]+in\b|\bassert[ \t]+[\w.]{{0,80}}\b{name}[ \t]+in\b"),
        re.compile(rf"\b{name}[ \t]*:(?!=)|\bdef[ \t]+{name}\b|\bfor[ \t]+[\w ,()]{{0,80}}\b{name}\b[\w ,()]{{0,80}}\bin\b"),
    )


def _module_texts(ctx: FileContext, texts: ModuleTexts) -> Iterator[str]:
    """The file's text, then those of the repository modules it imports, two steps deep."""
    own = texts.read(ctx.path)
    if own is not None:
        yield own
    seen = {ctx.path}
    imported = [(ctx.path, q) for q in sorted(set(ctx.imports.aliases.values()))]
    for _ in range(2):
        found: list[tuple[str, str]] = []
        for importer, qualified in imported:
            dotted = qualified.lstrip(".")
            module = _first_module(texts, importer, len(qualified) - len(dotted), dotted)
            if module is not None and module[0] not in seen:
                seen.add(module[0])
                yield module[1]
                found += [(module[0], m.group(1) + m.group(2)) for m in _RELATIVE_IMPORT.finditer(module[1])]
        imported = found


_LITERAL = re.compile(r"\bLiteral\b")
_RELATIVE_IMPORT = re.compile(r"^\s*from\s+(\.+)([\w.]*)\s+import\b", re.MULTILINE)


def _first_module(texts: ModuleTexts, importer: str, level: int, dotted: str) -> tuple[str, str] | None:
    """The repository module ``dotted`` names, or the one holding the name it ends with."""
    for module in dict.fromkeys((dotted, dotted.rpartition(".")[0])):
        for path in module_paths(importer, level, module):
            text = texts.read(path)
            if text is not None:
                return path, text
    return None



def module_paths(importer: str, level: int, dotted: str) -> list[str]:
    """Repository paths a module may live at, seen from the file ``importer``.

    Relative imports count up from the importer's folder; an absolute import is looked
    for under each folder of the importer's own path named like its first part
    (``from vllm.config import X`` in ``vllm/worker/a.py``), then at the repository's
    root and under ``src/`` (tests and scripts importing the package). A path the
    revision does not hold costs a set lookup (``contents.RepositoryTexts``)."""
    parts = [p for p in dotted.split(".") if p]
    folders = posixpath.dirname(importer).split("/") if posixpath.dirname(importer) else []
    if level > 0:
        if level - 1 > len(folders):
            return []
        bases = ["/".join(folders[: len(folders) - (level - 1)])]
    else:
        if not parts:
            return []
        bases = list(dict.fromkeys(["/".join(folders[:i]) for i, folder in enumerate(folders) if folder == parts[0]] + ["", "src"]))
    found = []
    for base in bases:
        stem = "/".join(p for p in (base, *parts) if p)
        found += [f"{stem}.py", f"{stem}/__init__.py"] if parts else [f"{stem}/__init__.py" if stem else "__init__.py"]
    return found


