"""The text of every Python file at the reviewed revision, searched before anything is parsed.

The call index asks two questions of the whole repository: which files may define a
function of a name, and which files may call one. Both are answered here from the raw
bytes, as supersets (a ``def name`` inside a string counts), so that only the files the
answer names are parsed; the parsed facts then decide. One pass over every file finds the
names of all ``def`` lines; calls are searched per name, when first asked.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterable, Mapping

from ...source import treesitter
from ...source.field_declarations import field_declarations, host_fields

_DEF = re.compile(rb"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_CALL = re.compile(rb"(\w+)\s*\(")
_WORD = re.compile(rb"\w+")
# Names searched one at a time before one pass indexes every called name of every file.
_SEARCHED_NAMES = 64


def _calls(data: bytes, needle: bytes, pattern: re.Pattern[bytes]) -> bool:
    """``needle`` is written as a whole word followed by ``(`` somewhere in ``data``."""
    if needle not in data:
        return False
    return any(match.start() == 0 or not (data[match.start() - 1:match.start()].isalnum() or data[match.start() - 1] == 95)
               for match in pattern.finditer(data))


class RevisionTexts:
    """Path -> content of every Python file the index covers (``None``: unreadable)."""

    def __init__(self, contents: Mapping[str, bytes | None]) -> None:
        self.paths = tuple(sorted(contents))
        self._contents = contents
        self._defined: dict[str, frozenset[str]] | None = None
        self._indented: dict[str, frozenset[str]] | None = None
        self._calling: dict[str, tuple[str, ...]] = {}
        self._called: dict[str, set[str]] | None = None  # every called name -> files, once read
        self._mentioning: dict[str, tuple[str, ...]] = {}
        self._mentions: dict[tuple[str, str], list[tuple[bytes, bytes]]] = {}
        self._prose: dict[str, list[tuple[int, int, bool]]] = {}  # path -> its comments and strings' text
        self._words: dict[str, set[str]] | None = None  # every word -> files, once read
        self._line_starts: dict[str, list[int]] = {}  # path -> offset of each line
        self._tensor_fields: dict[str, frozenset[str]] | None = None  # ``tensor_field_files``

    def _read_defs(self) -> None:
        defined: dict[str, set[str]] = defaultdict(set)
        indented: dict[str, set[str]] = defaultdict(set)
        for path in self.paths:
            data = self._contents[path]
            for match in _DEF.finditer(data or b""):
                name = match.group(2).decode("ascii", "replace")
                defined[name].add(path)
                if match.group(1):
                    indented[name].add(path)
        self._defined = {name: frozenset(paths) for name, paths in defined.items()}
        self._indented = {name: frozenset(paths) for name, paths in indented.items()}

    def defining(self, name: str) -> frozenset[str]:
        """Files with a ``def name`` line: every file that may define a function ``name``."""
        if self._defined is None:
            self._read_defs()
        assert self._defined is not None
        return self._defined.get(name, frozenset())

    def defining_indented(self, name: str) -> frozenset[str]:
        """Files with an indented ``def name`` line: every file that may define a method ``name``."""
        if self._indented is None:
            self._read_defs()
        assert self._indented is not None
        return self._indented.get(name, frozenset())

    def calling(self, name: str) -> tuple[str, ...]:
        """Files where ``name`` is followed by ``(``: every file that may call it by that name.

        The first names asked are searched one by one (a review of a change asks a few);
        past ``_SEARCHED_NAMES`` one pass over every file indexes every called name."""
        found = self._calling.get(name)
        if found is not None:
            return found
        if self._called is None and len(self._calling) >= _SEARCHED_NAMES:
            self._called = self._read_calls()
        if self._called is not None:
            found = tuple(sorted(self._called.get(name, ())))
        else:
            needle = name.encode()
            pattern = re.compile(re.escape(needle) + rb"\s*\(")
            found = tuple(path for path in self.paths if _calls(self._contents[path] or b"", needle, pattern))
        self._calling[name] = found
        return found

    def mentioning(self, name: str) -> tuple[str, ...]:
        """Files where ``name`` is written as a whole word, in code, strings or comments;
        searched one name at a time, as ``calling``, then from one index of every word."""
        found = self._mentioning.get(name)
        if found is not None:
            return found
        if self._words is None and len(self._mentioning) >= _SEARCHED_NAMES:
            self._words = defaultdict(set)
            for path in self.paths:
                for word in set(_WORD.findall(self._contents[path] or b"")):
                    self._words[word.decode("ascii", "replace")].add(path)
        if self._words is not None:
            found = tuple(sorted(self._words.get(name, ())))
        else:
            needle = name.encode()
            pattern = re.compile(rb"(?<!\w)" + re.escape(needle) + rb"(?!\w)")
            found = tuple(path for path in self.paths if needle in (self._contents[path] or b"")
                          and pattern.search(self._contents[path] or b""))
        self._mentioning[name] = found
        return found

    def mentions(self, path: str, name: str) -> list[tuple[bytes, bytes]]:
        """(text before, text after) on the line of each whole-word ``name`` in ``path``'s
        code. A word of a comment, a docstring, a message or an ``__all__`` list is prose and
        left out; a string that is the name and nothing else (a registry's ``"Model"``) is not."""
        cached = self._mentions.get((path, name))
        if cached is not None:
            return cached
        data = self._contents.get(path) or b""
        pattern = re.compile(rb"(?<!\w)" + re.escape(name.encode()) + rb"(?!\w)")
        found = self._mentions[(path, name)] = []
        for match in pattern.finditer(data):
            if self._in_prose(path, data, match.start(), match.end()):
                continue
            start = data.rfind(b"\n", 0, match.start()) + 1
            end = data.find(b"\n", match.end())
            found.append((data[start:match.start()], data[match.end():end if end >= 0 else len(data)]))
        return found

    def call_arguments(self, path: str, name: str, lines: tuple[int, int]) -> list[list[bytes]] | None:
        """The arguments, as written, of each call ``name(...)`` (``obj.name(...)`` too) in
        the code of ``path`` between ``lines`` (first, last, 1-based): one list per call, each
        argument stripped. None where one call's arguments cannot be read to their end."""
        data = self._contents.get(path) or b""
        first, last = self._span(path, lines)
        found: list[list[bytes]] = []
        for match in re.finditer(rb"(?<!\w)" + re.escape(name.encode()) + rb"\s*\(", data[first:last]):
            start = first + match.start()
            if self._in_prose(path, data, start, start + len(name)):
                continue
            arguments = _arguments(data, first + match.end())
            if arguments is None:
                return None
            found.append(arguments)
        return found

    def content(self, path: str) -> bytes:
        """The whole text of ``path`` (empty where the file could not be read)."""
        return self._contents.get(path) or b""

    def lines_text(self, path: str, lines: tuple[int, int]) -> bytes:
        """The text of ``path`` from line ``lines[0]`` to line ``lines[1]`` (1-based, inclusive)."""
        first, last = self._span(path, lines)
        return (self._contents.get(path) or b"")[first:last]

    def _span(self, path: str, lines: tuple[int, int]) -> tuple[int, int]:
        data = self._contents.get(path) or b""
        starts = self._line_starts.get(path)
        if starts is None:
            starts = self._line_starts[path] = [0] + [match.end() for match in re.finditer(rb"\n", data)]
        first = starts[lines[0] - 1] if lines[0] - 1 < len(starts) else len(data)
        return first, starts[lines[1]] if lines[1] < len(starts) else len(data)

    def _in_prose(self, path: str, data: bytes, start: int, end: int) -> bool:
        if path not in self._prose:
            self._prose[path] = _prose_spans(data)
        # A string that is the name and nothing else names a class a registry may load.
        return any(first <= start and end <= last and not (string and (start, end) == (first, last))
                   for first, last, string in self._prose[path])

    def _read_calls(self) -> dict[str, set[str]]:
        called: dict[str, set[str]] = defaultdict(set)
        for path in self.paths:
            for name in set(_CALL.findall(self._contents[path] or b"")):
                called[name.decode("ascii", "replace")].add(path)
        return dict(called)

    def host_fields(self, markers: tuple[str, ...]) -> frozenset[str]:
        """Fields some file declares host-side and none declares otherwise with the same
        callee (``source.field_declarations``): the files that write a marker's keyword
        are read first, then those that call one of the callees they mark."""
        keywords = [marker.partition("=")[0].strip().encode() for marker in markers]
        if not keywords:
            return frozenset()
        marked = frozenset(
            d.callee for path in self.paths if any(k in (self._contents[path] or b"") for k in keywords)
            for d in field_declarations(self._text(path), markers) if d.on_host
        )
        needles = [f"{callee}(".encode() for callee in marked]
        return host_fields(
            d for path in self.paths if any(n in (self._contents[path] or b"") for n in needles)
            for d in field_declarations(self._text(path), markers, marked)
        )

    def tensor_field_files(self) -> dict[str, frozenset[str]]:
        """Name -> the files with an indented annotation of it that names a tensor
        (``    prompt_lens: torch.Tensor``): every file that may declare a dataclass field
        ``name`` holding tensors, read in one pass over the text, without a parse."""
        if self._tensor_fields is None:
            found: dict[str, set[str]] = defaultdict(set)
            for path in self.paths:
                data = self._contents[path] or b""
                if b"Tensor" in data and (b"dataclass" in data or b"NamedTuple" in data):
                    for name in _TENSOR_FIELD.findall(data):
                        found[name.decode("ascii", "replace")].add(path)
            self._tensor_fields = {name: frozenset(paths) for name, paths in found.items()}
        return self._tensor_fields

    def _text(self, path: str) -> str:
        return (self._contents[path] or b"").decode("utf-8", "replace")

    @classmethod
    def of(cls, contents: Iterable[tuple[str, bytes | None]]) -> RevisionTexts:
        return cls(dict(contents))


# A class-body annotation naming a tensor: ``    lens: torch.Tensor``, ``    ids: Optional[list[Tensor]] = None``.
_TENSOR_FIELD = re.compile(rb"(?m)^[ \t]+([A-Za-z_]\w*)[ \t]*:[^=\n]*\bTensor\b")


_PROSE = """
(comment) @comment
(string_content) @text
(assignment left: (identifier) @target right: [(list) (tuple)] @exports (#eq? @target "__all__"))
(augmented_assignment left: (identifier) @target right: [(list) (tuple)] @exports (#eq? @target "__all__"))
"""


def _prose_spans(data: bytes) -> list[tuple[int, int, bool]]:
    """Byte spans of the comments and export lists (``__all__ = [...]``: names a module
    exports, nothing that loads them), False, and of the text of the strings, True, of
    ``data``; an f-string's replacement fields are code and split its text."""
    found = treesitter.captures(_PROSE, treesitter.parse_bytes(data).root_node)
    return [(node.start_byte, node.end_byte, kind == "text") for kind, nodes in found.items() if kind != "target"
            for node in nodes]


_OPENING, _CLOSING, _QUOTES = frozenset(b"([{"), frozenset(b")]}"), frozenset(b"\"'")


def _arguments(data: bytes, position: int) -> list[bytes] | None:
    """The top-level arguments of a call whose ``(`` ends just before ``position``, split at
    commas outside brackets and strings, comments left out; None where the call does not close."""
    items: list[bytes] = []
    current = bytearray()
    depth, quote, index = 0, 0, position
    while index < len(data):
        byte = data[index]
        if quote:
            if byte == ord("\\"):  # a backslash escapes the next byte
                current += data[index:index + 2]
                index += 2
                continue
            quote = 0 if byte == quote else quote
        elif byte in _QUOTES:
            quote = byte
        elif byte == ord("#"):  # a comment runs to the end of the line
            end = data.find(b"\n", index)
            index = len(data) if end < 0 else end
            continue
        elif byte in _OPENING:
            depth += 1
        elif byte in _CLOSING:
            if depth == 0:
                last = bytes(current).strip()
                return items + [last] if last else items
            depth -= 1
        elif byte == ord(",") and depth == 0:
            items.append(bytes(current).strip())
            current = bytearray()
            index += 1
            continue
        current.append(byte)
        index += 1
    return None
