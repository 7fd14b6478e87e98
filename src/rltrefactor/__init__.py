"""rltrefactor: refactor review for PyTorch inference-engine code."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

__version__ = "0.1.0"


@lru_cache(maxsize=1)
def code_stamp() -> str:
    """Changes whenever the installed tool's code does (version, sizes, mtimes): every
    cache the tool keeps (results, the call index, test maps) is keyed by it."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()
