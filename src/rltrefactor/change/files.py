"""Writing output files without ever leaving a half-written one behind."""

from __future__ import annotations

import os
import stat
import tempfile

from ..errors import ConfigError


def write_atomic(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` in one step.

    A new file gets the mode any other new file gets (0666 less the umask); an existing
    one keeps its mode. The temporary file never outlives a failed write. A symbolic
    link is followed, never replaced; a device or pipe (``/dev/null``, ``/dev/stdout``)
    is written to as it is, since only a regular file can be replaced.
    """
    if os.path.isdir(path):
        raise ConfigError(f"{path}: cannot write: is a directory; give a file name, e.g. {os.path.join(path, 'report.txt')}")
    target = os.path.realpath(path)  # messages name the path as given
    if os.path.exists(target) and not stat.S_ISREG(os.stat(target).st_mode):
        _write_in_place(path, text)
        return
    directory = os.path.dirname(target)
    try:
        fd, temp = tempfile.mkstemp(prefix=".rltrefactor-", dir=directory)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror}; check the directory exists and is writable") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(temp, _mode_for(target))
        os.replace(temp, target)
    except OSError as exc:
        _discard(temp)
        raise ConfigError(f"{path}: cannot write: {exc.strerror}; check the path is a writable file") from None
    except BaseException:
        _discard(temp)
        raise


def _write_in_place(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror}; check the path is writable") from None


def _mode_for(path: str) -> int:
    if os.path.exists(path):
        return os.stat(path).st_mode & 0o7777
    umask = os.umask(0)  # reading the umask means setting it; put it straight back
    os.umask(umask)
    return 0o666 & ~umask


def _discard(temp: str) -> None:
    if os.path.exists(temp):
        os.unlink(temp)
