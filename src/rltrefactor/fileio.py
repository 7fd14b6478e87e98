"""Writing output files without ever leaving a half-written one behind."""

from __future__ import annotations

import os
import tempfile

from .errors import ConfigError


def write_atomic(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, temp = tempfile.mkstemp(prefix=".rltrefactor-", dir=directory)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror}; check the directory exists and is writable") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if os.path.exists(path):
            os.chmod(temp, os.stat(path).st_mode & 0o7777)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
