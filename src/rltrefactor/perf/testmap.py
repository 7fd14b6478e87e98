"""Which tests reach the functions a change touched: traced at the head, cached by blob.

The tests the PYTEST ARGS collect are run once, each under the call tracer, in one
process at the head revision (``testrun --map``); a test is selected when it called a
touched function (or code nested in it). The map is stored under the tool's cache
directory, keyed by the blob of every Python file of the head (tests and sources alike),
the pytest configuration files, the touched functions, the PYTEST ARGS, the runner's
stubs and kept environment, and the tool's own code: any edit to one of them traces
again, a rerun on the same tree does not.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .. import code_stamp
from ..context.calls.index import list_blobs
from ..errors import GitError
from ..types import ChangeSet
from .coverage import Touched, covered_by_trace
from .environment import RunnerSetup
from .sides import SideError, run_tests_side

_FORMAT = "1"
# Files that change what pytest collects or how, beside the Python files.
_PYTEST_CONFIG = ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini")


@dataclass(frozen=True)
class TestMap:
    """Selected tests -> the touched ``path::qualname`` entries each reached."""

    __test__ = False  # not a pytest test class, whatever collects this module

    tests: Mapping[str, tuple[str, ...]]
    errors: tuple[SideError, ...] = ()  # the tracing run failed, hung or crashed
    traced: bool = True  # False: read from the cache


def trace_tests(change: ChangeSet, head_root: str, touched: Touched, pytest_args: list[str], *,
                timeout: float, memory_mb: int, cache_dir: str | None,
                cancel: threading.Event | None = None, setup: RunnerSetup = RunnerSetup()) -> TestMap:
    """The tests reaching ``touched``, from the cache when the same tree was traced before."""
    if not touched:
        return TestMap({}, traced=False)
    entry = _entry(cache_dir, _key(change, head_root, touched, pytest_args, setup)) if cache_dir else None
    known = _read(entry) if entry is not None else None
    if known is not None:
        return TestMap(known, traced=False)
    entries = [f"{path}::{name}" for path, names in sorted(touched.items()) for name in sorted(names)]
    extra = ["--map", *(f"--touched={entry}" for entry in entries)]
    side = run_tests_side(head_root, extra, pytest_args, tests=None, timeout=timeout, cancel=cancel,
                          memory_mb=memory_mb, setup=setup)
    tests = {name: tuple(hits) for name, result in sorted(side.results.items())
             if (hits := covered_by_trace(result.coverage, touched))}
    if entry is not None and not side.errors:
        _write(entry, tests)  # a partial run (crash, time-out) is never stored
    return TestMap(tests, tuple(side.errors))


def _key(change: ChangeSet, head_root: str, touched: Touched, pytest_args: list[str], setup: RunnerSetup) -> str:
    try:
        blobs = list_blobs(change.repo_root or head_root, change.head.kind, change.head.ref)
    except GitError:
        blobs = {}
    configs = {}
    for name in _PYTEST_CONFIG:
        try:
            configs[name] = hashlib.sha256(Path(head_root, name).read_bytes()).hexdigest()
        except OSError:
            continue
    parts = (code_stamp(), sorted(blobs.items()), sorted(configs.items()),
             sorted((path, sorted(names)) for path, names in touched.items()), pytest_args,
             [list(setup.stubs), list(setup.keep_env)])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _entry(cache_dir: str, key: str) -> Path:
    return Path(cache_dir) / f"perf-tests-v{_FORMAT}" / key[:2] / f"{key}.json"


def _read(entry: Path) -> dict[str, tuple[str, ...]] | None:
    try:
        with open(entry, encoding="utf-8") as handle:
            data = json.load(handle)
        return {str(name): tuple(str(hit) for hit in hits) for name, hits in data["tests"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing or unreadable: trace again


def _write(entry: Path, tests: Mapping[str, tuple[str, ...]]) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"tests": {name: list(hits) for name, hits in tests.items()}}, handle)
        os.replace(temp, entry)
    except OSError:
        return  # a cache that cannot be written only costs speed
