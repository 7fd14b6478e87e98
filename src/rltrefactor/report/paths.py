"""How a report writes a file name: as it is, unless it is not valid UTF-8.

git allows any bytes in a file name. The change stage decodes names as UTF-8 with
``surrogateescape``, so each byte that is not UTF-8 becomes a lone surrogate
(U+DC80..U+DCFF) and the name still reads its blob. No report may carry such a
character: it has no UTF-8 encoding. A name with one is written as git quotes names with
``core.quotePath=true`` (``"caf\\351.py"``: C-style escapes of its bytes, in double
quotes); every valid UTF-8 name, ``café.py`` included, is written as it is.
"""

from __future__ import annotations

# git's quote_c_style: these bytes get a letter escape, every other control byte, DEL
# and every byte from 0x80 an octal one.
_C_ESCAPES = {0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f", 0x0D: "\\r",
              0x22: '\\"', 0x5C: "\\\\"}


def name_bytes(path: str) -> bytes:
    """The bytes of the file name ``path`` was decoded from."""
    try:
        return path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no decoding of bytes makes: keep its code point
        return path.encode("utf-8", "surrogatepass")


def quote_path(path: str) -> str:
    """``path`` as every report writes a file name: unchanged when it is valid UTF-8,
    otherwise quoted as ``git -c core.quotePath=true`` quotes it."""
    if _is_utf8(path):
        return path
    return '"' + "".join(_quoted_byte(byte) for byte in name_bytes(path)) + '"'


def escape_undecodable(text: str) -> str:
    """``text`` with each byte of it that is not UTF-8 written as git writes it (``\\351``).

    For free text that may name a file among other words (a message, evidence, a whole
    rendered report): no quotes can mark where such a name ends, so only the bytes that
    cannot be written are escaped, and the result is always valid UTF-8.
    """
    if _is_utf8(text):
        return text
    return "".join(_octal(name_bytes(char)) if _is_surrogate(char) else char for char in text)


def escape_document(value: object) -> object:
    """A JSON-ready value with ``escape_undecodable`` applied to every string in it,
    keys included; lists, tuples and dicts are copied, every other value kept."""
    if isinstance(value, str):
        return escape_undecodable(value)
    if isinstance(value, dict):
        return {escape_document(key): escape_document(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [escape_document(item) for item in value]
    return value


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_surrogate(char: str) -> bool:
    return 0xD800 <= ord(char) <= 0xDFFF


def _quoted_byte(byte: int) -> str:
    if byte in _C_ESCAPES:
        return _C_ESCAPES[byte]
    return _octal(bytes([byte])) if byte < 0x20 or byte >= 0x7F else chr(byte)


def _octal(data: bytes) -> str:
    return "".join(f"\\{byte:03o}" for byte in data)
