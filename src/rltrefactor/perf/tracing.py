"""Which repository functions a micro-check body runs: traced, not guessed.

``sys.settrace`` sees every Python call (returning no local tracer, so no line events
are paid for); the functions whose code lies in the repository are recorded as (repo-relative path, ``co_qualname``), the same qualified
names that ``rltrefactor.source.syntax.definitions`` gives (``A.f.<locals>.g``).
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Iterator

from .attribution import RepoFrames


@contextmanager
def tracing(frames: RepoFrames) -> Iterator[set[tuple[str, str]]]:
    """Yield the set that fills with (path, qualname) of repo functions called inside."""
    seen_codes: set[CodeType] = set()

    def trace(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            seen_codes.add(frame.f_code)
        return None

    called: set[tuple[str, str]] = set()
    previous = sys.gettrace()
    sys.settrace(trace)
    threading.settrace(trace)  # worker threads started by the body
    try:
        yield called
    finally:
        sys.settrace(previous)
        threading.settrace(None)
        for code in seen_codes:
            path = frames.relpath(code)
            if path is not None:
                called.add((path, getattr(code, "co_qualname", code.co_name)))
