"""The bundled rule library, compiled once per installed version.

Loading the library reads YAML, checks every rule and compiles every matcher (LibCST
parses each code pattern). What the engine needs before any file is parsed is only
each matcher's prefilter and reach, so those are saved with the checked library,
beside the package's bytecode (or in the user cache when the package directory is
read-only), and a review starts from them: a matcher is compiled the first time one of
its tokens selects code, and a review that parses no region never imports LibCST.

Invariant: a saved index is keyed by the tool's code, the Python version and the bytes
of every bundled rule file, and is only written after a load whose checks all passed,
so reading it stands for that load. Repository-local rule directories are always
loaded and compiled afresh.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import pickle
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from .. import code_stamp
from ..config import default_cache_dir
from ..library.location import bundled_rules_dir
from ..library.model import Library, Rule
from .prefilter import Prefilter
from .regions.reach import MatcherReach

if TYPE_CHECKING:
    from .matchers.base import FileContext, Match, Matcher

_FORMAT = "1"
_PREFIX = "library-index."


@dataclass(frozen=True)
class FunctionRef:
    """A module-level function named by module and name, imported on its first call
    (a companion function lives in a matcher module, which imports LibCST)."""

    module: str
    name: str

    def __call__(self, text: str) -> Iterable[str]:
        function: Callable[[str], Iterable[str]] = getattr(importlib.import_module(self.module), self.name)
        return function(text)


@dataclass(frozen=True)
class MatcherSummary:
    """What planning reads of a matcher: its tokens and how far around them it reads."""

    prefilter: Prefilter
    reach: MatcherReach


class DeferredMatcher:
    """A matcher known by its summary, compiled the first time it is asked to match."""

    def __init__(self, rule: Rule, summary: MatcherSummary, build: Callable[[Rule], "Matcher"]) -> None:
        self.rule_id = rule.id
        self.prefilter = summary.prefilter
        self.reach = summary.reach
        self._rule = rule
        self._build = build
        self._matcher: Matcher | None = None

    def find(self, ctx: "FileContext") -> Iterable["Match"]:
        if self._matcher is None:
            self._matcher = self._build(self._rule)
        return self._matcher.find(ctx)


def build_matcher(rule: Rule) -> "Matcher":
    """``matchers.registry.build_matcher``, imported on first use (it imports LibCST)."""
    from .matchers.registry import build_matcher as build

    return build(rule)


def load_rules(extra_dirs: Iterable[str] = ()) -> tuple[Library, dict[str, "Matcher"]]:
    """The checked library and a matcher for each automated rule (deferred where the
    bundled index has it)."""
    extra = tuple(extra_dirs)
    if extra:
        return _compile(_checked_library(extra))
    key = _key()
    for directory in _index_dirs():
        saved = _read(directory / f"{_PREFIX}{key}.pickle")
        if saved is not None:
            library, summaries = saved
            matchers: dict[str, Matcher] = {
                rule.id: DeferredMatcher(rule, summaries[rule.id], build_matcher)
                for rule in library.rules if rule.automated and rule.id in summaries
            }
            return library, matchers
    library, built = _compile(_checked_library(()))
    fresh = _summaries(built)
    if fresh is not None:
        _write(key, (library, fresh))
    return library, built


def _checked_library(extra_dirs: tuple[str, ...]) -> Library:
    # Imported here: YAML is read only when no saved index serves.
    from ..library.loader import load_library
    from .matchers.registry import check_matcher

    return load_library(extra_dirs, check_rule=check_matcher)


def _compile(library: Library) -> tuple[Library, dict[str, "Matcher"]]:
    return library, {rule.id: build_matcher(rule) for rule in library.rules if rule.automated}


def _summaries(matchers: Mapping[str, "Matcher"]) -> dict[str, MatcherSummary] | None:
    """Each matcher's summary, its companions named by reference; None when one cannot
    be saved (a companion that is not a module-level function)."""
    summaries = {}
    for rule_id, matcher in matchers.items():
        reach = matcher.reach
        if reach.companions is not None:
            ref = _function_ref(reach.companions)
            if ref is None:
                return None
            reach = replace(reach, companions=ref)
        summaries[rule_id] = MatcherSummary(tuple(matcher.prefilter), reach)
    try:
        pickle.dumps(summaries)
    except Exception:  # a token of a kind pickle cannot save: compile every time
        return None
    return summaries


def _function_ref(function: Callable[[str], Iterable[str]]) -> FunctionRef | None:
    module, name = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
    if not module or not name or "." in name or "<" in name:
        return None
    return FunctionRef(module, name)


def _key() -> str:
    digest = hashlib.sha256(f"{_FORMAT}\0{code_stamp()}\0{sys.version}".encode())
    rules = bundled_rules_dir()
    for path in sorted(rules.iterdir()):
        if path.suffix in (".yaml", ".yml"):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def _index_dirs() -> list[Path]:
    return [Path(__file__).resolve().parent / "__pycache__", Path(default_cache_dir()) / "compiled"]


def _read(path: Path) -> tuple[Library, dict[str, MatcherSummary]] | None:
    try:
        with open(path, "rb") as handle:
            data: Any = pickle.load(handle)
    except Exception:  # missing, unreadable or from an incompatible build: load afresh
        return None
    if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], Library) and isinstance(data[1], dict)):
        return None
    return data[0], data[1]


def _write(key: str, data: tuple[Library, dict[str, MatcherSummary]]) -> None:
    """Save the index in the first directory that takes it, replacing older ones there;
    an index that cannot be saved only costs speed."""
    payload = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    for directory in _index_dirs():
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".rltrefactor-", dir=directory)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(payload)
                os.replace(temp, directory / f"{_PREFIX}{key}.pickle")
            except BaseException:
                os.unlink(temp)
                raise
        except OSError:
            continue
        for old in directory.glob(f"{_PREFIX}*.pickle"):
            if old.name != f"{_PREFIX}{key}.pickle":
                try:
                    old.unlink()
                except OSError:
                    pass
        return
