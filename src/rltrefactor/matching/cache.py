"""Per-file result cache, outside the reviewed repository.

An entry is keyed by the file's path and content, the rule library, the configuration
and the tool's own code, so any change to one of them is a miss. Entries are written
to a temporary file and renamed into place: concurrent runs may race to write the
same entry, never to read a half-written one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .. import code_stamp
from ..types import BaseLocation, FileError, FileOutcome, Finding, Span

_FORMAT = "2"


class ResultCache:
    def __init__(self, directory: str, context: str) -> None:
        """``context`` identifies the library and configuration (any stable string)."""
        self.directory = Path(directory) / f"v{_FORMAT}"
        self._context = hashlib.sha256(f"{code_stamp()}\0{context}".encode()).hexdigest()

    def _entry(self, path: str, text: str, salt: str) -> Path:
        """``salt``: what else the outcome depends on (what the call index tells the file)."""
        key = hashlib.sha256(f"{self._context}\0{path}\0{salt}\0{text}".encode("utf-8", "surrogatepass"))
        digest = key.hexdigest()
        return self.directory / digest[:2] / f"{digest}.json"

    def get(self, path: str, text: str, salt: str = "") -> FileOutcome | None:
        try:
            with open(self._entry(path, text, salt), encoding="utf-8") as handle:
                return _decode(json.load(handle))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or unreadable: recompute

    def put(self, path: str, text: str, outcome: FileOutcome, salt: str = "") -> None:
        entry = self._entry(path, text, salt)
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(asdict(outcome), handle)
            os.replace(temp, entry)
        except OSError:
            return  # a cache that cannot be written only costs speed


def _decode(data: dict[str, Any]) -> FileOutcome:  # a JSON document, checked by the record types
    findings = tuple(
        Finding(**{**item, "span": Span(**item["span"]), "perf": None, "also_at": tuple(item.get("also_at", ())),
                   "also_rules": tuple(item.get("also_rules", ())), "notes": tuple(item.get("notes", ())),
                   "moved_from": BaseLocation(**item["moved_from"]) if item.get("moved_from") else None})
        for item in data["findings"]
    )
    errors = tuple(FileError(**item) for item in data["errors"])
    modules_read = tuple((str(path), str(digest)) for path, digest in data.get("modules_read", ()))
    return FileOutcome(data["path"], findings, errors, data["parsed_lines"], modules_read)
